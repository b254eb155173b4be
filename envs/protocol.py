"""The env-server protocol: an environment behind a process boundary, spoken as JSON lines.

Why: some benchmarks pin packages that cannot share an interpreter with the runtime (ToolSandbox
pins pydantic 2.7, langchain 0.1, openai 1.17). Such an environment runs as a small server in its
own virtualenv (or container) and the runtime talks to it over stdin/stdout. The protocol is
generic over environments: it carries the :class:`envs.base.Environment` methods one for one, so
any adapter (τ²-bench included) can be served unchanged with :func:`serve`.

Framing: one JSON object per line, UTF-8, each with a ``kind``:

* ``request``        client → server  ``{id, op, args}``
* ``response``       server → client  ``{id, result}`` or ``{id, error}``
* ``callback``       server → client  ``{id, name, args}`` — only while a request is open: the
  server asks the runtime for a model turn (``agent_turn`` / ``user_turn``), or, during a
  ``score`` whose request says the runtime has one, for its LLM judge's reply (``judge_turn``);
  a server started to ask for them, for embeddings during any request (``embed_turn``)
* ``callback_reply`` client → server  ``{id, result}`` or ``{id, error}``

Ops: ``hello`` (version check, starts the environment), ``health``, ``list_tasks``, ``load``,
``opening_request``, ``play``, ``score``, ``shutdown``. Each op's ``args`` and ``result`` have a
model below (``ARGS`` / ``RESULTS``). One request is open at a time per server; the client
answers callbacks until the matching response arrives. Errors are typed (:data:`ErrorType`).

This module imports only the standard library, pydantic (2.7-compatible subset) and
``envs.base``, so it runs inside a benchmark's own virtualenv.
"""

from __future__ import annotations

import importlib
import io
import json
import logging
import os
import sys
import traceback
from typing import Any, Callable, Literal, Optional, TextIO, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from envs.base import (
    ChatMessage,
    EnvError,
    Score,
    Supervision,
    TaskSelection,
    TaskView,
    ToolSchema,
    Trajectory,
    TurnRefused,
    UnknownTaskError,
)

PROTOCOL_VERSION = 1

Op = Literal["hello", "health", "list_tasks", "load", "opening_request", "play", "score", "shutdown"]
CallbackName = Literal["agent_turn", "user_turn", "judge_turn", "embed_turn"]
ErrorType = Literal[
    "bad_request",      # malformed message or args
    "unknown_task",     # a domain, split or task id the environment does not have
    "startup_failed",   # the environment could not be built (import error, missing data, ...)
    "callback_failed",  # the runtime could not answer a callback; the op was abandoned
    "turn_refused",     # the runtime refused the turn (the episode's limit): the play ends there
    "env_error",        # the environment raised one of its own EnvErrors
    "internal",         # anything else (with a traceback)
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorInfo(_Model):
    type: ErrorType
    message: str
    traceback: Optional[str] = None


class Request(_Model):
    kind: Literal["request"] = "request"
    id: int
    op: Op
    args: dict[str, Any] = Field(default_factory=dict)


class Response(_Model):
    kind: Literal["response"] = "response"
    id: int
    result: Optional[dict[str, Any]] = None
    error: Optional[ErrorInfo] = None


class Callback(_Model):
    kind: Literal["callback"] = "callback"
    id: int
    name: CallbackName
    args: dict[str, Any] = Field(default_factory=dict)


class CallbackReply(_Model):
    kind: Literal["callback_reply"] = "callback_reply"
    id: int
    result: Optional[dict[str, Any]] = None
    error: Optional[ErrorInfo] = None


Message = Union[Request, Response, Callback, CallbackReply]
_MESSAGE = TypeAdapter(Union[Request, Response, Callback, CallbackReply])


# ---- per-op payloads -------------------------------------------------------------------------

class HelloArgs(_Model):
    protocol: int = PROTOCOL_VERSION


class HelloResult(_Model):
    protocol: int
    env: str
    domains: list[str]
    pid: int
    info: dict[str, Any] = Field(default_factory=dict)


class Empty(_Model):
    pass


class HealthResult(_Model):
    ok: bool = True


class ListTasksArgs(_Model):
    selection: TaskSelection


class ListTasksResult(_Model):
    task_ids: list[str]


class TaskArgs(_Model):
    domain: str
    task_id: str


class LoadResult(_Model):
    view: TaskView
    supervision: Supervision
    info: dict[str, Any] = Field(
        default_factory=dict,
        description="Environment metadata for reports and tests (categories, tool-name map); "
        "never shown to a model.",
    )


class OpeningArgs(TaskArgs):
    seed: int = 0


class OpeningResult(_Model):
    opening_request: str


class PlayArgs(TaskArgs):
    opening_request: str
    seed: int = 0
    max_steps: int = 200


class PlayResult(_Model):
    trajectory: Trajectory


class ScoreArgs(TaskArgs):
    trajectory: Trajectory
    judge: bool = False
    """The runtime answers ``judge_turn`` callbacks during this score (a benchmark's LLM judge)."""


class ScoreResult(_Model):
    score: Score


class AgentTurnArgs(_Model):
    messages: list[ChatMessage]
    tools: list[ToolSchema]


class UserTurnArgs(_Model):
    system_prompt: str
    messages: list[ChatMessage]
    tools: Optional[list[ToolSchema]] = None


class JudgeTurnArgs(_Model):
    model: str
    messages: list[ChatMessage]
    options: dict[str, Any] = Field(default_factory=dict)


class EmbedTurnArgs(_Model):
    model: str
    texts: list[str]


class EmbedResult(_Model):
    vectors: list[list[float]]


class TurnResult(_Model):
    message: ChatMessage


ARGS: dict[str, type[_Model]] = {
    "hello": HelloArgs, "health": Empty, "list_tasks": ListTasksArgs, "load": TaskArgs,
    "opening_request": OpeningArgs, "play": PlayArgs, "score": ScoreArgs, "shutdown": Empty,
}
RESULTS: dict[str, type[_Model]] = {
    "hello": HelloResult, "health": HealthResult, "list_tasks": ListTasksResult,
    "load": LoadResult, "opening_request": OpeningResult, "play": PlayResult,
    "score": ScoreResult, "shutdown": Empty,
}
CALLBACK_ARGS: dict[str, type[_Model]] = {"agent_turn": AgentTurnArgs, "user_turn": UserTurnArgs,
                                          "judge_turn": JudgeTurnArgs, "embed_turn": EmbedTurnArgs}


# ---- framing ---------------------------------------------------------------------------------

class ProtocolError(EnvError):
    """A line that is not a valid protocol message, or a message out of turn."""


def encode(message: Message) -> str:
    """One message as one line (JSON escapes newlines inside strings, so lines never split)."""
    return json.dumps(message.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")) + "\n"


def decode(line: str) -> Message:
    try:
        return _MESSAGE.validate_json(line)
    except ValidationError as exc:
        shown = line.strip()[:200]
        raise ProtocolError(f"not a protocol message: {shown!r} ({exc.error_count()} errors)") from exc


# ---- server side -----------------------------------------------------------------------------

class CallbackFailed(Exception):
    """The runtime answered a callback with an error; the server abandons the open request."""


class ConnectionClosed(Exception):
    """The other side closed the stream."""


class ServerConnection:
    """The server's end of the pipe: sends responses/callbacks, reads requests/callback replies."""

    def __init__(self, reader: TextIO, writer: TextIO):
        self.reader = reader
        self.writer = writer
        self._next_callback = 0

    def send(self, message: Message) -> None:
        self.writer.write(encode(message))
        self.writer.flush()

    def receive(self) -> Message:
        line = self.reader.readline()
        if not line:
            raise ConnectionClosed()
        return decode(line)

    def call(self, name: str, args: _Model) -> dict[str, Any]:
        """Ask the client for a model turn and wait for its answer."""
        return TurnResult.model_validate(self.ask(name, args)).message

    def ask(self, name: str, args: _Model) -> dict[str, Any]:
        """Send one callback and wait for its reply's result."""
        self._next_callback += 1
        cid = self._next_callback
        self.send(Callback(id=cid, name=name, args=args.model_dump(mode="json")))
        reply = self.receive()
        if not isinstance(reply, CallbackReply) or reply.id != cid:
            raise ProtocolError(f"expected callback_reply {cid}, got {reply.kind} {getattr(reply, 'id', '?')}")
        if reply.error is not None:
            if reply.error.type == "turn_refused":
                raise TurnRefused(reply.error.message)
            raise CallbackFailed(f"{reply.error.type}: {reply.error.message}")
        return reply.result or {}

    def agent_turn(self, messages: list[ChatMessage], tools: list[ToolSchema]) -> ChatMessage:
        return self.call("agent_turn", AgentTurnArgs(messages=messages, tools=tools))

    def user_turn(self, system_prompt: str, messages: list[ChatMessage],
                  tools: Optional[list[ToolSchema]]) -> ChatMessage:
        return self.call("user_turn", UserTurnArgs(system_prompt=system_prompt, messages=messages, tools=tools))

    def embed_turn(self, model: str, texts: list[str]) -> list[list[float]]:
        return EmbedResult.model_validate(self.ask("embed_turn", EmbedTurnArgs(model=model, texts=texts))).vectors

    def judge_turn(self, model: str, messages: list[ChatMessage], options: dict[str, Any]) -> ChatMessage:
        return self.call("judge_turn", JudgeTurnArgs(model=model, messages=messages, options=options))


def _error(exc: BaseException, kind: Optional[str] = None) -> ErrorInfo:
    if kind is None:
        if isinstance(exc, UnknownTaskError):
            kind = "unknown_task"
        elif isinstance(exc, CallbackFailed):
            kind = "callback_failed"
        elif isinstance(exc, ValidationError):
            kind = "bad_request"
        elif isinstance(exc, EnvError):
            kind = "env_error"
        else:
            kind = "internal"
    tb = traceback.format_exc() if kind in ("internal", "startup_failed") else None
    message = str(exc) if kind != "bad_request" else " ".join(str(exc).split())[:500]
    return ErrorInfo(type=kind, message=message or type(exc).__name__, traceback=tb)


def serve(factory: Callable[[], Any], connection: ServerConnection) -> int:
    """Answer requests until ``shutdown`` or EOF. ``factory()`` builds the environment on ``hello``.

    The environment is any object with the :class:`envs.base.Environment` methods; an optional
    ``task_info(domain, task_id) -> dict`` fills ``LoadResult.info``.
    """
    env = None
    while True:
        try:
            message = connection.receive()
        except ConnectionClosed:
            return 0
        except ProtocolError as exc:
            connection.send(Response(id=-1, error=_error(exc, "bad_request")))
            continue
        if not isinstance(message, Request):
            connection.send(Response(id=-1, error=ErrorInfo(
                type="bad_request", message=f"expected a request, got {message.kind}")))
            continue
        if message.op == "shutdown":
            connection.send(Response(id=message.id, result={}))
            return 0
        if env is None and message.op != "health":
            try:
                HelloArgs.model_validate(message.args) if message.op == "hello" else None
                env = factory()
                if hasattr(env, "connect"):  # an adapter that asks for more than turns
                    env.connect(connection)
            except Exception as exc:  # noqa: BLE001 - reported to the client, then we stop
                connection.send(Response(id=message.id, error=_error(exc, "startup_failed")))
                return 3
        try:
            result = _dispatch(env, message, connection)
            connection.send(Response(id=message.id, result=result.model_dump(mode="json")))
        except (ConnectionClosed, BrokenPipeError):
            return 0
        except Exception as exc:  # noqa: BLE001 - every failure is answered, typed
            connection.send(Response(id=message.id, error=_error(exc)))


def _dispatch(env: Any, request: Request, conn: ServerConnection) -> _Model:
    args = ARGS[request.op].model_validate(request.args)
    op = request.op
    if op == "hello":
        if args.protocol != PROTOCOL_VERSION:
            raise EnvError(f"protocol version {args.protocol} requested; this server speaks {PROTOCOL_VERSION}")
        info = env.server_info() if hasattr(env, "server_info") else {}
        return HelloResult(protocol=PROTOCOL_VERSION, env=env.name, domains=list(env.domains()),
                           pid=os.getpid(), info=info)
    if op == "health":
        return HealthResult(ok=True)
    if op == "list_tasks":
        return ListTasksResult(task_ids=list(env.select(args.selection)))
    if op == "load":
        view, supervision = env.load(args.domain, args.task_id)
        info = env.task_info(args.domain, args.task_id) if hasattr(env, "task_info") else {}
        return LoadResult(view=view, supervision=supervision, info=info)
    if op == "opening_request":
        text = env.opening_request(args.domain, args.task_id, conn.user_turn, args.seed)
        return OpeningResult(opening_request=text)
    if op == "play":
        trajectory = env.play(args.domain, args.task_id, args.opening_request, conn.agent_turn,
                              conn.user_turn, args.seed, args.max_steps)
        return PlayResult(trajectory=trajectory)
    if op == "score":
        if args.judge:  # only an adapter that grades with a judge is asked with one
            return ScoreResult(score=env.score(args.domain, args.task_id, args.trajectory,
                                               judge=conn.judge_turn))
        return ScoreResult(score=env.score(args.domain, args.task_id, args.trajectory))
    raise EnvError(f"unsupported op {op!r}")  # pragma: no cover - Op is closed


def protocol_streams() -> ServerConnection:
    """Own stdout for the protocol: stray prints (from the benchmark, C libraries) go to stderr."""
    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    writer = io.TextIOWrapper(os.fdopen(out_fd, "wb"), encoding="utf-8", newline="\n")
    reader = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", newline="\n")
    return ServerConnection(reader, writer)


def main(factory: Callable[[], Any]) -> None:
    """Entry point for a server process: ``serve(factory)`` on stdin/stdout, exit with its code.

    Once served, the process ends at once (``os._exit`` after flushing), skipping the
    interpreter's teardown: for τ²'s import graph that takes seconds, long enough for a closing
    runtime to give up on a server that was done and kill it (a container's exit code 137)."""
    code = serve(factory, protocol_streams())
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    os._exit(code)


def _load_factory(spec: str) -> Callable[[], Any]:
    module, _, attr = spec.partition(":")
    if not attr:
        raise SystemExit(f"usage: python -m envs.protocol <module>:<factory>; got {spec!r}")
    return getattr(importlib.import_module(module), attr)


if __name__ == "__main__":
    # Serve any environment class: ``python -m envs.protocol envs.tau2:Tau2Environment``.
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m envs.protocol <module>:<factory>")
    main(_load_factory(sys.argv[1]))
