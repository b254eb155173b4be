"""The plan judge: an LLM-as-judge with the reference, in the APB benchmark's own JSON.

It answers ``{"is_correct", "grade", "error_list": [six 0/1 flags E1..E6], "reasoning"}`` for a
plan, so "p0 → p1" metrics can be compared with APB's tools. It judges solvability, goal and
constraint satisfaction, valid tool use and feasible data dependencies — not similarity to the
reference path. As in APB's rubric, ``is_correct`` is true exactly when every flag is 0: the
prompt says so, an answer that contradicts it is sent back, and one still contradictory on the
last attempt is normalised (``is_correct`` set from the flags) with a note on the result.
A judge that cannot answer in the schema is retried, then recorded as failed; it never fails
the episode (the judge measures, it does not act).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evrcore.critique import ERROR_CODES, GRADES, check_grade
from envs.base import Supervision, TaskView
from evrcore.chat import ChatModel, extract_json
from evrcore.plan import Plan
from evrcore.prompts import render


class PlanJudgement(BaseModel):
    """APB's plan-judgement format, closed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    is_correct: bool
    grade: float
    error_list: list[int] = Field(min_length=6, max_length=6)
    reasoning: str

    _grade = field_validator("grade")(check_grade)

    @field_validator("error_list")
    @classmethod
    def _flags(cls, value: list[int]) -> list[int]:
        if any(v not in (0, 1) for v in value):
            raise ValueError(f"error_list must hold six 0/1 flags, got {value}")
        return value

    def consistent(self) -> bool:
        """APB's rule: correct if and only if no error flag is set."""
        return self.is_correct == (not any(self.error_list))

    def errors(self) -> dict[str, bool]:
        return {code: bool(flag) for code, flag in zip(ERROR_CODES, self.error_list)}


class JudgeResult(BaseModel):
    judgement: PlanJudgement | None = None
    attempts: int
    failure: str | None = None
    note: str | None = Field(default=None, description="What was normalised, when anything was.")

    @model_validator(mode="after")
    def _normalised(self) -> "JudgeResult":
        """A contradictory judgement (stored before the rule was enforced, or the judge's last
        answer) gets ``is_correct`` from its flags, and says so in ``note``."""
        j = self.judgement
        if j is not None and not j.consistent():
            fixed = j.model_copy(update={"is_correct": not any(j.error_list)})
            self.judgement = fixed
            self.note = (self.note + "; " if self.note else "") + contradiction(j)
        return self


def contradiction(judgement: PlanJudgement) -> str:
    return (f"is_correct was {str(judgement.is_correct).lower()} with error_list "
            f"{judgement.error_list}; set to {str(not any(judgement.error_list)).lower()} "
            "(correct if and only if every flag is 0)")


JUDGE_JSON_SCHEMA = {
    "type": "object",
    "properties": {
        "is_correct": {"type": "boolean"},
        "grade": {"enum": list(GRADES)},
        "error_list": {"type": "array", "items": {"enum": [0, 1]}, "minItems": 6, "maxItems": 6},
        "reasoning": {"type": "string"},
    },
    "required": ["is_correct", "grade", "error_list", "reasoning"],
    "additionalProperties": False,
}

_SHAPE = ('{"is_correct": bool, "grade": one of ' + ", ".join(str(g) for g in GRADES)
          + ', "error_list": [six 0/1 flags], "reasoning": "..."}')


class PlanJudge:
    def __init__(self, model: ChatModel, attempts: int = 3):
        self.model = model
        self.attempts = attempts

    def judge(self, view: TaskView, supervision: Supervision, plan: Plan) -> JudgeResult:
        prompt = render(
            "critique", "judge",
            policy=view.policy,
            tools=", ".join(view.tool_names) or "(no tools)",
            request=view.opening_request or "",
            supervision=supervision.render(),
            plan=json.dumps(plan.to_apb(), indent=2, ensure_ascii=False),
            errors="\n".join(f"{i}. {c}: {d}" for i, (c, d) in enumerate(ERROR_CODES.items(), 1)),
            grades=", ".join(str(g) for g in GRADES),
        )
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
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
                if judgement.consistent() or attempt == self.attempts:
                    return JudgeResult(judgement=judgement, attempts=attempt)  # normalised if needed
                feedback = (f"Your answer contradicts itself: is_correct is "
                            f"{str(judgement.is_correct).lower()} but error_list is "
                            f"{judgement.error_list}. is_correct must be true if and only if every "
                            f"flag is 0. Answer again with exactly one JSON object {_SHAPE}.")
            messages += [reply.as_message(), {"role": "user", "content": feedback}]
        return JudgeResult(attempts=self.attempts, failure=problem)
