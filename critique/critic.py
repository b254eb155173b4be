"""Critics: read a plan ``p0`` and return a critique the reviser will act on.

One ``Critic`` class covers every strategy of the ablation (``critique.strategies``): whether it
sees the ``Supervision``, whether it answers in the E1–E6 taxonomy, whether its rationale passes
the leak guard, and whether it is told it may reveal the reference (the ``leaky`` upper bound).

Output is parsed into a closed schema (malformed answers are retried); a taxonomy critique whose
grade contradicts its flags (``evrcore.verdict``) is sent back, then settled by its flags with a
``note``. The critic reads what the plan judge reads: the full tool schemas and, when it sees the
supervision, the reference as an APB plan and tool chain (``critique.reference``) beside the
benchmark's own supervision. With the guard on, a
rationale carrying supervision-only content — found by the rules (``critique.guard.leak_guard``) or by
the leak auditor (``critique.guard.auditor``) — is sent back for a rewrite, then redacted, and the
auditor reads the redacted text once more; the result records what the rules found, what the
auditor found, what was done and what the auditor still found (residual).
"""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from critique.bounded_json import OutsideSchema, validated
from critique.critic_settings import CriticSettings
from critique.guard.auditor import LeakAuditor
from critique.guard.guard_outcome import GuardOutcome, union_findings
from critique.reference import reference_plan, tools_text
from envs.base import Supervision, TaskView
from evrcore.chat import ChatModel
from evrcore.critique import (
    CRITIQUE_JSON_SCHEMA,
    FREE_CRITIQUE_JSON_SCHEMA,
    GRADES,
    AnyCritique,
    Critique,
    FreeCritique,
)
from evrcore.plan import Plan
from evrcore.prompts import render
from evrcore.taxonomy import definitions_text
from evrcore.verdict import RULE, settle


class CriticError(RuntimeError):
    """The critic gave no valid critique within its attempts."""


FREE_ANSWER_CHARS = 64_000
"""A free-text critique is a few sentences; an answer far longer is malformed unread."""


class CriticResult(BaseModel):
    critique: AnyCritique
    guard: GuardOutcome
    attempts: int
    raw_answers: list[str] = Field(default_factory=list)
    note: str | None = Field(default=None, description="What the verdict rule settled in the "
                             "critic's last answer (grade against flags), when anything was.")
    channel: dict | None = Field(default=None, description="The sealed critique's channel use "
                                 "(critique.sealed.ChannelUse); None for the other strategies.")


ANTI_LEAK = CriticSettings()


class Critic:
    def __init__(self, model: ChatModel, settings: CriticSettings = ANTI_LEAK, attempts: int = 3,
                 leak_retries: int = 2, auditor: LeakAuditor | None = None):
        if settings.guarded and not settings.sees_supervision:
            settings = CriticSettings(False, settings.taxonomy, False, False)  # nothing to guard
        self.model = model
        self.settings = settings
        self.attempts = attempts
        self.leak_retries = leak_retries
        self.auditor = auditor if settings.guarded else None

    def critique(self, view: TaskView, supervision: Supervision | None, plan: Plan) -> CriticResult:
        s = self.settings
        if s.sees_supervision and supervision is None:
            raise ValueError("this critic needs the supervision")
        guard = None
        if s.guarded:  # the guard's word lists load with the first guarded critique
            from critique.guard.leak_guard import LeakGuard

            guard = LeakGuard(view, supervision, plan)
        schema = CRITIQUE_JSON_SCHEMA if s.taxonomy else FREE_CRITIQUE_JSON_SCHEMA
        messages = [{"role": "user", "content": self._prompt(view, supervision, plan)}]
        outcome = GuardOutcome(audited=self.auditor is not None)
        raw: list[str] = []
        malformed = leaks = contradictions = 0
        while True:
            reply = self.model.complete(messages, json_schema=schema)
            raw.append(reply.content or "")
            try:  # bounded: a deep or huge answer is malformed, and no refusal quotes the answer
                critique: AnyCritique = validated(Critique if s.taxonomy else FreeCritique, reply.content,
                                                  max_chars=FREE_ANSWER_CHARS)
            except OutsideSchema as exc:
                malformed += 1
                if malformed >= self.attempts:
                    raise CriticError(f"no valid critique after {malformed} malformed answers: {exc}") from None
                messages += [reply.as_message(), {"role": "user", "content": _format_feedback(exc, s.taxonomy)}]
                continue
            note = None  # of this answer only
            if isinstance(critique, Critique) and (problem := critique.contradiction()):
                contradictions += 1
                if contradictions < self.attempts:
                    messages += [reply.as_message(), {"role": "user", "content": _contradiction_feedback(problem)}]
                    continue
                grade, _, note = settle(critique.grade, critique.errors.as_dict())
                critique = critique.model_copy(update={"grade": grade})
            rules = guard.scan(critique.rationale) if guard else []
            audit = self.auditor.audit(supervision, critique.rationale) if self.auditor else []
            if not rules and not audit:
                return CriticResult(critique=critique, guard=outcome, attempts=len(raw), raw_answers=raw,
                                    note=note)
            outcome.fired = True
            outcome.rule_findings = union_findings(outcome.rule_findings, rules)
            outcome.auditor_findings = union_findings(outcome.auditor_findings, audit)
            outcome.findings = union_findings(outcome.findings, rules + audit)
            if leaks < self.leak_retries:
                leaks += 1
                outcome.action = "retried"
                messages += [reply.as_message(), {"role": "user", "content": LEAK_FEEDBACK}]
                continue
            redacted, removed = guard.redact(critique.rationale, extra=[f.text for f in audit])
            outcome.action = "redacted"
            outcome.removed = removed
            if self.auditor:  # what a second reading still finds: the residual leaks
                outcome.residual = self.auditor.audit(supervision, redacted)
            critique = critique.model_copy(update={"rationale": redacted})
            return CriticResult(critique=critique, guard=outcome, attempts=len(raw), raw_answers=raw,
                                note=note)

    def _prompt(self, view: TaskView, supervision: Supervision | None, plan: Plan) -> str:
        s = self.settings
        reference = ""
        if s.sees_supervision:
            reference = (
                "You can see a reference plan and tool chain and how the task is judged (the hidden "
                "reference below); the agent cannot.\n\n"
                "<reference_plan>\n"
                + json.dumps(reference_plan(supervision).to_apb(), indent=2, ensure_ascii=False)
                + "\n</reference_plan>\n\n"
                f"<hidden_reference>\n{supervision.render()}\n</hidden_reference>\n"
            )
        if s.may_reveal:
            rules = ("You may quote the reference's values and steps wherever that helps the agent "
                     "fix its plan.")
        elif s.sees_supervision:
            rules = ("Rules for the rationale (it will be shown to the agent):\n"
                     "- Diagnose, do not solve. Say what is wrong or missing in general terms.\n"
                     "- Never quote values that appear only in the hidden reference: no IDs, dates, "
                     "amounts, codes, names of items, and never list the reference's sequence of tool calls.")
        else:
            rules = "Diagnose what is wrong or missing; the rationale will be shown to the agent."
        if s.taxonomy:
            taxonomy = (f"Error flags:\n{definitions_text()}\n\nThe rule tying grade and flags: {RULE}.")
            answer = ('{"grade": <one of ' + ", ".join(str(g) for g in GRADES) + '>, "errors": {"E1": '
                      'true|false, "E2": ..., "E3": ..., "E4": ..., "E5": ..., "E6": ...}, "rationale": "<diagnosis>"}')
        else:
            taxonomy = ""
            answer = '{"rationale": "<diagnosis>"}'
        return render(
            "critique", "critic",
            policy=view.policy,
            tools=tools_text(view),
            request=view.opening_request or "",
            reference=reference,
            plan=json.dumps(plan.to_apb(), indent=2),
            taxonomy=taxonomy,
            rules=rules,
            answer=answer,
        )


def anti_leak_critic(model: ChatModel, attempts: int = 3, leak_retries: int = 2,
                     auditor: LeakAuditor | None = None) -> Critic:
    """The default Refine critic: sees the supervision, answers in the taxonomy, guarded."""
    return Critic(model, ANTI_LEAK, attempts=attempts, leak_retries=leak_retries, auditor=auditor)


LEAK_FEEDBACK = (
    "Your rationale reveals content that only the reference solution contains (specific IDs, "
    "dates, amounts, codes, or the reference sequence of tool calls). The agent must find those "
    "itself. Rewrite the critique: keep the grade and error flags, and explain what is wrong with "
    "the plan in general terms (what is missing, which rule is broken, which dependency is wrong) "
    "without quoting reference values or listing the reference steps. Answer with the JSON object only."
)


def _format_feedback(exc: Exception, taxonomy: bool) -> str:
    shape = ('{"grade": <one of ' + ", ".join(str(g) for g in GRADES) + '>, "errors": {"E1": bool, ..., '
             '"E6": bool}, "rationale": "<text>"}') if taxonomy else '{"rationale": "<text>"}'
    return (f"Your answer did not match the required format ({' '.join(str(exc).split())[:300]}). "
            f"Answer with exactly one JSON object {shape} and no other fields.")


def _contradiction_feedback(problem: str) -> str:
    return (f"Your grade contradicts your error flags: {problem}. The rule: {RULE}. Answer again "
            "with the JSON object only, grade and flags agreeing.")
