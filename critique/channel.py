"""The sealed critique's channel capacity in bits: how much of what the critic knew can reach
the tested model at most, and how much one answer used.

The critic of the ``sealed`` strategy (``critique.sealed``) answers in a closed schema: a grade,
six error flags and a *set* of at most ``MAX_FINDINGS`` findings, each a position in p0, an
error flag and an aspect. Everything the tested model later reads (the writer's rationale, the
grade and flags the reviser sees) is a function of that answer, the task view and p0, none of
which the supervision shapes except through the answer. So the number of distinct valid answers
bounds what the supervision can tell the tested model: ``log2`` of it, in bits.

Counting (exact, for the schema as ``critique.sealed`` validates it):

* grade and flags obey the verdict rule (``evrcore.verdict``): no flag set ⇔ grade 1.0; with
  ``s ≥ 1`` flags set the grade is one of the 5 grades below 1.0. 1 + 63·5 = 316 pairs.
* a finding's flag must be one of the flags set, so with ``s`` flags set there are
  ``F(s) = P·s·A`` possible findings, ``P = 2n + 1`` positions for a p0 of ``n`` steps (steps
  1..n and "missing after step k", k = 0..n) and ``A`` aspects.
* findings are a set (the critic's order is dropped: they are sorted before the writer sees
  them, and duplicates collapse), so ``j`` findings are one of ``C(F(s), j)`` sets.

    N(n, K) = 1 + Σ_{s=1..6} C(6, s) · 5 · Σ_{j=0..K} C(P·s·A, j)
    max_bits = log2 N(n, MAX_FINDINGS)

*Used* bits of one answer with ``j`` findings: ``log2 N(n, j)`` — the capacity of the smallest
channel of this schema (same p0, findings capped at ``j``) that could have carried the answer.
It is at most ``max_bits``, equals it when the critic used every finding, and is
``log2 316 ≈ 8.30`` for an answer with grade and flags alone.
"""

from __future__ import annotations

import math
from functools import cache

from evrcore.critique import GRADES
from evrcore.taxonomy import ERROR_CODES

FLAGGED_GRADES = len(GRADES) - 1
"""Grades a plan with a flag set may get (every one but 1.0, the verdict rule)."""


def positions(steps: int) -> int:
    """Positions a finding may name in a p0 of ``steps`` steps: each step, and each gap
    ("missing after step k", k = 0..steps)."""
    return 2 * steps + 1


@cache
def answers(steps: int, max_findings: int, aspects: int) -> int:
    """The number of distinct valid answers (see the module's formula)."""
    flags = len(ERROR_CODES)
    total = 1  # no flag set: grade 1.0, no finding
    for s in range(1, flags + 1):
        pool = positions(steps) * s * aspects
        sets = sum(math.comb(pool, j) for j in range(max_findings + 1))
        total += math.comb(flags, s) * FLAGGED_GRADES * sets
    return total


def bits(steps: int, max_findings: int, aspects: int) -> float:
    """``log2`` of :func:`answers`, rounded to 0.01 bit."""
    return round(math.log2(answers(steps, max_findings, aspects)), 2)
