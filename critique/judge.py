"""The plan judge: an LLM-as-judge with the reference, giving APB's plan judgement.

It reads what APB's holistic judge reads — the query, the full tool schemas, a reference plan and
tool chain (``critique.reference``, derived from the benchmark's reference actions) — plus the
policy and the benchmark-specific supervision (outcome checks, the simulated user's hidden
instructions), and answers ``{"is_correct", "grade", "errors": {E1..E6: bool}, "reasoning"}``.
The flags are an object of six booleans, not APB's ``error_list`` array, because every
structured-output mode enforces an object's required keys while some drop an array's length
limits; ``runtime.reports.apb_export`` writes ``error_list`` for APB's tools. Stored judgements
in the older ``error_list`` shape are still read.

Grade, flags and ``is_correct`` must satisfy ``evrcore.verdict``'s rule: a contradictory answer
is sent back, and one still contradictory on the last attempt is settled by its flags with a
note on the result. A judge that cannot answer in the schema is retried, then recorded as
failed; it never fails the episode (the judge measures, it does not act).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from critique.reference import reference_plan, tools_text
from envs.base import Supervision, TaskView
from evrcore.chat import ChatModel, extract_json
from evrcore.critique import ERROR_CODES, GRADES, ErrorFlags, check_grade
from evrcore.plan import Plan
from evrcore.prompts import render
from evrcore.taxonomy import definitions_text
from evrcore.verdict import RULE, contradiction, settle


class PlanJudgement(BaseModel):
    """APB's plan judgement, closed; the flags as six named booleans."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    is_correct: bool
    grade: float
    errors: ErrorFlags
    reasoning: str

    _grade = field_validator("grade")(check_grade)

    @model_validator(mode="before")
    @classmethod
    def _from_error_list(cls, data: Any) -> Any:
        """A judgement stored (or answered) in APB's ``error_list`` shape."""
        if isinstance(data, dict) and "error_list" in data and "errors" not in data:
            data = dict(data)
            flags = data.pop("error_list")
            if not isinstance(flags, list):
                raise ValueError(f"error_list must hold six 0/1 flags, got {flags!r}")
            data["errors"] = ErrorFlags.from_list(flags)
        return data

    def contradiction(self) -> str | None:
        return contradiction(self.grade, self.errors.as_dict(), self.is_correct)

    def consistent(self) -> bool:
        return self.contradiction() is None

    def error_list(self) -> list[int]:
        return self.errors.as_list()

    def to_apb(self) -> dict[str, Any]:
        """APB's judgement: ``{"is_correct", "grade", "error_list", "reasoning"}``."""
        return {"is_correct": self.is_correct, "grade": self.grade, "error_list": self.error_list(),
                "reasoning": self.reasoning}


class JudgeResult(BaseModel):
    judgement: PlanJudgement | None = None
    attempts: int
    failure: str | None = None
    note: str | None = Field(default=None, description="What was settled by the verdict rule, when "
                             "anything was (the judge's last answer, or a judgement stored before "
                             "the rule was enforced).")

    @model_validator(mode="after")
    def _settled(self) -> "JudgeResult":
        j = self.judgement
        if j is not None and not j.consistent():
            grade, correct, note = settle(j.grade, j.errors.as_dict(), j.is_correct)
            self.judgement = j.model_copy(update={"grade": grade, "is_correct": correct})
            self.note = (self.note + "; " if self.note else "") + (note or "")
        return self


def read_judgement(stored: dict[str, Any] | None) -> JudgeResult | None:
    """A stored judge result (either flag shape) as a settled ``JudgeResult``; ``None`` when
    absent or unreadable."""
    if not stored:
        return None
    try:
        return JudgeResult.model_validate(stored)
    except ValidationError:
        return None


JUDGE_JSON_SCHEMA = {
    "type": "object",
    "properties": {
        "is_correct": {"type": "boolean"},
        "grade": {"enum": list(GRADES)},
        "errors": {
            "type": "object",
            "properties": {code: {"type": "boolean"} for code in ERROR_CODES},
            "required": list(ERROR_CODES),
            "additionalProperties": False,
        },
        "reasoning": {"type": "string"},
    },
    "required": ["is_correct", "grade", "errors", "reasoning"],
    "additionalProperties": False,
}

_SHAPE = ('{"is_correct": true|false, "grade": <one of ' + ", ".join(str(g) for g in GRADES)
          + '>, "errors": {"E1": true|false, "E2": ..., "E3": ..., "E4": ..., "E5": ..., "E6": ...}, '
          '"reasoning": "<why>"}')


class PlanJudge:
    def __init__(self, model: ChatModel, attempts: int = 3):
        self.model = model
        self.attempts = attempts

    def prompt(self, view: TaskView, supervision: Supervision, plan: Plan) -> str:
        return render(
            "critique", "judge",
            policy=view.policy,
            tools=tools_text(view),
            request=view.opening_request or "",
            reference=json.dumps(reference_plan(supervision).to_apb(), indent=2, ensure_ascii=False),
            supervision=supervision.render(),
            plan=json.dumps(plan.to_apb(), indent=2, ensure_ascii=False),
            errors=definitions_text(numbered=True),
            rule=RULE,
            answer=_SHAPE,
        )

    def judge(self, view: TaskView, supervision: Supervision, plan: Plan) -> JudgeResult:
        messages: list[dict[str, Any]] = [{"role": "user", "content": self.prompt(view, supervision, plan)}]
        problem = ""
        for attempt in range(1, self.attempts + 1):
            reply = self.model.complete(messages, json_schema=JUDGE_JSON_SCHEMA)
            try:
                judgement = PlanJudgement.model_validate(extract_json(reply.content))
            except (ValueError, ValidationError) as exc:
                problem = " ".join(str(exc).split())[:300]
                feedback = (f"That answer does not match the format ({problem}). Answer with exactly "
                            f"one JSON object {_SHAPE} and no other fields.")
            else:
                contradicts = judgement.contradiction()
                if contradicts is None or attempt == self.attempts:
                    return JudgeResult(judgement=judgement, attempts=attempt)  # settled if needed
                feedback = (f"Your answer contradicts itself: {contradicts}. The rule: {RULE}. "
                            f"Answer again with exactly one JSON object {_SHAPE}.")
            messages += [reply.as_message(), {"role": "user", "content": feedback}]
        return JudgeResult(attempts=self.attempts, failure=problem)
