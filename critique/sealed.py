"""The sealed critique: the critic that sees the supervision answers in enums and bounded
integers only; a second call that never sees the supervision writes the rationale.

Why: a free-text rationale under an anti-leak instruction can point at the answer without
stating a value ("the only credit card on file", "the third order"), and no list of rules
reaches every such phrasing. Here what the critic knew reaches the tested model only through
its answer — grade, E1–E6 and at most ``MAX_FINDINGS`` findings, each a position in p0, a flag
and an aspect — whose capacity in bits ``critique.channel`` computes. The writer is handed the
``TaskView``, p0 and the validated answer (its signature admits nothing else), so it cannot
copy what it never received. An answer outside the schema is asked again, then the critique
fails as an error of the episode: it is never passed on.

The writer's rationale still passes the leak guard and the auditor (as on every arm); since the
writer saw no supervision, anything they find there is a coincidence or a false alarm.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from critique.guard.auditor import LeakAuditor
from critique.channel import answers, bits
from critique.critic import LEAK_FEEDBACK, CriticError, CriticResult
from critique.guard.guard_outcome import GuardOutcome, union_findings
from critique.reference import reference_plan, tools_text
from envs.base import Supervision, TaskView
from evrcore.chat import ChatModel, extract_json
from evrcore.critique import (
    FREE_CRITIQUE_JSON_SCHEMA,
    GRADES,
    Critique,
    ErrorFlags,
    FreeCritique,
)
from evrcore.plan import Plan
from evrcore.prompts import render
from evrcore.taxonomy import DEFINITIONS, ERROR_CODES, definitions_text
from evrcore.verdict import RULE, contradiction, settle

MAX_FINDINGS = 6
"""At most this many findings per critique: enough for one per flag, few enough to keep the
channel small (``critique.channel``)."""

ASPECTS: dict[str, str] = {
    "goal": "the step pursues a different goal than the user's request (E1)",
    "missing_step": "a step the task needs is absent here (E2)",
    "termination": "the plan stops, or declares success, before the goal is reached (E2)",
    "constraint": "the step breaks a rule of the policy or an explicit constraint of the user (E3)",
    "user_confirmation": "the step acts without a confirmation or consent the policy requires (E3)",
    "order": "the step comes in the wrong order relative to another step (E4)",
    "prerequisite": "the step needs data that no earlier step and no user turn provides (E4)",
    "impossible_state": "the step is impossible in the state the plan has reached (E4)",
    "tool_choice": "the step uses a fundamentally wrong tool for what it must do (E5)",
    "argument": "the step passes a wrong kind of argument, or a value the plan cannot know (E5/E6)",
    "unknown_tool": "the step calls a tool that is not among the available tools (E6)",
    "assumed_value": "the step treats a result or value as known before any tool returned it (E6)",
    "unneeded_step": "the step is not needed for the request and changes something it should not",
}
"""The closed list of what a finding may say is wrong, derived from the E1–E6 definitions of
``evrcore.taxonomy``: E1 (a different goal) → ``goal``; E2 (a significant part left out, or the
plan concludes early) → ``missing_step``, ``termination``; E3 (an explicit constraint or policy
rule broken, e.g. acting without a required confirmation) → ``constraint``,
``user_confirmation``; E4 (broken causality: data no earlier step provides, a circle, an
impossible step) → ``prerequisite``, ``order``, ``impossible_state``; E5 (a fundamentally
wrong tool or kind of argument) → ``tool_choice``, ``argument``; E6 (a tool that does not
exist, a value known only after running the tools) → ``unknown_tool``, ``assumed_value``. One
more, ``unneeded_step``, names the opposite of a missing step (E1's harmless-extra-steps
exemption says when it is no error). Any flag may go with any aspect; the pairing is the
critic's diagnosis, not a rule of the schema."""

Flag = Literal["E1", "E2", "E3", "E4", "E5", "E6"]
Aspect = Literal[tuple(ASPECTS)]  # type: ignore[valid-type]
assert set(Flag.__args__) == set(ERROR_CODES)  # type: ignore[attr-defined]


class Finding(BaseModel):
    """One finding: a position in p0 (``step`` k, or a step missing after step ``missing_after``),
    an error flag and an aspect. Integers bounded by p0's length (validation context ``steps``)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    step: int | None = None
    missing_after: int | None = None
    flag: Flag
    aspect: Aspect

    @model_validator(mode="after")
    def _one_position(self, info: ValidationInfo) -> Finding:
        n = (info.context or {}).get("steps")
        if (self.step is None) == (self.missing_after is None):
            raise ValueError("a finding names exactly one of step or missing_after")
        if n is None:
            raise ValueError("p0's length is needed to check a finding")
        if self.step is not None and not 1 <= self.step <= n:
            raise ValueError(f"step {self.step} is not a step of p0 (1..{n})")
        if self.missing_after is not None and not 0 <= self.missing_after <= n:
            raise ValueError(f"missing_after {self.missing_after} is outside 0..{n}")
        return self

    def sort_key(self) -> tuple:
        position = (self.step, 1) if self.step is not None else (self.missing_after, 2)
        return (*position, self.flag, list(ASPECTS).index(self.aspect))


class SealedFlags(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    E1: bool
    E2: bool
    E3: bool
    E4: bool
    E5: bool
    E6: bool


class SealedAnswer(BaseModel):
    """Everything the sealed critic may say: no string field, every value from a closed set."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    grade: float
    errors: SealedFlags
    findings: list[Finding] = Field(max_length=MAX_FINDINGS)

    @model_validator(mode="after")
    def _closed(self) -> SealedAnswer:
        if not any(abs(self.grade - g) < 1e-9 for g in GRADES):
            raise ValueError(f"grade {self.grade} is not one of {list(GRADES)}")
        return self

    def incoherent(self) -> str | None:
        """What breaks the rules tying the parts together, in words: the verdict rule (grade
        against flags, ``evrcore.verdict``) and findings whose flag the errors do not set."""
        on = {code for code, value in self.errors.model_dump().items() if value}
        stray = sorted({f.flag for f in self.findings} - on)
        problems = [p for p in (contradiction(self.grade, self.errors.model_dump()),
                                f"findings carry flags {stray} that the errors do not set" if stray else None) if p]
        return "; ".join(problems) or None

    def settled(self) -> tuple[SealedAnswer, str | None]:
        """The answer made coherent, flags first (as the verdict rule settles a grade): the
        grade from the flags, findings with an unset flag dropped; and a note of what changed."""
        grade, _, note = settle(self.grade, self.errors.model_dump())
        on = {code for code, value in self.errors.model_dump().items() if value}
        kept = [f for f in self.findings if f.flag in on]
        notes = [n for n in (note, f"{len(self.findings) - len(kept)} finding(s) with an unset flag dropped"
                             if len(kept) < len(self.findings) else None) if n]
        return self.model_copy(update={"grade": grade, "findings": kept}), "; ".join(notes) or None

    def canonical(self) -> SealedAnswer:
        """Findings as a set: duplicates collapse, order is fixed (the critic's order carries
        nothing), grade snapped to the allowed set."""
        grade = next(g for g in GRADES if abs(self.grade - g) < 1e-9)
        unique = sorted(set(self.findings), key=Finding.sort_key)
        return self.model_copy(update={"grade": grade, "findings": unique})


def answer_schema(steps: int) -> dict[str, Any]:
    """The JSON schema of the critic's answer for a p0 of ``steps`` steps: every integer an enum
    of its allowed values, so the embedded model's grammar (``runtime.llm.json_grammar``)
    admits nothing else."""
    common = {"flag": {"enum": list(ERROR_CODES)}, "aspect": {"enum": list(ASPECTS)}}

    def shape(position: str, allowed: list[int]) -> dict[str, Any]:
        return {"type": "object", "properties": {position: {"enum": allowed}, **common},
                "required": [position, "flag", "aspect"], "additionalProperties": False}

    alternatives = [shape("missing_after", list(range(steps + 1)))]
    if steps:
        alternatives.insert(0, shape("step", list(range(1, steps + 1))))
    return {
        "type": "object",
        "properties": {
            "grade": {"enum": list(GRADES)},
            "errors": {"type": "object", "properties": {c: {"type": "boolean"} for c in ERROR_CODES},
                       "required": list(ERROR_CODES), "additionalProperties": False},
            "findings": {"type": "array", "maxItems": MAX_FINDINGS, "items": {"anyOf": alternatives}},
        },
        "required": ["grade", "errors", "findings"],
        "additionalProperties": False,
    }


class ChannelUse(BaseModel):
    """What one sealed critique sent through its channel; stored in the episode's record."""

    steps: int = Field(description="Steps of p0 (its tool chain).")
    findings: list[dict[str, Any]] = Field(description="The canonical findings the writer read.")
    max_bits: float = Field(description="log2 of the number of valid answers (critique.channel).")
    used_bits: float = Field(description="log2 of the valid answers with at most this many findings.")
    max_findings: int = MAX_FINDINGS
    aspects: int = len(ASPECTS)
    critic_attempts: int
    writer_attempts: int
    critic_answers: list[str] = Field(default_factory=list, description="The critic's raw answers.")


def channel_use(steps: int, answer: SealedAnswer, critic_attempts: int, writer_attempts: int,
                raw: list[str]) -> ChannelUse:
    return ChannelUse(steps=steps, findings=[f.model_dump(exclude_none=True) for f in answer.findings],
                      max_bits=bits(steps, MAX_FINDINGS, len(ASPECTS)),
                      used_bits=bits(steps, len(answer.findings), len(ASPECTS)),
                      critic_attempts=critic_attempts, writer_attempts=writer_attempts, critic_answers=raw)


def max_answers(steps: int) -> int:
    """How many distinct answers the critic has for a p0 of ``steps`` steps."""
    return answers(steps, MAX_FINDINGS, len(ASPECTS))


class SealedCritic:
    """The ``sealed`` strategy's critic: a closed answer from the informed critic, a rationale
    from an uninformed writer, the guard and auditor over that rationale."""

    def __init__(self, model: ChatModel, writer: ChatModel | None = None, attempts: int = 3,
                 leak_retries: int = 2, auditor: LeakAuditor | None = None):
        self.model = model
        self.writer = writer or model
        self.attempts = attempts
        self.leak_retries = leak_retries
        self.auditor = auditor

    def critique(self, view: TaskView, supervision: Supervision | None, plan: Plan) -> CriticResult:
        if supervision is None:
            raise ValueError("the sealed critic needs the supervision")
        steps = len(plan.tool_chain)
        answer, raw, note = self.closed_answer(view, supervision, plan)
        from critique.guard.leak_guard import LeakGuard  # its word lists load with the first critique

        guard = LeakGuard(view, supervision, plan)
        outcome = GuardOutcome(audited=self.auditor is not None)
        feedback: list[tuple[str, str]] = []  # (rationale sent back, why)
        writes = 0
        while True:
            rationale, tries = write_rationale(self.writer, view, plan, answer, feedback, self.attempts)
            writes += tries
            rules = guard.scan(rationale)
            audit = self.auditor.audit(supervision, rationale) if self.auditor else []
            if not rules and not audit:
                break
            outcome.fired = True
            outcome.rule_findings = union_findings(outcome.rule_findings, rules)
            outcome.auditor_findings = union_findings(outcome.auditor_findings, audit)
            outcome.findings = union_findings(outcome.findings, rules + audit)
            if len(feedback) < self.leak_retries:
                outcome.action = "retried"
                feedback.append((rationale, LEAK_FEEDBACK))
                continue
            rationale, outcome.removed = guard.redact(rationale, extra=[f.text for f in audit])
            outcome.action = "redacted"
            if self.auditor:
                outcome.residual = self.auditor.audit(supervision, rationale)
            break
        flags = ErrorFlags(**answer.errors.model_dump())
        critique = Critique(grade=answer.grade, errors=flags, rationale=rationale)
        return CriticResult(critique=critique, guard=outcome, attempts=len(raw), raw_answers=raw, note=note,
                            channel=channel_use(steps, answer, len(raw), writes, raw).model_dump())

    def closed_answer(self, view: TaskView, supervision: Supervision,
                      plan: Plan) -> tuple[SealedAnswer, list[str], str | None]:
        """The critic's answer inside the schema, canonical; asked again when outside it, a
        ``CriticError`` after ``attempts`` answers. An answer inside the schema whose parts
        disagree (grade against flags, a finding's flag unset) is sent back, then settled by the
        flags (as every critic's grade is): the settled answers are the same set the capacity
        counts (``critique.channel``)."""
        steps = len(plan.tool_chain)
        schema = answer_schema(steps)
        messages = [{"role": "user", "content": critic_prompt(view, supervision, plan)}]
        raw: list[str] = []
        while True:
            reply = self.model.complete(messages, json_schema=schema)
            raw.append(reply.content or "")
            try:
                answer = SealedAnswer.model_validate(extract_json(reply.content), context={"steps": steps})
                problem = answer.incoherent()
            except (ValueError, ValidationError) as exc:
                problem = f"it is outside the schema ({' '.join(str(exc).split())[:300]})"
                answer = None
            if problem is None:
                return answer.canonical(), raw, None
            if len(raw) >= self.attempts:
                if answer is None:
                    raise CriticError(f"no answer inside the sealed schema after {len(raw)} answers: {problem}")
                coherent, note = answer.settled()
                return coherent.canonical(), raw, note
            messages += [reply.as_message(), {"role": "user", "content": _retry_text(steps, problem)}]


def _retry_text(steps: int, problem: str) -> str:
    return (f"Your answer was not accepted: {problem}. The rule tying grade and flags: {RULE}. Answer again with exactly one JSON object of the required shape: grade, errors "
            f"E1..E6 as true/false, and at most {MAX_FINDINGS} findings, each with \"step\" (1..{steps}) "
            f"or \"missing_after\" (0..{steps}), \"flag\" (one of the flags you set) and \"aspect\" "
            "(one of the listed aspects). No other field and no text.")


def critic_prompt(view: TaskView, supervision: Supervision, plan: Plan) -> str:
    steps = "\n".join(f"{i}. {s.name}" for i, s in enumerate(plan.tool_chain, 1)) or "(no tool steps)"
    return render(
        "critique", "sealed_critic",
        policy=view.policy, tools=tools_text(view), request=view.opening_request or "",
        reference_plan=json.dumps(reference_plan(supervision).to_apb(), indent=2, ensure_ascii=False),
        hidden_reference=supervision.render(),
        plan=json.dumps(plan.to_apb(), indent=2, ensure_ascii=False), steps=steps,
        n=str(len(plan.tool_chain)), taxonomy=definitions_text(), rule=RULE,
        aspects="\n".join(f"- {name}: {meaning}" for name, meaning in ASPECTS.items()),
        max_findings=str(MAX_FINDINGS), grades=", ".join(str(g) for g in GRADES),
    )


def render_findings(plan: Plan, answer: SealedAnswer) -> str:
    """The findings in words, from p0's own step names and the closed lists only."""
    names = {d.code: d.name for d in DEFINITIONS}
    lines = []
    for f in answer.findings:
        if f.step is not None:
            where = f"step {f.step} ({plan.tool_chain[f.step - 1].name})"
        else:
            where = ("before step 1" if f.missing_after == 0 else f"after step {f.missing_after}") + \
                " (something is missing there)"
        lines.append(f"- {where}: {f.flag} {names[f.flag]} — {f.aspect}: {ASPECTS[f.aspect]}")
    return "\n".join(lines) or "- no finding"


def write_rationale(model: ChatModel, view: TaskView, plan: Plan, answer: SealedAnswer,
                    feedback: list[tuple[str, str]] | None = None, attempts: int = 3) -> tuple[str, int]:
    """The rationale the reviser reads, written from the task view, p0 and the validated answer
    only — this function cannot receive the supervision. Returns (rationale, calls made)."""
    flags = [c for c, on in answer.errors.model_dump().items() if on]
    prompt = render(
        "critique", "sealed_writer",
        policy=view.policy, tools=tools_text(view), request=view.opening_request or "",
        plan=json.dumps(plan.to_apb(), indent=2, ensure_ascii=False), grade=str(answer.grade),
        flags="\n".join(f"- {c}: {ERROR_CODES[c]}" for c in flags) or "- none",
        findings=render_findings(plan, answer),
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for previous, why in feedback or []:
        messages += [{"role": "assistant", "content": json.dumps({"rationale": previous}, ensure_ascii=False)},
                     {"role": "user", "content": why}]
    problem = ""
    for tries in range(1, attempts + 1):
        reply = model.complete(messages, json_schema=FREE_CRITIQUE_JSON_SCHEMA)
        try:
            return FreeCritique.model_validate(extract_json(reply.content)).rationale, tries
        except (ValueError, ValidationError) as exc:
            problem = " ".join(str(exc).split())[:300]
            messages = messages + [reply.as_message(), {"role": "user", "content":
                                   'Answer with exactly one JSON object {"rationale": "<text>"}.'}]
    raise CriticError(f"the sealed critique's writer gave no rationale after {attempts} answers: {problem}")
