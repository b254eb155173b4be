"""The plan judge: an LLM-as-judge with the reference, in the APB benchmark's own JSON.

It answers ``{"is_correct", "grade", "error_list": [six 0/1 flags E1..E6], "reasoning"}`` for a
plan, so "p0 → p1" metrics can be compared with APB's tools. It judges solvability, goal and
constraint satisfaction, valid tool use and feasible data dependencies — not similarity to the
reference path. A judge that cannot answer in the schema is retried, then recorded as failed;
it never fails the episode (the judge measures, it does not act).
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

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

    def errors(self) -> dict[str, bool]:
        return {code: bool(flag) for code, flag in zip(ERROR_CODES, self.error_list)}


class JudgeResult(BaseModel):
    judgement: PlanJudgement | None = None
    attempts: int
    failure: str | None = None


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
            plan=json.dumps(plan.to_apb(), indent=2),
            errors="\n".join(f"{i}. {c}: {d}" for i, (c, d) in enumerate(ERROR_CODES.items(), 1)),
            grades=", ".join(str(g) for g in GRADES),
        )
        messages = [{"role": "user", "content": prompt}]
        problem = ""
        for attempt in range(1, self.attempts + 1):
            reply = self.model.complete(messages, json_schema=JUDGE_JSON_SCHEMA)
            try:
                return JudgeResult(judgement=PlanJudgement.model_validate(extract_json(reply.content)),
                                   attempts=attempt)
            except (ValueError, ValidationError) as exc:
                problem = " ".join(str(exc).split())[:300]
                messages += [reply.as_message(), {"role": "user", "content": (
                    f"That answer does not match the format ({problem}). Answer with exactly one JSON "
                    'object {"is_correct": bool, "grade": one of ' + ", ".join(str(g) for g in GRADES)
                    + ', "error_list": [six 0/1 flags], "reasoning": "..."} and no other fields.')}]
        return JudgeResult(attempts=self.attempts, failure=problem)
