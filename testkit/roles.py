"""A scripted stand-in for every role at once, dispatching on who is calling.

``ScriptedRoles`` answers planner, critic, reviser, judge (and leak auditor) requests with fixed, valid JSON
and hands executor and user turns to another script (by default the τ² gold replay). Tests swap
any one role for a script of their own (a leaking critic, a malformed one, ...).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from testkit.leak_auditor import overlap_auditor
from testkit import sealed_answers
from testkit.scripted import Script, register_script, text

DEFAULT_PLAN = {
    "plan": "Identify the user, look up the records the request is about, check the policy's "
    "conditions, confirm with the user, then act and tell the user the outcome.",
    "tool_chain": [],
}
DEFAULT_CRITIQUE = {
    "grade": 0.6,
    "errors": {"E1": False, "E2": True, "E3": False, "E4": False, "E5": False, "E6": False},
    "rationale": "The plan never says which records must be checked before acting, so it may "
    "stop before the user's goal is fully met.",
}
JUDGE_P0 = {"is_correct": False, "grade": 0.4,
            "errors": {"E1": False, "E2": True, "E3": False, "E4": False, "E5": False, "E6": False},
            "reasoning": "The plan may act before checking the records it depends on."}
JUDGE_P1 = {"is_correct": True, "grade": 1.0, "errors": dict.fromkeys(("E1", "E2", "E3", "E4", "E5", "E6"), False),
            "reasoning": "The plan checks what it needs before acting."}
DEFAULT_REVISION = {
    "plan": DEFAULT_PLAN["plan"] + " Check every record the request touches before acting.",
    "tool_chain": [],
}


def fixed(answer: dict[str, Any]) -> Script:
    return lambda request, context: text(json.dumps(answer))


def judge_by_revision_marker(request: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    """Judges the default revision correct and anything else not: a fixed, known answer."""
    revised = DEFAULT_REVISION["plan"][-40:] in json.dumps(request["messages"])
    return text(json.dumps(JUDGE_P1 if revised else JUDGE_P0))


@dataclass
class ScriptedRoles:
    act: Script | None = None
    planner: Script = field(default_factory=lambda: fixed(DEFAULT_PLAN))
    critic: Script = field(default_factory=lambda: fixed(DEFAULT_CRITIQUE))
    reviser: Script = field(default_factory=lambda: fixed(DEFAULT_REVISION))
    judge: Script = field(default_factory=lambda: judge_by_revision_marker)
    auditor: Script = field(default_factory=lambda: overlap_auditor)
    sealed_critic: Script = field(default_factory=lambda: sealed_answers.sealed_critic)
    writer: Script = field(default_factory=lambda: sealed_answers.writer)

    def __post_init__(self) -> None:
        if self.act is None:
            from testkit.gold import GoldReplay

            self.act = GoldReplay()

    def model_name(self, name: str = "roles") -> str:
        return register_script(name, self)

    def __call__(self, request: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
        purpose = context.get("purpose")
        if purpose == "planner":
            return self.planner(request, context)
        if purpose in ("critic", "self-critic", "sealed-critic"):
            if sealed_answers.is_sealed_critic(request):
                return self.sealed_critic(request, context)
            return self.critic(request, context)
        if purpose == "writer":
            return self.writer(request, context)
        if purpose == "judge":
            return self.judge(request, context)
        if purpose == "reviser":
            return self.reviser(request, context)
        if purpose == "auditor":
            return self.auditor(request, context)
        return self.act(request, context)
