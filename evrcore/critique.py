"""The critic's closed output schema: a Plan Grade, six error flags and a rationale — nothing else.

Closing the schema (extra fields rejected, grades from a fixed set) is the first half of the
anti-leak contract; the leak guard (``critique.guard.leak_guard``) checks the rationale's content.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evrcore.taxonomy import ERROR_CODES  # E1–E6, each with its source, written there once
from evrcore.verdict import contradiction

GRADES: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)

Reviewer = Literal["self", "critic", "critic-with-reference"]
"""Who wrote a critique: the tested model about its own plan, a critic model that sees what the
planner saw, or a critic model that also saw the hidden reference."""

REVIEWERS: dict[str, str] = {
    "self": "You reviewed the current plan yourself, with the same information you have now "
    "(you have not seen how the task is judged):",
    "critic": "A separate reviewer assessed the current plan. It saw the same task information as "
    "you do and nothing more; it has not seen how the task is judged:",
    "critic-with-reference": "A separate reviewer who can see how this task is judged assessed the "
    "current plan. It was asked to diagnose problems without revealing the reference solution:",
}
"""How the reviser is told who critiqued, so a self-review is not presented as an informed one."""


def check_grade(cls, value: float) -> float:
    """Snap a grade to the allowed set, or reject it."""
    for g in GRADES:
        if abs(value - g) < 1e-9:
            return g
    raise ValueError(f"grade {value} is not one of {list(GRADES)}")


class ErrorFlags(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    E1: bool
    E2: bool
    E3: bool
    E4: bool
    E5: bool
    E6: bool

    def active(self) -> list[str]:
        return [code for code in ERROR_CODES if getattr(self, code)]

    def as_dict(self) -> dict[str, bool]:
        return {code: getattr(self, code) for code in ERROR_CODES}

    def as_list(self) -> list[int]:
        """APB's ``error_list``: six 0/1 integers, E1 first."""
        return [int(getattr(self, code)) for code in ERROR_CODES]

    @classmethod
    def from_list(cls, flags: list[int]) -> "ErrorFlags":
        if len(flags) != len(ERROR_CODES) or any(f not in (0, 1) for f in flags):
            raise ValueError(f"error_list must hold six 0/1 flags, got {flags}")
        return cls(**{code: bool(f) for code, f in zip(ERROR_CODES, flags)})


class Critique(BaseModel):
    """What the critic may say about a plan."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    grade: float = Field(description="Plan Grade, one of 0, 0.2, 0.4, 0.6, 0.8, 1.0.")
    errors: ErrorFlags
    rationale: str

    _grade = field_validator("grade")(check_grade)

    def contradiction(self) -> str | None:
        """Where grade and flags break the rule (``evrcore.verdict``); ``None`` when they agree."""
        return contradiction(self.grade, self.errors.as_dict())

    def render(self) -> str:
        """The critique as the reviser reads it."""
        flags = self.errors.active()
        flag_text = (
            "\n".join(f"- {c}: {ERROR_CODES[c]}" for c in flags) if flags else "- none"
        )
        return f"Plan grade: {self.grade}\nError flags:\n{flag_text}\nRationale: {self.rationale}"


class FreeCritique(BaseModel):
    """A critique without the taxonomy: only a rationale (the "no-metric" ablations)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rationale: str

    def render(self) -> str:
        return f"Review: {self.rationale}"


AnyCritique = Critique | FreeCritique

FREE_CRITIQUE_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"rationale": {"type": "string"}},
    "required": ["rationale"],
    "additionalProperties": False,
}

CRITIQUE_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "grade": {"enum": list(GRADES)},
        "errors": {
            "type": "object",
            "properties": {code: {"type": "boolean"} for code in ERROR_CODES},
            "required": list(ERROR_CODES),
            "additionalProperties": False,
        },
        "rationale": {"type": "string"},
    },
    "required": ["grade", "errors", "rationale"],
    "additionalProperties": False,
}
