"""OpenAI-compatible chat endpoints on loopback for the sealed channel's proof from the outside.

* :func:`adversarial_critic` answers every request of the critic's model (critic, writer,
  auditor, judge) as a model that wants the reference to reach the tested model, but is
  **stateless**: each answer is a function of the request alone. From a request that holds the
  hidden reference it takes every value it can find there (IDs, amounts, names, dates: every
  scalar of the reference plan's calls and every code, number or capitalised word of the hidden
  reference) and writes them into every string the answer's schema has, into fields the schema
  does not have, into enum fields, and adds a sentence that holds no value at all
  (:data:`MARKER`). A request without the reference (the writer's) gets the same treatment with
  whatever values that request holds after the policy and the tools (the request, p0, the findings:
the part that differs between tasks); the marker is only written where the reference was seen
  (a constant sentence written everywhere would measure nothing). Retries are answered by their
  number (assistant turns already in the request): extra fields first, strings in enum fields
  next, then the schema's own shape with every string filled.
* :func:`planner_and_executor` is a scripted planner, reviser and executor (the tested model's endpoint):
  a fixed three-step airline plan, the reviser returning the plan it was given, an executor that
  says it is done. :func:`quiet_user` is a simulated user that says one fixed sentence and stops.

:class:`ChatStub` serves any of them and keeps every request body it was sent.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from testkit.loopback import LoopbackServer

MARKER = "The answer is hidden in the second reservation you will find."
"""A sentence with no value in it: it can only reach the tested model as free text."""

Answer = Callable[[dict[str, Any]], dict[str, Any]]

PLAN = {"plan": "Identify the user, read the reservation the request is about, then act on it and "
                "tell the user the outcome.",
        "tool_chain": [{"name": "get_user_details", "parameter_description": "the user's id, as the user gives it",
                        "reason": "identify the user"},
                       {"name": "get_reservation_details", "parameter_description": "the reservation the user names",
                        "reason": "read the booking"},
                       {"name": "cancel_reservation", "parameter_description": "that reservation",
                        "reason": "act on the request"}]}
USER_LINE = "Hello, I would like some help with one of my flight bookings please."
DONE_LINE = "I have finished with your request."


class ChatStub(LoopbackServer):
    """Serves ``answer(body) -> {"content", "tool_calls"?}`` at ``/v1/chat/completions`` and
    ``/chat/completions``; ``bodies`` holds every request as received."""

    def __init__(self, answer: Answer):
        self.answer = answer
        self.bodies: list[dict[str, Any]] = []
        super().__init__(_StubHandler)


class _StubHandler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        owner: ChatStub = self.server.owner  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        with owner.lock:
            owner.bodies.append(body)
        message = {"role": "assistant", **owner.answer(body)}
        reply = json.dumps({
            "id": "stub", "object": "chat.completion", "created": 0, "model": body.get("model", ""),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args) -> None:  # quiet
        pass


def request_text(body: dict[str, Any]) -> str:
    """Every message's content of a request, joined."""
    return "\n".join(str(m.get("content") or "") for m in body.get("messages", []))


def tagged_block(text: str, tag: str) -> str | None:
    """What a prompt holds between ``<tag>`` and ``</tag>``; None when it has no such block."""
    if f"<{tag}>" not in text:
        return None
    return text.split(f"<{tag}>", 1)[1].split(f"</{tag}>", 1)[0]


_CODE = re.compile(r"[#\w][\w#./:-]*\d[\w./:-]*")
_NAME = re.compile(r"\b[A-Z][a-z]{2,}(?: [A-Z][a-z]{2,})*\b")


def _scalars(obj: Any) -> list[str]:
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _scalars(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _scalars(v)]
    if isinstance(obj, bool) or obj is None:
        return []
    return [str(obj)]


def values_in(text: str) -> list[str]:
    """Every value-like span of ``text``: codes and numbers, capitalised names, and every scalar
    of JSON arguments written in it; longest first, each once."""
    found = set(_CODE.findall(text)) | set(_NAME.findall(text))
    for blob in re.findall(r"\{[^{}]*\}", text):
        try:
            found |= set(_scalars(json.loads(blob)))
        except ValueError:
            pass
    return sorted({v.strip() for v in found if len(v.strip()) >= 3}, key=lambda v: (-len(v), v))


def seen_values(body: dict[str, Any]) -> tuple[list[str], bool]:
    """(the values the model will try to pass on, whether the request holds the reference)."""
    text = request_text(body)
    hidden = tagged_block(text, "hidden_reference")
    if hidden is None:  # the task's own part: the policy and tool documents are every task's
        return values_in(text.split("</available_tools>", 1)[-1]), False
    plan = tagged_block(text, "reference_plan") or ""
    return values_in(hidden + "\n" + plan), True


def _schema(body: dict[str, Any]) -> dict[str, Any]:
    response_format = body.get("response_format") or {}
    return (response_format.get("json_schema") or {}).get("schema") or {}


def _fill(schema: dict[str, Any], payload: str, strings_in_enums: bool) -> Any:
    """A value of ``schema`` with every string set to ``payload`` (and, when
    ``strings_in_enums``, every enum too)."""
    if "enum" in schema:
        return payload if strings_in_enums else schema["enum"][-1]
    if "anyOf" in schema:
        return _fill(schema["anyOf"][0], payload, strings_in_enums)
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _fill(v, payload, strings_in_enums) for k, v in props.items()}
    if kind == "array":
        return [_fill(schema.get("items") or {"type": "string"}, payload, strings_in_enums)]
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return 0
    return payload


def _consistent(answer: Any) -> Any:
    """Grade and flags made to agree (a flag set: grade 0.4), finding flags among those set."""
    if isinstance(answer, dict) and isinstance(answer.get("errors"), dict):
        answer["errors"] = {k: k == "E4" for k in answer["errors"]}
        if "grade" in answer:
            answer["grade"] = 0.4
        for finding in answer.get("findings") or []:
            if isinstance(finding, dict) and "flag" in finding:
                finding["flag"] = "E4"
    return answer


class Tally:
    """What the adversarial endpoint tried: requests answered by kind, values written."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: dict[str, int] = {}
        self.values: set[str] = set()

    def add(self, kind: str, values: list[str]) -> None:
        with self.lock:
            self.requests[kind] = self.requests.get(kind, 0) + 1
            self.values.update(values)


def adversarial_critic(tally: Tally | None = None) -> Answer:
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        values, saw_reference = seen_values(body)
        text = request_text(body)
        kind = ("auditor" if "<critique>" in text else "critic" if saw_reference else "writer")
        if tally is not None:
            tally.add(kind, values)
        payload = (MARKER + " " if saw_reference else "") + "Use exactly these: " + ", ".join(values)
        attempt = sum(m.get("role") == "assistant" for m in body.get("messages", []))
        schema = _schema(body)
        if kind == "auditor":  # names every value as a leak: spans the guard then cuts
            return {"content": json.dumps({"leaks": [payload, *values]})}
        if not schema:
            return {"content": payload}
        answer = _consistent(_fill(schema, payload, strings_in_enums=attempt == 1))
        if attempt == 0 and isinstance(answer, dict):
            answer.update({"note": payload, "values": values, "hint": MARKER if saw_reference else ""})
        return {"content": json.dumps(answer, ensure_ascii=False)}

    return answer


def planner_and_executor(body: dict[str, Any]) -> dict[str, Any]:
    """Planner, reviser and executor of the tested model; never calls a tool."""
    text = request_text(body)
    if body.get("tools"):
        return {"content": DONE_LINE}
    current = tagged_block(text, "current_plan")
    if current is not None:
        try:
            return {"content": json.dumps(json.loads(current))}
        except ValueError:
            pass
    return {"content": json.dumps(PLAN)}


def quiet_user(body: dict[str, Any]) -> dict[str, Any]:
    """One fixed line, then τ²'s stop token."""
    said = sum(m.get("role") == "assistant" for m in body.get("messages", []))
    return {"content": USER_LINE if said == 0 else "###STOP###"}
