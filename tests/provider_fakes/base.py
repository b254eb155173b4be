"""The loopback server every provider fake shares, and the provider-neutral turn and answer.

A fake decodes the provider's own request into a :class:`Turn` (after checking it against the
provider's documented rules), asks a script for an :class:`Answer` and encodes that in the
provider's own response format. A refused request gets the provider's error shape and status,
and is kept in ``refusals`` so a test can say which rule refused it. Test doubles: they check
the wire, never a model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable

from testkit.loopback import LoopbackServer


class Refused(Exception):
    """A request the provider documents as invalid: ``rule`` names the fake's rule."""

    def __init__(self, rule: str, message: str, status: int = 400):
        super().__init__(message)
        self.rule = rule
        self.message = message
        self.status = status


@dataclass
class Turn:
    """What a request asked for, whatever the provider: OpenAI-style messages (``tool_calls``
    with dict arguments), the tool names, and the JSON schema of a schema-constrained answer."""

    model: str
    system: str
    messages: list[dict[str, Any]]
    tools: list[str]
    schema: dict[str, Any] | None
    raw: dict[str, Any]


@dataclass
class Answer:
    """A scripted answer. ``text`` and ``calls`` ((name, arguments) pairs) make an ordinary turn;
    ``special`` asks the encoder for a provider behaviour: ``malformed_call`` (Gemini's
    MALFORMED_FUNCTION_CALL), ``blocked`` (a safety block with no candidate / a refusal),
    ``cut_in_call`` (the token limit inside a tool call), ``rate_limited`` (429 with a retry
    hint of ``retry_s``), ``overloaded`` (Anthropic 529, Gemini 503)."""

    text: str | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    thought: str | None = None
    special: str | None = None
    retry_s: float = 0.0


Script = Callable[[Turn], Answer]


class FakeProvider(LoopbackServer):
    """One provider's fake on 127.0.0.1 (a ``testkit.loopback.LoopbackServer``); a context manager. Subclasses implement ``route``
    (is this path ours), ``decode`` (raise :class:`Refused` or return a Turn), ``encode``
    (status, headers, body) and ``error_body``."""

    name = "fake"

    def __init__(self, script: Script):
        self.script = script
        self.refusals: list[Refused] = []
        self.turns: list[Turn] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, headers, body = fake.handle(self.path, dict(self.headers.items()), raw)
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args) -> None:  # quiet
                pass

        super().__init__(Handler)  # requests, lock, url; serving from here on

    @property
    def api_base(self) -> str:
        """What litellm's ``api_base`` must be for this provider."""
        return self.url

    def handle(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict, Any]:
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return 400, {}, self.error_body(Refused("json", "request body is not JSON"))
        with self.lock:
            self.requests.append({"path": path, "headers": headers, "body": body})
        try:
            if not self.route(path):
                raise Refused("path", f"unknown path {path}", 404)
            turn = self.decode(path, {k.lower(): v for k, v in headers.items()}, body)
        except Refused as refused:
            with self.lock:
                self.refusals.append(refused)
            return refused.status, {}, self.error_body(refused)
        with self.lock:
            self.turns.append(turn)
        return self.encode(turn, self.script(turn))

    def route(self, path: str) -> bool:
        raise NotImplementedError

    def decode(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Turn:
        raise NotImplementedError

    def encode(self, turn: Turn, answer: Answer) -> tuple[int, dict, Any]:
        raise NotImplementedError

    def error_body(self, refused: Refused) -> Any:
        raise NotImplementedError

def first(mapping: dict[str, Any], *names: str, default: Any = None) -> Any:
    """The value of the first of ``names`` present: providers' JSON takes camelCase and
    snake_case alike (proto3's JSON mapping), and litellm sends either."""
    for name in names:
        if name in mapping:
            return mapping[name]
    return default
