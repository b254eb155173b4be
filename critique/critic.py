"""The anti-leak critic: sees the hidden reference, may only return grade, E1–E6 and rationale.

Output is parsed into the closed ``Critique`` schema (malformed answers are retried), then the
rationale passes the leak guard (leaks are retried, then redacted). The result records what the
guard did, so every Refine record shows whether the critic tried to leak.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, Field, ValidationError

from critique.leak_guard import GuardOutcome, LeakGuard
from critique.schema import CRITIQUE_JSON_SCHEMA, ERROR_CODES, GRADES, Critique
from envs.base import Supervision, TaskView
from planners.chat import ChatModel, extract_json
from planners.plan import Plan
from planners.templates import render


class CriticError(RuntimeError):
    """The critic gave no valid critique within its attempts."""


class CriticResult(BaseModel):
    critique: Critique
    guard: GuardOutcome
    attempts: int
    raw_answers: list[str] = Field(default_factory=list)


class AntiLeakCritic:
    def __init__(self, model: ChatModel, attempts: int = 3, leak_retries: int = 2):
        self.model = model
        self.attempts = attempts
        self.leak_retries = leak_retries

    def critique(self, view: TaskView, supervision: Supervision, plan: Plan) -> CriticResult:
        guard = LeakGuard(view, supervision)
        prompt = render(
            "critique",
            "critic",
            policy=view.policy,
            tools=", ".join(view.tool_names) or "(no tools)",
            request=view.opening_request or "",
            supervision=supervision.render(),
            plan=json.dumps(plan.to_apb(), indent=2),
            errors="\n".join(f"{c}: {d}" for c, d in ERROR_CODES.items()),
            grades=", ".join(str(g) for g in GRADES),
        )
        messages = [{"role": "user", "content": prompt}]
        outcome = GuardOutcome()
        raw: list[str] = []
        malformed = 0
        leaks = 0
        while True:
            reply = self.model.complete(messages, json_schema=CRITIQUE_JSON_SCHEMA)
            raw.append(reply.content or "")
            try:
                critique = Critique.model_validate(extract_json(reply.content))
            except (ValueError, ValidationError) as exc:
                malformed += 1
                if malformed >= self.attempts:
                    raise CriticError(
                        f"no valid critique after {malformed} malformed answers: {str(exc)[:300]}"
                    ) from exc
                messages += [reply.as_message(), {"role": "user", "content": _format_feedback(exc)}]
                continue
            findings = guard.scan(critique.rationale)
            if not findings:
                return CriticResult(critique=critique, guard=outcome, attempts=len(raw), raw_answers=raw)
            outcome.fired = True
            outcome.findings = _union(outcome.findings, findings)
            if leaks < self.leak_retries:
                leaks += 1
                outcome.action = "retried"
                messages += [reply.as_message(), {"role": "user", "content": LEAK_FEEDBACK}]
                continue
            redacted, removed = guard.redact(critique.rationale)
            outcome.action = "redacted"
            outcome.removed = removed
            critique = critique.model_copy(update={"rationale": redacted})
            return CriticResult(critique=critique, guard=outcome, attempts=len(raw), raw_answers=raw)


LEAK_FEEDBACK = (
    "Your rationale reveals content that only the reference solution contains (specific IDs, "
    "dates, amounts, codes, or the reference sequence of tool calls). The agent must find those "
    "itself. Rewrite the critique: keep the grade and error flags, and explain what is wrong with "
    "the plan in general terms (what is missing, which rule is broken, which dependency is wrong) "
    "without quoting reference values or listing the reference steps. Answer with the JSON object only."
)


def _format_feedback(exc: Exception) -> str:
    return (
        f"Your answer did not match the required format ({str(exc)[:300]}). Answer with exactly one "
        'JSON object {"grade": <one of ' + ", ".join(str(g) for g in GRADES) + '>, "errors": '
        '{"E1": bool, ..., "E6": bool}, "rationale": "<text>"} and no other fields.'
    )


def _union(a: list, b: list) -> list:
    seen = {(f.kind, f.text) for f in a}
    return a + [f for f in b if (f.kind, f.text) not in seen]
