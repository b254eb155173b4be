"""The one rule tying a verdict's grade, its E1–E6 flags and ``is_correct`` together.

    grade 1.0  ⇔  no flag set  ⇔  is_correct;   a plan with any flag set gets at most 0.8.

APB's per-dataset judges state it (``is_correct`` true exactly when ``error_list`` is all zeros,
1.0 only when every error is 0); its released holistic judge does not, and judges that are not
told it answer "grade 1.0, E1 set". The plan judge and the critic both check their answers
against it: a contradictory answer is sent back, and one still contradictory on the last
attempt is settled here, flags first (they are the diagnosis; a grade or a yes/no cannot say
which error a plan made), with a note saying what was changed. Reports count the notes.
"""

from __future__ import annotations

from typing import Mapping

TOP = 1.0
FLAGGED_MAX = 0.8

RULE = ("grade 1.0 if and only if no error flag is set, if and only if the plan is correct; a plan "
        "with any flag set is not correct and gets at most 0.8 (0.8 a minor flaw, 0.6 the main flow "
        "right but a sub-task missed or one logical gap, 0.4 a fatal logic break or a major "
        "hallucination, 0.2 or 0.0 it fails)")
"""The rule in the words the judge and the critic are given."""


def _set(flags: Mapping[str, bool]) -> list[str]:
    return [code for code, on in flags.items() if on]


def contradiction(grade: float, flags: Mapping[str, bool], is_correct: bool | None = None) -> str | None:
    """What in this verdict breaks the rule, in words; ``None`` when it holds."""
    on = _set(flags)
    problems = []
    if is_correct is not None and is_correct == bool(on):
        problems.append(f"is_correct is {str(is_correct).lower()} with "
                        + (f"{', '.join(on)} set" if on else "no flag set"))
    if on and grade > FLAGGED_MAX:
        problems.append(f"grade {grade} with {', '.join(on)} set (a flagged plan gets at most {FLAGGED_MAX})")
    if not on and grade != TOP:
        problems.append(f"grade {grade} with no flag set (a plan with no flag gets {TOP})")
    return "; ".join(problems) or None


def settle(grade: float, flags: Mapping[str, bool],
           is_correct: bool | None = None) -> tuple[float, bool, str | None]:
    """(grade, is_correct, note): the verdict made to hold the rule, flags kept as they are;
    the note says what was changed (``None`` when nothing was)."""
    problem = contradiction(grade, flags, is_correct)
    on = bool(_set(flags))
    if problem is None:
        return grade, not on, None
    fixed = min(grade, FLAGGED_MAX) if on else TOP
    changes = []
    if fixed != grade:
        changes.append(f"grade {grade} → {fixed}")
    if is_correct is not None and is_correct != (not on):
        changes.append(f"is_correct {str(is_correct).lower()} → {str(not on).lower()}")
    return fixed, not on, f"{problem}; settled by the flags: {', '.join(changes)}"
