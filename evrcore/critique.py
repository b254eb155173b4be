"""The critic's closed output schema: a Plan Grade, six error flags and a rationale — nothing else.

Closing the schema (extra fields rejected, grades from a fixed set) is the first half of the
anti-leak contract; the leak guard (``critique.leak_guard``) checks the rationale's content.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

GRADES: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)

ERROR_CODES: dict[str, str] = {
    "E1": "goal understanding: the plan pursues a different goal than the user's",
    "E2": "premature conclusion / task incompleteness: the plan stops before the goal is met",
    "E3": "constraint violation: the plan breaks a policy rule or a user constraint",
    "E4": "logic error: a causal defect (wrong order, missing dependency), not mere deviation "
    "from some other valid path",
    "E5": "tool-use error: wrong tool, wrong or missing arguments, non-existent tool",
    "E6": "hallucination: invents facts, values or results the agent has not obtained",
}


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


class Critique(BaseModel):
    """What the critic may say about a plan."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    grade: float = Field(description="Plan Grade, one of 0, 0.2, 0.4, 0.6, 0.8, 1.0.")
    errors: ErrorFlags
    rationale: str

    _grade = field_validator("grade")(check_grade)

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
