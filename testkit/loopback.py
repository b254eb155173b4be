"""Misbehaving HTTP endpoints on loopback, for tests of how the runtime fails.

* :class:`EchoServer` answers every request with a fixed status and a body that quotes the
  request's headers and path — as proxies and local servers do in their 401 pages — so a test
  can check that a planted key never reaches disk or the console.
* :class:`FaultProxy` forwards OpenAI-style chat requests to an upstream server (e.g. the
  gold-replaying ``bench/stub_server.py``) and injects a scheduled fault into chosen calls:
  429, 500, 400, a hang, a garbage body, HTTP 200 without choices, an empty reply, or a tool
  call whose arguments are cut off.

Both count what they saw (the proxy keeps each request's JSON body too: with no fault scheduled it
is a logging proxy, for tests of what a runner sends), so a test can assert how many calls a failure cost. Test doubles:
they prove failure handling, never a model.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

FAULTS = ("429", "500", "400", "hang", "garbage", "no_choices", "empty", "truncate_args", "reset")


class BackloggedHTTPServer(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` with a listen backlog a provider would have. The standard
    library's is 5: a runtime opening 64 connections at once overflows it, and the kernel drops
    the handshakes (``ListenOverflows`` in ``/proc/net/netstat``), so clients wait 1, 3, 7 s
    for SYN retransmits, and a connection whose last ACK was dropped can stall a request until
    its timeout. That measures the server, not the runtime."""

    request_queue_size = 1024
    daemon_threads = True


class LoopbackServer:
    """A threading HTTP server on 127.0.0.1 with a free port; use as a context manager."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self.httpd = BackloggedHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.httpd.owner = self  # type: ignore[attr-defined]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Handler(BaseHTTPRequestHandler):
    def _reply(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _read_body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def log_message(self, *args) -> None:  # quiet
        pass


class EchoServer(LoopbackServer):
    """Answers every POST with ``status`` and the request's headers and path in the error body;
    with status 200, a minimal chat completion whose text is ``ok`` (a keyless local server)."""

    def __init__(self, status: int = 401):
        self.status = status
        super().__init__(_EchoHandler)


class _EchoHandler(_Handler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self._read_body()
        owner: EchoServer = self.server.owner  # type: ignore[attr-defined]
        headers = {k: v for k, v in self.headers.items()}
        with owner.lock:
            owner.requests.append({"path": self.path, "headers": headers})
        if owner.status == 200:
            return self._reply(200, json.dumps({
                "id": "x", "object": "chat.completion", "created": 0, "model": "echo",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "ok"}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode())
        echoed = f"invalid credentials for {self.path}; request headers: " + "; ".join(
            f"{k}: {v}" for k, v in headers.items())
        self._reply(owner.status, json.dumps({"error": {"message": echoed, "type": "auth"}}).encode())


class FaultProxy(LoopbackServer):
    """Forwards to ``upstream``; ``schedule(n, body)`` names the fault for the n-th call (0-based)
    or returns None to pass it through. ``hang_s``: how long a hang lasts."""

    def __init__(self, upstream: str, schedule: Callable[[int, dict], str | None], hang_s: float = 30.0):
        self.upstream = upstream.rstrip("/")
        self.schedule = schedule
        self.hang_s = hang_s
        self.injected: list[str] = []
        super().__init__(_ProxyHandler)


class _ProxyHandler(_Handler):
    def do_POST(self) -> None:  # noqa: N802
        owner: FaultProxy = self.server.owner  # type: ignore[attr-defined]
        raw = self._read_body()
        body = json.loads(raw or b"{}")
        with owner.lock:
            n = len(owner.requests)
            owner.requests.append({"path": self.path, "headers": dict(self.headers.items()), "body": body,
                                   "raw": (raw or b"").decode("utf-8", errors="replace")})
            fault = owner.schedule(n, body)
            if fault:
                owner.injected.append(fault)
        if fault == "reset":
            self.close_connection = True
            self.connection.close()
            return
        if fault == "hang":
            time.sleep(owner.hang_s)
            return self._reply(504, b'{"error": {"message": "hung"}}')
        if fault in ("429", "500", "400"):
            return self._reply(int(fault), json.dumps({"error": {"message": f"injected {fault}"}}).encode())
        if fault == "garbage":
            return self._reply(200, b"<html>\x00 not json", "application/json")
        if fault == "no_choices":
            return self._reply(200, json.dumps({"id": "x", "object": "chat.completion", "created": 0,
                                                "model": body.get("model", ""), "choices": []}).encode())
        request = urllib.request.Request(owner.upstream + self.path, data=raw, method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            answer = json.loads(response.read())
        message = answer["choices"][0]["message"]
        if fault == "empty":
            message.update(content=None, tool_calls=None)
        if fault == "truncate_args":
            for call in message.get("tool_calls") or []:
                args = call["function"]["arguments"]
                call["function"]["arguments"] = args[: max(1, len(args) // 2)]
            answer["choices"][0]["finish_reason"] = "length"
        self._reply(200, json.dumps(answer).encode())


def agent_call(body: dict) -> bool:
    """True for a request from the agent side (τ²'s user simulator's prompt holds a scenario)."""
    system = next((m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "system"), "")
    return "<scenario>" not in system
