"""A scripted OpenAI-compatible chat server on loopback, for benchmarks only.

It answers ``POST /v1/chat/completions`` after a fixed latency, replaying τ²-bench's reference
solution for both sides of the conversation, so τ²'s own ``tau2 run`` and this runtime can be
timed against the same "model":

* a user-simulator request (τ²'s user prompt, with the task's ``<scenario>``) opens with
  ``[task <domain>/<id>]`` and stops once the agent says it is done;
* an agent request finds that marker in the first user message and plays the next reference
  action as a tool call (counted from the tool calls already in the conversation), then states
  the task's ``communicate_info``.

Stateless per request, so any concurrency works. It measures plumbing, never a model.

    python bench/stub_server.py --port 8765 --latency 0.2
"""

from __future__ import annotations

import argparse
import json
import os
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

DONE = "That completes your request."
_MARKER = re.compile(r"\[task ([a-z]+)/([^\]]+)\]")


class Replay:
    def __init__(self, domains: list[str]):
        from tau2.registry import registry

        self.tasks = {}
        self.scenarios = []
        for domain in domains:
            for task in registry.get_tasks_loader(domain)():
                self.tasks[(domain, task.id)] = task
                self.scenarios.append((str(task.user_scenario), domain, task.id))

    def answer(self, body: dict) -> dict:
        messages = body["messages"]
        system = next((m.get("content") or "" for m in messages if m["role"] == "system"), "")
        if "<scenario>" in system:
            return self._user(system, messages)
        return self._agent(messages)

    def _user(self, system: str, messages: list[dict]) -> dict:
        convo = [m for m in messages if m["role"] != "system"]
        if len(convo) <= 1:
            domain, task_id = next((d, t) for s, d, t in self.scenarios if s in system)
            return {"content": f"Hi, I need help. [task {domain}/{task_id}]"}
        last = convo[-1].get("content") or ""
        return {"content": "###STOP###" if DONE in last else "Please continue."}

    def _agent(self, messages: list[dict]) -> dict:
        first_user = next(m.get("content") or "" for m in messages if m["role"] == "user")
        domain, task_id = _MARKER.search(first_user).groups()
        task = self.tasks[(domain, task_id)]
        actions = [a for a in (task.evaluation_criteria.actions or []) if a.requestor == "assistant"]
        done = sum(len(m.get("tool_calls") or []) for m in messages if m["role"] == "assistant")
        if done < len(actions):
            action = actions[done]
            return {"content": None, "tool_calls": [{
                "id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                "function": {"name": action.name, "arguments": json.dumps(action.arguments)}}]}
        info = " ".join(task.evaluation_criteria.communicate_info or [])
        return {"content": f"{info} {DONE}".strip()}


def make_handler(replay: Replay, latency: float):
    calls = {"chat": 0, "in_flight": 0, "peak_in_flight": 0}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as every hosted provider
        disable_nagle_algorithm = True  # headers and body are two writes: no delayed-ACK stall
        def do_GET(self):  # noqa: N802 - ``GET /stats``: chat calls answered, most at once
            with lock:  # ``GET /stats/reset``: the same, then the peak starts again from now
                payload = json.dumps(calls).encode()
                if self.path == "/stats/reset":
                    calls["peak_in_flight"] = calls["in_flight"]
            self.send_response(200 if self.path in ("/stats", "/stats/reset") else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self):  # noqa: N802 - http.server's naming
            with lock:
                calls["chat"] += 1
                calls["in_flight"] += 1
                calls["peak_in_flight"] = max(calls["peak_in_flight"], calls["in_flight"])
            try:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                reply = replay.answer(body)
                time.sleep(latency)
            finally:
                with lock:
                    calls["in_flight"] -= 1
            message = {"role": "assistant", "content": reply.get("content")}
            if reply.get("tool_calls"):
                message["tool_calls"] = reply["tool_calls"]
            payload = json.dumps({
                "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
                "created": int(time.time()), "model": body.get("model", "stub"),
                "choices": [{"index": 0, "message": message,
                             "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):  # quiet
            pass

    return Handler


def serve(port: int, latency: float, domains: list[str]) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(Replay(domains), latency))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--domains", default="airline,retail")
    args = parser.parse_args()
    server = serve(args.port, args.latency, args.domains.split(","))
    print(f"stub model on http://127.0.0.1:{args.port}/v1 (latency {args.latency}s)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()


if __name__ == "__main__":
    main()
