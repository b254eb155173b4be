"""A scripted OpenAI-compatible chat server on loopback, for benchmarks and agreement tests.

It answers ``POST /v1/chat/completions`` after a fixed latency, replaying τ²-bench's reference
solution for both sides of the conversation, so τ²'s own ``tau2 run`` and this runtime can be
timed and compared against the same "model":

* a user-simulator request (τ²'s user prompt, with the task's ``<scenario>``) opens with
  ``[task <domain>/<id>]`` (the id runs to the last ``]``: telecom ids hold brackets). Several
  tasks can share a scenario (telecom: 114 tasks, 15 scenarios), so the task is looked up among
  the tasks the stub was started for (``--task-ids``); a scenario that still names tasks with
  different reference solutions is an error, never a guess;
* an agent request finds that marker in the first user message and plays the next reference
  action: its own as a tool call, the user's (telecom: toggling airplane mode on the phone) by
  asking the user to do step N on the device; then it states the task's ``communicate_info``;
* the user plays its own reference actions as tool calls when asked, then says how many it did,
  and stops once the agent says it is done.

* a judge request (τ³'s NL-assertion judge: its system prompt asks for ``expectedOutcome``
  verdicts) gets one verdict per assertion listed in its ``expectedOutcomes``, in τ³'s JSON
  format: met when the conversation reached the agent's closing line and the stub is not
  sabotaging, unmet otherwise. A script, not a grader: it lets ``tau2 run`` and the runtime be
  compared on tasks whose reward includes NL assertions.

``POST /v1/embeddings`` answers each input with a fixed vector derived from its text's sha256
(16 dimensions), so dense retrieval can be run end to end against it: plumbing, not meaning.

``--sabotage`` leaves out the last reference write that changes the end state (the replay must
then score 0). Stateless per request (everything is read back from the conversation), so any
concurrency works. It measures plumbing, never a model.

    python bench/stub_server.py --port 8765 --latency 0.2 --domains telecom --task-ids a,b
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import sys
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from testkit.loopback import BackloggedHTTPServer

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

DONE = "That completes your request."
_MARKER = re.compile(r"\[task ([a-z_-]+)/(.+)\]")
_SCENARIO = re.compile(r"<scenario>\n(.*)\n</scenario>", re.S)
_STEP = re.compile(r"do step (\d+) on your device")
_DID = re.compile(r"\[did (\d+)\]")


class Replay:
    def __init__(self, domains: list[str], task_ids: list[str] | None = None, sabotage: bool = False,
                 retrieval: str | None = None):
        from tau2.registry import registry

        self.sabotage = sabotage
        self.retrieval = retrieval
        self.tasks = {}
        self.by_scenario: dict[str, list[tuple[str, str]]] = {}
        wanted = set(task_ids) if task_ids else None
        for domain in domains:
            for task in registry.get_tasks_loader(domain)():
                if wanted is not None and task.id not in wanted:
                    continue
                self.tasks[(domain, task.id)] = task
                self.by_scenario.setdefault(str(task.user_scenario), []).append((domain, task.id))
        self._actions: dict[tuple[str, str], list] = {}
        self._lock = threading.Lock()

    def answer(self, body: dict) -> dict:
        messages = body["messages"]
        system = next((m.get("content") or "" for m in messages if m["role"] == "system"), "")
        if "`expectedOutcome`" in system:
            return self._judge(messages)
        if "<scenario>" in system:
            return self._user(system, messages)
        return self._agent(messages)

    def actions(self, domain: str, task_id: str) -> list:
        """The reference actions the replay plays (the sabotaged list under ``sabotage``)."""
        with self._lock:
            if (domain, task_id) not in self._actions:
                task = self.tasks[(domain, task_id)]
                actions = list(task.evaluation_criteria.actions or [])
                if self.sabotage:
                    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
                    index = self._last_write(domain, task)
                    if index is not None:
                        del actions[index]
                self._actions[(domain, task_id)] = actions
            return self._actions[(domain, task_id)]

    def _last_write(self, domain: str, task) -> int | None:
        """The write to leave out, found on environments built as the run builds them: with
        ``--retrieval`` (τ³ banking, in the τ³ venv) by τ³'s adapter, offline; else τ²'s way."""
        if self.retrieval is not None:
            from envs.tau3.adapter import Tau3Adapter
            from envs.tau3.reference import last_write

            return last_write(Tau3Adapter(self.retrieval), domain, task)
        from testkit.gold import last_state_changing_write

        return last_state_changing_write(domain, task)

    def find(self, system: str) -> tuple[str, str]:
        """The task whose scenario the user prompt holds; raises ``LookupError`` when none, or
        several with different reference solutions."""
        match = _SCENARIO.search(system)
        found = self.by_scenario.get(match.group(1) if match else "", [])
        if not found:
            raise LookupError("no task of this stub has the user prompt's scenario")
        solutions = {json.dumps(self._solution(*key), sort_keys=True, default=str) for key in found}
        if len(solutions) > 1:
            names = ", ".join(t for _, t in found[:4])
            raise LookupError(f"the scenario is shared by tasks with different reference solutions "
                              f"({names}, ...): start the stub with --task-ids naming one of them")
        return found[0]

    def _solution(self, domain: str, task_id: str) -> tuple:
        criteria = self.tasks[(domain, task_id)].evaluation_criteria
        return ([a.model_dump() for a in self.actions(domain, task_id)], criteria.communicate_info)

    def _user(self, system: str, messages: list[dict]) -> dict:
        convo = [m for m in messages if m["role"] != "system"]
        if len(convo) <= 1:
            domain, task_id = self.find(system)
            return {"content": f"Hi, I need help. [task {domain}/{task_id}]"}
        # the user's view is flipped: the agent speaks as "user", the user's own turns as "assistant"
        domain, task_id = _MARKER.search(next(m.get("content") or "" for m in convo
                                              if m["role"] == "assistant")).groups()
        agent_said = [i for i, m in enumerate(convo) if m["role"] == "user"]
        last = convo[agent_said[-1]].get("content") or ""
        if DONE in last:
            return {"content": "###STOP###"}
        step = _STEP.search(last)
        if step is None:
            return {"content": "Please continue."}
        did = sum(len(m.get("tool_calls") or []) for m in convo[agent_said[-1] + 1:]
                  if m["role"] == "assistant")
        actions = self.actions(domain, task_id)
        index = int(step.group(1)) + did
        if index < len(actions) and actions[index].requestor == "user":
            return _call(actions[index])
        return {"content": f"Done on my phone. [did {did}]"}

    def _judge(self, messages: list[dict]) -> dict:
        prompt = next(m.get("content") or "" for m in messages if m["role"] == "user")
        conversation, _, listed = prompt.partition("expectedOutcomes:")
        try:
            assertions = ast.literal_eval(listed.strip())
        except (ValueError, SyntaxError) as exc:
            raise LookupError(f"a judge request whose expectedOutcomes are not a list: {exc}") from None
        met = DONE in conversation and not self.sabotage
        return {"content": json.dumps({"results": [
            {"expectedOutcome": a, "reasoning": "scripted verdict (stub)", "metExpectation": met}
            for a in assertions]})}

    def _agent(self, messages: list[dict]) -> dict:
        first_user = next(m.get("content") or "" for m in messages if m["role"] == "user")
        domain, task_id = _MARKER.search(first_user).groups()
        task = self.tasks[(domain, task_id)]
        actions = self.actions(domain, task_id)
        done = sum(len(m.get("tool_calls") or []) for m in messages if m["role"] == "assistant")
        done += sum(int(n) for m in messages if m["role"] == "user"
                    for n in _DID.findall(m.get("content") or ""))
        if done < len(actions):
            if actions[done].requestor == "assistant":  # words beside the call, as models do
                return _call(actions[done], f"Let me run {actions[done].name} for you.")
            return {"content": f"Please do step {done} on your device and tell me when it is done."}
        info = " ".join(task.evaluation_criteria.communicate_info or [])
        return {"content": f"{info} {DONE}".strip()}


def _call(action, text: str | None = None) -> dict:
    return {"content": text, "tool_calls": [{
        "id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
        "function": {"name": action.name, "arguments": json.dumps(action.arguments)}}]}


def embeddings(body: dict) -> dict:
    """An OpenAI embeddings answer: each text's vector from its sha256, unit length."""
    texts = body.get("input") or []
    texts = [texts] if isinstance(texts, str) else texts
    data = []
    for i, text in enumerate(texts):
        raw = [b - 127.5 for b in hashlib.sha256(str(text).encode()).digest()[:16]]
        norm = sum(x * x for x in raw) ** 0.5 or 1.0
        data.append({"object": "embedding", "index": i, "embedding": [x / norm for x in raw]})
    return {"object": "list", "data": data, "model": body.get("model", "stub"),
            "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)}}


def make_handler(replay: Replay, latency: float):
    calls = {"chat": 0, "embeddings": 0, "embedded_texts": 0, "in_flight": 0, "peak_in_flight": 0,
             "last_call_at": None}  # wall-clock time of the last request (a test's "after the end")
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
                calls["last_call_at"] = time.time()
                calls["in_flight"] += 1
                calls["peak_in_flight"] = max(calls["peak_in_flight"], calls["in_flight"])
            try:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path.rstrip("/").endswith("/embeddings"):
                    answer = embeddings(body)
                    with lock:
                        calls["chat"] -= 1
                        calls["embeddings"] += 1
                        calls["embedded_texts"] += len(answer["data"])
                    return self._json(200, answer)
                try:
                    reply = replay.answer(body)
                except LookupError as exc:
                    return self._error(str(exc))
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

        def _json(self, status: int, data: dict) -> None:
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _error(self, message: str) -> None:
            payload = json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):  # quiet
            pass

    return Handler


def serve(port: int, latency: float, domains: list[str], task_ids: list[str] | None = None,
          sabotage: bool = False, retrieval: str | None = None) -> BackloggedHTTPServer:
    replay = Replay(domains, task_ids, sabotage, retrieval)
    server = BackloggedHTTPServer(("127.0.0.1", port), make_handler(replay, latency))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def stats(base: str) -> dict:
    """``GET /stats`` of a stub served at ``base`` (``http://127.0.0.1:PORT``)."""
    with urllib.request.urlopen(f"{base}/stats", timeout=10) as r:
        return json.load(r)


def both_calling(base: str, calls0: int) -> bool:
    """Two workers in mid-episode: a few calls made since ``calls0``, and two waiting for their
    answers now (the moment the head-loss checks kill a node)."""
    now = stats(base)
    return now["chat"] - calls0 >= 8 and now["in_flight"] >= 2


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--domains", default="airline,retail")
    parser.add_argument("--task-ids", help="comma-separated ids: the tasks a shared scenario may be")
    parser.add_argument("--sabotage", action="store_true", help="leave out the last state-changing write")
    parser.add_argument("--retrieval", help="τ³ banking's retrieval configuration the sabotage's "
                        "environments are built with (an offline one, e.g. golden_retrieval)")
    args = parser.parse_args()
    ids = args.task_ids.split(",") if args.task_ids else None
    server = serve(args.port, args.latency, args.domains.split(","), ids, args.sabotage, args.retrieval)
    print(f"stub model on http://127.0.0.1:{args.port}/v1 (latency {args.latency}s)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()


if __name__ == "__main__":
    main()
