"""The sealed critique: the critic that sees the supervision answers in enums and bounded
integers only, and nothing that saw the supervision edits the text the reviser reads.

Why: a free-text rationale under an anti-leak instruction can point at the answer without
stating a value ("the only credit card on file", "the third order"), and no list of rules
reaches every such phrasing. Here what the critic knew reaches the tested model only through
its answer — grade, E1–E6 and at most K findings (``SealedOptions.findings``), each a position
in p0, a flag and an aspect — whose capacity in bits ``critique.channel`` computes. That bound
holds end to end because every later step is a function of the counted answer and what the
tested model already has:

* the rationale is, by default, a deterministic rendering of the canonical answer from p0's own
  step names and the closed definitions of flags and aspects (no model call); optionally the
  tested model's own model writes it from the same inputs. No writer runs on the critic's model:
  a writer that could share a code with the critic would widen the channel without a limit.
* the rules guard and the leak auditor, which see the supervision, only *measure* the sealed
  text (what they would have flagged is recorded); if asked to act they may only replace the
  whole rationale by the rendering, one more bit that the capacity counts.

An answer outside the schema (not one plain JSON object, too large, nested too deep, a field or
value the schema lacks) is asked again, then the critique fails as a ``SealedAnswerRefused``
whose message names the field and rule and never the critic's strings; the critic's raw answers
are not kept.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from critique.bounded_json import OutsideSchema, validated
from critique.channel import answers, bits
from critique.critic import CriticError, CriticResult
from critique.guard.auditor import AuditorError, LeakAuditor
from critique.guard.guard_outcome import GuardOutcome, union_findings
from critique.reference import reference_plan, tools_text
from critique.sealed_options import MAX_FINDINGS, SealedOptions
from envs.base import Supervision, TaskView
from evrcore.chat import ChatModel
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
        if self.step is not None and not 1 <= self.step <= n:  # the value is never quoted
            raise ValueError(f"step is not a step of p0 (1..{n})")
        if self.missing_after is not None and not 0 <= self.missing_after <= n:
            raise ValueError(f"missing_after is outside 0..{n}")
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
    def _closed(self, info: ValidationInfo) -> SealedAnswer:
        if not any(abs(self.grade - g) < 1e-9 for g in GRADES):
            raise ValueError(f"grade is not one of {list(GRADES)}")
        cap = (info.context or {}).get("max_findings", MAX_FINDINGS)
        if len(self.findings) > cap:
            raise ValueError(f"findings holds more than the {cap} allowed")
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


def answer_schema(steps: int, max_findings: int = MAX_FINDINGS) -> dict[str, Any]:
    """The JSON schema of the critic's answer for a p0 of ``steps`` steps and at most
    ``max_findings`` findings: every integer an enum
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
            "findings": {"type": "array", "maxItems": max_findings, "items": {"anyOf": alternatives}},
        },
        "required": ["grade", "errors", "findings"],
        "additionalProperties": False,
    }


class ChannelUse(BaseModel):
    """What one sealed critique sent through its channel; stored in the episode's record. The
    critic's raw answers are not kept (they may hold supervision text)."""

    steps: int = Field(description="Steps of p0 (its tool chain).")
    findings: list[dict[str, Any]] = Field(description="The canonical findings the rationale words.")
    max_bits: float = Field(description="The end-to-end bound: log2 of the number of valid answers "
                            "(critique.channel), plus the guard's choice bit where it may replace.")
    used_bits: float = Field(description="The same with findings capped at this answer's count.")
    max_findings: int = MAX_FINDINGS
    aspects: int = len(ASPECTS)
    writer: str = Field(default="rendered", description="Who worded the rationale: rendered (no "
                        "model) or tested (the tested model's own model).")
    guard: str = Field(default="measure", description="What the guard and auditor may do: measure "
                       "(never edit) or replace (the whole text by the rendering).")
    replaced: bool = Field(default=False, description="Whether the guard replaced the rationale.")
    critic_attempts: int
    writer_attempts: int


def channel_use(steps: int, answer: SealedAnswer, options: SealedOptions, critic_attempts: int,
                writer_attempts: int, replaced: bool = False) -> ChannelUse:
    extra = options.choice_bits
    return ChannelUse(steps=steps, findings=[f.model_dump(exclude_none=True) for f in answer.findings],
                      max_bits=round(bits(steps, options.findings, len(ASPECTS)) + extra, 2),
                      used_bits=round(bits(steps, len(answer.findings), len(ASPECTS)) + extra, 2),
                      max_findings=options.findings, writer=options.writer, guard=options.guard,
                      replaced=replaced, critic_attempts=critic_attempts, writer_attempts=writer_attempts)


def max_answers(steps: int, max_findings: int = MAX_FINDINGS) -> int:
    """How many distinct answers the critic has for a p0 of ``steps`` steps."""
    return answers(steps, max_findings, len(ASPECTS))


class SealedAnswerRefused(CriticError):
    """The sealed critic gave no answer inside the closed schema within its attempts; the
    message names the rule broken, never the answer."""


class SealedCritic:
    """The ``sealed`` strategy's critic: a closed answer from the informed critic; the rationale
    rendered from it (or written by the tested model's own model); the guard and the auditor
    measure that text and never edit it (``SealedOptions.guard``)."""

    def __init__(self, model: ChatModel, writer: ChatModel | None = None, attempts: int = 3,
                 auditor: LeakAuditor | None = None, options: SealedOptions | None = None):
        self.options = options or SealedOptions()
        if self.options.writer == "tested" and writer is None:
            raise ValueError("the tested writer needs a client of the tested model")
        self.model = model
        self.writer = writer
        self.attempts = attempts
        self.auditor = auditor

    def critique(self, view: TaskView, supervision: Supervision | None, plan: Plan) -> CriticResult:
        if supervision is None:
            raise ValueError("the sealed critic needs the supervision")
        steps = len(plan.tool_chain)
        answer, attempts, note = self.closed_answer(view, supervision, plan)
        rendered = render_rationale(plan, answer)
        rationale, writes = rendered, 0
        if self.options.writer == "tested":
            rationale, writes = write_rationale(self.writer, view, plan, answer, attempts=self.attempts)
        outcome = self.measure(view, supervision, plan, rationale)
        replaced = False
        if outcome.fired and self.options.guard == "replace" and rationale != rendered:
            replaced, rationale, outcome.action = True, rendered, "replaced"
        flags = ErrorFlags(**answer.errors.model_dump())
        critique = Critique(grade=answer.grade, errors=flags, rationale=rationale)
        return CriticResult(critique=critique, guard=outcome, attempts=attempts, note=note,
                            channel=channel_use(steps, answer, self.options, attempts, writes,
                                                replaced).model_dump())

    def measure(self, view: TaskView, supervision: Supervision, plan: Plan, rationale: str) -> GuardOutcome:
        """What the rules and the auditor would have flagged in ``rationale``, recorded only."""
        from critique.guard.leak_guard import LeakGuard  # its word lists load with the first critique

        outcome = GuardOutcome(audited=self.auditor is not None)
        rules = LeakGuard(view, supervision, plan).scan(rationale)
        audit = []
        if self.auditor is not None:
            try:
                audit = self.auditor.audit(supervision, rationale)
            except AuditorError:  # a measurement that failed: recorded, the critique stands
                outcome.audited, outcome.audit_failed = False, True
        if rules or audit:
            outcome.fired, outcome.action = True, "measured"
            outcome.rule_findings, outcome.auditor_findings = rules, audit
            outcome.findings = union_findings(rules, audit)
        return outcome

    def closed_answer(self, view: TaskView, supervision: Supervision,
                      plan: Plan) -> tuple[SealedAnswer, int, str | None]:
        """The critic's answer inside the schema, canonical, and how many answers it took; asked
        again when outside it, a ``SealedAnswerRefused`` after ``attempts`` answers. An answer
        inside the schema whose parts disagree (grade against flags, a finding's flag unset) is
        sent back, then settled by the flags (as every critic's grade is): the settled answers
        are the same set the capacity counts (``critique.channel``)."""
        steps, cap = len(plan.tool_chain), self.options.findings
        schema = answer_schema(steps, cap)
        messages = [{"role": "user", "content": critic_prompt(view, supervision, plan, cap)}]
        attempts = 0
        while True:
            reply = self.model.complete(messages, json_schema=schema)
            attempts += 1
            try:
                answer = validated(SealedAnswer, reply.content, context={"steps": steps, "max_findings": cap},
                                   max_chars=ANSWER_CHARS, max_depth=ANSWER_DEPTH)
                problem = answer.incoherent()
            except OutsideSchema as exc:
                problem, answer = f"it is outside the schema ({exc})", None
            if problem is None:
                return answer.canonical(), attempts, None
            if attempts >= self.attempts:
                if answer is None:
                    raise SealedAnswerRefused(f"no answer inside the sealed schema after {attempts} "
                                              f"answers: {problem}")
                coherent, note = answer.settled()
                return coherent.canonical(), attempts, note
            messages += [reply.as_message(), {"role": "user", "content": _retry_text(steps, cap, problem)}]


ANSWER_CHARS = 4_000
"""An answer of six findings is about 600 characters with whitespace; anything far longer is
outside the schema before it is parsed."""
ANSWER_DEPTH = 3
"""The schema's own depth: the answer, its ``findings`` list and ``errors``, one finding."""


def _retry_text(steps: int, cap: int, problem: str) -> str:
    return (f"Your answer was not accepted: {problem}. The rule tying grade and flags: {RULE}. Answer again with exactly one JSON object of the required shape: grade, errors "
            f"E1..E6 as true/false, and at most {cap} findings, each with \"step\" (1..{steps}) "
            f"or \"missing_after\" (0..{steps}), \"flag\" (one of the flags you set) and \"aspect\" "
            "(one of the listed aspects). No other field and no text.")


def critic_prompt(view: TaskView, supervision: Supervision, plan: Plan, max_findings: int = MAX_FINDINGS) -> str:
    steps = "\n".join(f"{i}. {s.name}" for i, s in enumerate(plan.tool_chain, 1)) or "(no tool steps)"
    return render(
        "critique", "sealed_critic",
        policy=view.policy, tools=tools_text(view), request=view.opening_request or "",
        reference_plan=json.dumps(reference_plan(supervision).to_apb(), indent=2, ensure_ascii=False),
        hidden_reference=supervision.render(),
        plan=json.dumps(plan.to_apb(), indent=2, ensure_ascii=False), steps=steps,
        n=str(len(plan.tool_chain)), taxonomy=definitions_text(), rule=RULE,
        aspects="\n".join(f"- {name}: {meaning}" for name, meaning in ASPECTS.items()),
        max_findings=str(max_findings), grades=", ".join(str(g) for g in GRADES),
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
        # the aspect in words ("missing step"): a snake_case name reads as a code to a value rule
        lines.append(f"- {where}: {f.flag} {names[f.flag]} — {f.aspect.replace('_', ' ')}: {ASPECTS[f.aspect]}")
    return "\n".join(lines) or "- no finding"


def render_rationale(plan: Plan, answer: SealedAnswer) -> str:
    """The default rationale: the canonical answer in words, a function of ``plan`` (p0's step
    names) and ``answer`` alone, with no model call — so the text the reviser reads carries
    nothing the counted answer does not."""
    on = [c for c, value in answer.errors.model_dump().items() if value]
    if not on:
        return f"Plan grade {answer.grade:g} of 1: the reviewer flagged no error in this plan."
    flags = "\n".join(f"- {d.code} {d.name}: {d.definition}" for d in DEFINITIONS if d.code in on)
    return (f"Plan grade {answer.grade:g} of 1. The reviewer flagged these kinds of error:\n{flags}\n"
            f"Where in the plan:\n{render_findings(plan, answer)}\n"
            "Revise the plan so that none of these applies; keep the steps no finding names.")


def write_rationale(model: ChatModel, view: TaskView, plan: Plan, answer: SealedAnswer,
                    attempts: int = 3) -> tuple[str, int]:
    """The optional writer (``--sealed-writer tested``): the tested model's own model words the
    rationale from the task view, p0 and the validated answer only — this function cannot
    receive the supervision. Returns (rationale, calls made)."""
    flags = [c for c, on in answer.errors.model_dump().items() if on]
    prompt = render(
        "critique", "sealed_writer",
        policy=view.policy, tools=tools_text(view), request=view.opening_request or "",
        plan=json.dumps(plan.to_apb(), indent=2, ensure_ascii=False), grade=str(answer.grade),
        flags="\n".join(f"- {c}: {ERROR_CODES[c]}" for c in flags) or "- none",
        findings=render_findings(plan, answer),
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    problem = ""
    for tries in range(1, attempts + 1):
        reply = model.complete(messages, json_schema=FREE_CRITIQUE_JSON_SCHEMA)
        try:
            return validated(FreeCritique, reply.content).rationale, tries
        except OutsideSchema as exc:
            problem = str(exc)
            messages = messages + [reply.as_message(), {"role": "user", "content":
                                   'Answer with exactly one JSON object {"rationale": "<text>"}.'}]
    raise CriticError(f"the sealed critique's writer gave no rationale after {attempts} answers: {problem}")
