"""The answers of a perfect model for every role, read off the wire: the fakes' script for the
end-to-end runs, so every score must be 1.0.

Executor and simulated user replay τ²-bench's reference solution (``bench/stub_server.py``'s
``Replay``: the user names the task in its opening words, the agent plays the reference actions
in order, then says the ``communicate_info``). A schema-constrained role (planner, reviser,
critic, judge, auditor) gets a valid instance of the very schema the request carries, so the
answers follow the runtime's schemas as they are at any commit: every flag false, the top
grade, ``is_correct`` true, no leaks.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from runtime.llm.provider_rules import OPENING_USER_TURN
from tests.provider_fakes.base import Answer, Turn
from tests.conftest import stub_server as load_stub_server

ROOT = Path(__file__).resolve().parents[2]


@lru_cache(maxsize=None)
def _replay(domains: tuple[str, ...]) -> Any:
    module = load_stub_server()
    return module.Replay(list(domains))


def instance(schema: dict[str, Any], name: str = "") -> Any:
    """A valid value of ``schema``, the answer of a model that finds nothing wrong."""
    if "enum" in schema:
        values = schema["enum"]
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if name == "grade" and numbers:
            return max(numbers)
        return min(numbers) if numbers else values[0]
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    if kind == "object":
        return {key: instance(sub, key) for key, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [instance(schema.get("items") or {}, name) for _ in range(schema.get("minItems", 0))]
    if kind == "boolean":
        return name == "is_correct"
    if kind in ("integer", "number"):
        return 0
    return {"plan": "Identify the user, look up what the request is about, follow the policy, "
                    "then act and tell the user the outcome.",
            "rationale": "The plan covers the whole request and follows the policy.",
            "reasoning": "The plan is feasible and complete."}.get(name, "ok")


class GoldScript:
    """Callable as a fake's script."""

    def __init__(self, domains: tuple[str, ...] = ("retail",)):
        self.replay = _replay(tuple(domains))

    def __call__(self, turn: Turn) -> Answer:
        if turn.schema is not None:
            return Answer(text=json.dumps(instance(turn.schema)))
        return _answer(self.replay.answer({"messages": _chat(turn, lambda calls: calls)}))


class ToolSandboxGoldScript:
    """The same for one ToolSandbox scenario: ``testkit.toolsandbox_gold``'s hand-written play
    of ``task_id``, with the role read off the wire (the simulated user is the side offered
    ``end_conversation``)."""

    def __init__(self, task_id: str, name_map: dict[str, str]):
        from testkit.toolsandbox_gold import ToolSandboxGold

        self.task_id = task_id
        self.gold = ToolSandboxGold(lambda _task: name_map)

    def __call__(self, turn: Turn) -> Answer:
        if turn.schema is not None:
            return Answer(text=json.dumps(instance(turn.schema)))
        messages = _chat(turn, lambda calls: [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}} for c in calls])
        purpose = "user" if "end_conversation" in turn.tools else "executor"
        return _answer(self.gold({"messages": messages}, {"task_id": self.task_id, "purpose": purpose}))


def _chat(turn: Turn, openai_calls: Callable[[list[dict]], list[dict]]) -> list[dict]:
    """The turn as the OpenAI-style conversation a gold replay reads: its system text first, the
    opening user turn the runtime adds for some providers left out, each message's tool calls
    in the form ``openai_calls`` gives them (``None`` when it has none)."""
    messages = [{"role": "system", "content": turn.system}]
    for m in turn.messages:
        if m["role"] == "user" and m.get("content") == OPENING_USER_TURN:
            continue
        messages.append({**m, "tool_calls": openai_calls(m.get("tool_calls") or []) or None})
    return messages


def _answer(reply: dict) -> Answer:
    """A gold replay's OpenAI-style reply as the fake's answer."""
    calls = [(c["function"]["name"], json.loads(c["function"]["arguments"]))
             for c in reply.get("tool_calls") or []]
    return Answer(text=reply.get("content"), calls=calls)
