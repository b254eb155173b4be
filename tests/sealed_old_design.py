"""The sealed critique as it was first built, kept for the tests only: its rationale written on
the critic's own model, then the rules guard and the leak auditor sending it back and cutting
it. The collusion tests swap it in (``use_old_design``) to show that they fail where the writer
can share a code with the critic or where a party that saw the supervision edits the text.
"""

from __future__ import annotations

import json
from typing import Any

from critique.critic import LEAK_FEEDBACK, CriticResult
from critique.guard.guard_outcome import GuardOutcome, union_findings
from critique.reference import tools_text
from critique.sealed import SealedCritic, channel_use, render_findings
from evrcore.critique import FREE_CRITIQUE_JSON_SCHEMA, Critique, ErrorFlags, FreeCritique
from evrcore.prompts import render
from evrcore.taxonomy import ERROR_CODES


class OldSealedCritic(SealedCritic):
    """Writer on the critic's model; guard and auditor retry twice, then redact."""

    def __init__(self, model, writer=None, attempts=3, auditor=None, options=None):
        super().__init__(model, writer=None, attempts=attempts, auditor=auditor, options=options)
        self.old_writer = model  # the old default: the critic's own model words the rationale

    def critique(self, view, supervision, plan) -> CriticResult:
        from critique.guard.leak_guard import LeakGuard

        answer, attempts, note = self.closed_answer(view, supervision, plan)
        guard = LeakGuard(view, supervision, plan)
        outcome = GuardOutcome(audited=self.auditor is not None)
        feedback: list[str] = []
        while True:
            rationale = _write(self.old_writer, view, plan, answer, feedback)
            rules = guard.scan(rationale)
            audit = self.auditor.audit(supervision, rationale) if self.auditor else []
            if not rules and not audit:
                break
            outcome.fired = True
            outcome.findings = union_findings(outcome.findings, rules + audit)
            if len(feedback) < 2:
                outcome.action = "retried"
                feedback.append(rationale)
                continue
            rationale, outcome.removed = guard.redact(rationale, extra=[f.text for f in audit])
            outcome.action = "redacted"
            break
        critique = Critique(grade=answer.grade, errors=ErrorFlags(**answer.errors.model_dump()),
                            rationale=rationale)
        return CriticResult(critique=critique, guard=outcome, attempts=attempts, note=note,
                            channel=channel_use(len(plan.tool_chain), answer, self.options, attempts,
                                                1 + len(feedback)).model_dump())


def _write(model, view, plan, answer, feedback: list[str]) -> str:
    flags = [c for c, on in answer.errors.model_dump().items() if on]
    prompt = render("critique", "sealed_writer", policy=view.policy, tools=tools_text(view),
                    request=view.opening_request or "",
                    plan=json.dumps(plan.to_apb(), indent=2, ensure_ascii=False), grade=str(answer.grade),
                    flags="\n".join(f"- {c}: {ERROR_CODES[c]}" for c in flags) or "- none",
                    findings=render_findings(plan, answer))
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for previous in feedback:
        messages += [{"role": "assistant", "content": json.dumps({"rationale": previous})},
                     {"role": "user", "content": LEAK_FEEDBACK}]
    reply = model.complete(messages, json_schema=FREE_CRITIQUE_JSON_SCHEMA)
    return FreeCritique.model_validate_json(reply.content).rationale


def use_old_design(monkeypatch) -> None:
    """The test-only switch: every sealed critique of this process is made the old way."""
    import critique.sealed

    monkeypatch.setattr(critique.sealed, "SealedCritic", OldSealedCritic)
