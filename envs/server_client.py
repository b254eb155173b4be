"""The runtime's side of the env-server protocol: start servers, talk to them, survive their death.

* :class:`EnvServer` — one server subprocess (any interpreter: a benchmark's own venv, later a
  ``docker run -i``). It is health-checked on start (``hello`` within ``start_timeout``), answers
  the server's ``agent_turn``/``user_turn`` callbacks with the runtime's callables, and turns a
  dead server (EOF) or a silent one (no message within ``reply_timeout``) into an
  :class:`EnvServerError` that names the cause — the graph then records an errored episode
  instead of hanging. Time the runtime spends answering a callback does not count as silence.
* :class:`ServerPool` — one server process per concurrent episode. Benchmarks like ToolSandbox
  keep their world state in process globals, so a server plays one episode at a time; the pool
  hands each runner thread its own server (up to ``max_size``, then threads wait) and throws
  away any server that crashed or hung.
* :class:`RemoteEnvironment` — an ``envs.base.Environment`` whose methods run on pooled servers.

Servers are shut down cleanly (``shutdown`` op, then terminate, then kill) on ``close()`` and
at interpreter exit.
"""

from __future__ import annotations

import atexit
import collections
import os
import queue
import subprocess
import threading
import weakref
from pathlib import Path
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

from pydantic import BaseModel, ValidationError

from envs import protocol as p
from envs.base import (
    AgentTurn,
    Embed,
    EnvError,
    Score,
    Supervision,
    TaskSelection,
    TaskView,
    JudgeTurn,
    Trajectory,
    TurnRefused,
    UnknownTaskError,
    UserTurn,
)


class EnvServerError(EnvError):
    """The env server failed mid-request (crashed, hung, or broke the protocol)."""


class ServerCrashed(EnvServerError):
    pass


class ServerTimeout(EnvServerError):
    pass


class RemoteError(EnvServerError):
    """The server answered with an error of its own (``env_error`` / ``internal``)."""


class EnvUnavailableError(EnvError):
    """The environment cannot be used at all: not set up, or its server does not start.
    Like every ``EnvError`` that reaches a command, the CLI reports it in one line (exit 2)."""


@dataclass
class ServerCommand:
    """How to start one server: argv, extra environment variables, working directory."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: Optional[str] = None
    inherit_secrets: bool = False

    def environment(self) -> dict[str, str]:
        base = dict(os.environ)
        if not self.inherit_secrets:
            # An env server never calls a model; keys and tokens stay in the runtime.
            base = {k: v for k, v in base.items()
                    if not any(s in k.upper() for s in ("API_KEY", "TOKEN", "SECRET", "PASSWORD"))}
        return {**base, "PYTHONUNBUFFERED": "1", **self.env}


_EOF = object()


class EnvServer:
    """One server subprocess speaking the protocol on its stdin/stdout. Not thread-safe by
    itself: one request at a time (the pool guarantees it)."""

    def __init__(self, command: ServerCommand, start_timeout: float = 120.0,
                 reply_timeout: float = 600.0, stderr_lines: int = 200):
        self.command = command
        self.start_timeout = start_timeout
        self.reply_timeout = reply_timeout
        self.hello: Optional[p.HelloResult] = None
        self._proc: Optional[subprocess.Popen] = None
        self._lines: "queue.Queue[Any]" = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=stderr_lines)
        self._next_id = 0
        self._broken: Optional[str] = None
        self.in_flight: Optional[str] = None  # the op of a request still open (interrupted)

    # -- lifecycle ---------------------------------------------------------------------------

    def _spawn(self) -> Any:
        """The server's process: anything with ``stdin``/``stdout``/``stderr``/``poll``/``wait``/
        ``terminate``/``kill`` like a ``Popen``. Launchers (containers) override this alone."""
        try:
            return subprocess.Popen(
                self.command.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, cwd=self.command.cwd, env=self.command.environment(),
            )
        except OSError as exc:
            raise EnvUnavailableError(
                f"cannot start the {self.command.name} env server: "
                f"{self.command.argv[0]}: {exc.strerror or exc}"
            ) from exc

    def start(self) -> p.HelloResult:
        """Start the process and wait for a good ``hello``; raises ``EnvUnavailableError``."""
        name = self.command.name
        self._proc = self._spawn()
        threading.Thread(target=self._read_stdout, daemon=True, name=f"{name}-stdout").start()
        threading.Thread(target=self._read_stderr, daemon=True, name=f"{name}-stderr").start()
        try:
            result = self.request("hello", p.HelloArgs(), timeout=self.start_timeout)
        except (EnvServerError, p.ProtocolError, OSError) as exc:
            self.kill()
            raise EnvUnavailableError(f"the {name} env server did not start: {exc}") from exc
        self.hello = p.HelloResult.model_validate(result)
        return self.hello

    @property
    def alive(self) -> bool:
        """Running, and not stuck in a request that was interrupted half-way."""
        return (self._proc is not None and self._proc.poll() is None and self._broken is None
                and self.in_flight is None)

    @property
    def pid(self) -> Optional[int]:
        return self._proc.pid if self._proc else None

    def health(self, timeout: float = 10.0) -> bool:
        if not self.alive:
            return False
        try:
            return bool(self.request("health", p.Empty(), timeout=timeout).get("ok"))
        except EnvServerError:
            return False

    def close(self, timeout: float = 5.0) -> None:
        """Ask politely (``shutdown``), then terminate, then kill."""
        if self._proc is None:
            return
        if self._proc.poll() is None and self._broken is None and self.in_flight is None:
            try:
                self.request("shutdown", p.Empty(), timeout=timeout)
            except EnvError:
                pass
        self.kill(grace=timeout)

    def kill(self, grace: float = 2.0) -> None:
        proc = self._proc
        if proc is None:
            return
        for stream in (proc.stdin,):
            try:
                stream.close()
            except OSError:
                pass
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def stderr_tail(self, lines: int = 5) -> str:
        tail = [line for line in list(self._stderr) if line.strip()][-lines:]
        return " | ".join(tail)

    # -- requests ----------------------------------------------------------------------------

    def request(self, op: str, args: BaseModel, *, agent: Optional[AgentTurn] = None,
                user: Optional[UserTurn] = None, judge: Optional[JudgeTurn] = None,
                embed: Optional[Embed] = None, timeout: Optional[float] = None) -> dict[str, Any]:
        """Send one request; answer callbacks until its response; return the result dict."""
        if self._broken is not None:
            raise ServerCrashed(f"the {self.command.name} env server is unusable: {self._broken}")
        self._next_id += 1
        rid = self._next_id
        self.in_flight = op
        self._send(p.Request(id=rid, op=op, args=args.model_dump(mode="json")), op)
        failure: Optional[BaseException] = None
        while True:
            message = self._receive(op, timeout or self.reply_timeout)
            if isinstance(message, p.Callback):
                reply, exc = self._answer(message, agent, user, judge, embed)
                failure = failure or exc
                self._send(reply, op)
                continue
            if isinstance(message, p.Response) and message.id in (rid, -1):
                self.in_flight = None
                if message.error is None:
                    return message.result or {}
                if message.error.type == "callback_failed" and failure is not None:
                    raise failure  # the runtime's own error (a model error, ...), unchanged
                raise self._remote_error(op, message.error)
            self._broken = f"unexpected {message.kind} during {op}"
            self.kill()
            raise p.ProtocolError(f"the {self.command.name} env server sent an unexpected "
                                  f"{message.kind} during {op}")

    def _answer(self, callback: p.Callback, agent: Optional[AgentTurn], user: Optional[UserTurn],
                judge: Optional[JudgeTurn] = None,
                embed: Optional[Embed] = None) -> tuple[p.CallbackReply, Optional[BaseException]]:
        try:
            args = p.CALLBACK_ARGS[callback.name].model_validate(callback.args)
            if callback.name == "embed_turn":
                if embed is None:
                    raise EnvError("the server asked for embeddings but the runtime has no endpoint for them")
                vectors = embed(args.model, args.texts)
                return p.CallbackReply(id=callback.id, result=p.EmbedResult(vectors=vectors).model_dump()), None
            if callback.name == "judge_turn":
                if judge is None:
                    raise EnvError("the server asked for a judge turn but no judge was given")
                message = judge(args.model, args.messages, args.options)
            elif callback.name == "agent_turn":
                if agent is None:
                    raise EnvError("the server asked for an agent turn outside play")
                message = agent(args.messages, args.tools)
            else:
                if user is None:
                    raise EnvError("the server asked for a user turn but no user was given")
                message = user(args.system_prompt, args.messages, args.tools)
            result = p.TurnResult(message=message).model_dump(mode="json")
            return p.CallbackReply(id=callback.id, result=result), None
        except TurnRefused as exc:  # the episode's limit: the server ends the play there
            return p.CallbackReply(id=callback.id, error=p.ErrorInfo(type="turn_refused",
                                                                      message=exc.termination)), None
        except Exception as exc:  # noqa: BLE001 - reported to the server, re-raised after
            info = p.ErrorInfo(type="callback_failed", message=f"{type(exc).__name__}: {exc}"[:2000])
            return p.CallbackReply(id=callback.id, error=info), exc

    def _remote_error(self, op: str, error: p.ErrorInfo) -> Exception:
        text = f"{self.command.name} {op}: {error.message}"
        if error.type == "unknown_task":
            return UnknownTaskError(error.message)
        if error.type == "startup_failed":
            last = (error.traceback or "").strip().splitlines()[-1:] or [""]
            detail = error.message if error.message in last[0] else f"{error.message} ({last[0]})"
            return RemoteError(f"startup failed: {detail}")
        if error.type == "internal" and error.traceback:
            return RemoteError(f"{text}\n{error.traceback.strip()}")
        return RemoteError(text)

    def _send(self, message: p.Message, op: str) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(p.encode(message).encode("utf-8"))
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise self._crashed(op) from None

    def _receive(self, op: str, timeout: float) -> p.Message:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self._broken = f"no answer to {op} within {timeout:g} s"
            self.kill(grace=1.0)
            tail = self.stderr_tail()
            raise ServerTimeout(
                f"the {self.command.name} env server did not answer {op} within {timeout:g} s; "
                f"killed it" + (f" (stderr: {tail})" if tail else "")
            ) from None
        if line is _EOF:
            raise self._crashed(op)
        try:
            return p.decode(line)
        except p.ProtocolError as exc:
            self._broken = str(exc)
            self.kill(grace=1.0)
            raise p.ProtocolError(f"the {self.command.name} env server broke the protocol during "
                                  f"{op}: {exc}") from None

    def _crashed(self, op: str) -> ServerCrashed:
        assert self._proc is not None
        try:
            code = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        self._broken = f"exited with code {code}"
        tail = self.stderr_tail()
        when = "before answering hello" if op == "hello" else f"during {op}"
        return ServerCrashed(
            f"the {self.command.name} env server exited with code {code} {when}"
            + (f" (stderr: {tail})" if tail else "")
        )

    def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for raw in self._proc.stdout:
            self._lines.put(raw.decode("utf-8", errors="replace"))
        self._lines.put(_EOF)

    def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        for raw in self._proc.stderr:
            self._stderr.append(raw.decode("utf-8", errors="replace").rstrip())


_POOLS: "weakref.WeakSet[ServerPool]" = weakref.WeakSet()


def live_pools() -> list["ServerPool"]:
    """Every server pool of this process that has not been garbage-collected."""
    return list(_POOLS)


@atexit.register
def _close_all() -> None:
    for pool in live_pools():
        pool.close()


class ServerPool:
    """Servers for concurrent episodes: one lease = one server used by one thread."""

    def __init__(self, command: ServerCommand, max_size: int = 8, start_timeout: float = 120.0,
                 reply_timeout: float = 600.0):
        self.command = command
        self.max_size = max(1, max_size)
        self.start_timeout = start_timeout
        self.reply_timeout = reply_timeout
        self._idle: list[EnvServer] = []
        self._count = 0
        self._cond = threading.Condition()
        self._closed = False
        self.hello: Optional[p.HelloResult] = None
        _POOLS.add(self)

    @contextmanager
    def lease(self) -> Iterator[EnvServer]:
        server = self._acquire()
        try:
            yield server
        except BaseException:
            # A server that crashed, hung, or was left mid-request (Ctrl-C in a callback) is
            # not trusted again; one that answered an error cleanly goes back to the pool.
            if server.alive:
                self._release(server)
            else:
                self._discard(server)
            raise
        else:
            self._release(server)

    def _acquire(self) -> EnvServer:
        with self._cond:
            while True:
                if self._closed:
                    raise EnvError(f"the {self.command.name} server pool is closed")
                while self._idle:
                    server = self._idle.pop()
                    if server.alive:
                        return server
                    self._count -= 1
                    self._forget(server)
                if self._count < self.max_size:
                    self._count += 1
                    break
                self._cond.wait()
        server = self._new_server()
        try:
            hello = server.start()
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise
        self.hello = self.hello or hello
        return server

    def _new_server(self) -> EnvServer:
        """A server not yet started (launchers override this to make theirs)."""
        return EnvServer(self.command, self.start_timeout, self.reply_timeout)

    def _forget(self, server: EnvServer) -> None:
        """An idle server found dead, called under the pool's lock: nothing to do for a process
        (launchers that must clean up after one do it here, off the lock)."""

    def _release(self, server: EnvServer) -> None:
        with self._cond:
            if self._closed or not server.alive:
                self._count -= 1
                closing = True
            else:
                self._idle.append(server)
                closing = False
            self._cond.notify()
        if closing:
            server.close()

    def _discard(self, server: EnvServer) -> None:
        server.kill(grace=1.0)
        with self._cond:
            self._count -= 1
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._count -= len(idle)
            self._cond.notify_all()
        for server in idle:
            server.close()

    @property
    def size(self) -> int:
        return self._count


class RemoteEnvironment:
    """An ``envs.base.Environment`` served over the protocol by a pool of servers.

    Views, supervisions and task metadata are cached per task, so ``load`` crosses the process
    boundary once per task.
    """

    def __init__(self, name: str, pool: ServerPool, domains: Optional[list[str]] = None,
                 embed: Optional[Embed] = None):
        self.name = name
        self.pool = pool
        self.embed = embed
        """Answers the servers' ``embed_turn`` callbacks during any request (None: refused)."""
        self._domains = domains
        self._loaded: dict[tuple[str, str], p.LoadResult] = {}
        self._lock = threading.Lock()

    def _call(self, op: str, args: BaseModel, result: type[BaseModel], **callbacks: Any) -> Any:
        with self.pool.lease() as server:
            data = server.request(op, args, embed=self.embed, **callbacks)
        try:
            return result.model_validate(data)
        except ValidationError as exc:
            raise p.ProtocolError(f"{self.name} {op}: malformed result ({exc.error_count()} errors)") from exc

    def domains(self) -> list[str]:
        if self._domains is None:
            with self.pool.lease():
                pass
            self._domains = list(self.pool.hello.domains) if self.pool.hello else []
        return list(self._domains)

    def task_set(self, domain: str) -> dict:
        """The task set the servers play for ``domain``, as their ``hello`` named it (package,
        version, task-file digest; {} when the server names none)."""
        if self.pool.hello is None:
            with self.pool.lease():
                pass
        info = self.pool.hello.info if self.pool.hello else {}
        return dict((info.get("task_sets") or {}).get(domain) or {})

    def select(self, selection: TaskSelection) -> list[str]:
        return self._call("list_tasks", p.ListTasksArgs(selection=selection), p.ListTasksResult).task_ids

    def _load(self, domain: str, task_id: str) -> p.LoadResult:
        key = (domain, task_id)
        with self._lock:
            if key in self._loaded:
                return self._loaded[key]
        loaded = self._call("load", p.TaskArgs(domain=domain, task_id=task_id), p.LoadResult)
        with self._lock:
            self._loaded[key] = loaded
        return loaded

    def load(self, domain: str, task_id: str) -> tuple[TaskView, Supervision]:
        loaded = self._load(domain, task_id)
        return loaded.view, loaded.supervision

    def task_info(self, domain: str, task_id: str) -> dict[str, Any]:
        """Environment metadata of a task (for reports and tests, never for a model)."""
        return dict(self._load(domain, task_id).info)

    def opening_request(self, domain: str, task_id: str, user: UserTurn, seed: int) -> str:
        args = p.OpeningArgs(domain=domain, task_id=task_id, seed=seed)
        return self._call("opening_request", args, p.OpeningResult, user=user).opening_request

    def play(self, domain: str, task_id: str, opening_request: str, agent: AgentTurn,
             user: UserTurn, seed: int, max_steps: int) -> Trajectory:
        args = p.PlayArgs(domain=domain, task_id=task_id, opening_request=opening_request,
                          seed=seed, max_steps=max_steps)
        return self._call("play", args, p.PlayResult, agent=agent, user=user).trajectory

    def score(self, domain: str, task_id: str, trajectory: Trajectory,
              judge: Optional[JudgeTurn] = None) -> Score:
        """``judge``: the runtime's answer to the benchmark's LLM judge (τ³'s NL assertions);
        without it such components stay ungraded, as the server's score says."""
        args = p.ScoreArgs(domain=domain, task_id=task_id, trajectory=trajectory, judge=judge is not None)
        return self._call("score", args, p.ScoreResult, judge=judge).score

    def capture_logs(self, folder: Path, scrub: Optional[Callable[[str], str]] = None) -> None:
        """Env servers in local processes keep their stderr in memory for error messages."""

    def close(self) -> None:
        self.pool.close()

