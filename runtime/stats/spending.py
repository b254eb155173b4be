"""A group-sequential boundary that spends α over a known number of looks (Lan & DeMets 1983;
Kim & DeMets's power family α·t^1.5 by default, ``SPENDING``), for ``--until-decided`` runs
whose ``--max-trials`` is given.

A time-uniform sequence pays for looks that may never come (every wave to infinity); with the
last look known, α can be spent over exactly those looks and the last one is almost the fixed
design's. The boundary is computed once per (looks, α) *before any data*, under the assumption
that the information grows in proportion to the waves. In a task-clustered run it grows faster
early and saturates (``runtime.stats.sequential``: ``Var D(w) = A + B / w``), so the looks are
*more* correlated than assumed (corr(Z_j, Z_k) = sqrt(I_j / I_k) ≥ sqrt(j / k)), and a boundary
computed for the least-correlated pattern crosses at most as often as it says (checked by
simulation in bench/sequential_calibration.py). So the boundary is a setting, fixed and
recorded at the first look, not re-estimated from the run.

The crossing probabilities are computed by the recursive numerical integration of Armitage,
McPherson & Rowe (1969) on the score scale (unit information per wave), the method of
Jennison & Turnbull (2000, ch. 19): the sub-density of the score among paths still inside the
boundary is carried look to look by a convolution with the one-wave increment.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

STEP = 0.02
"""Grid step on the score scale (the increment per look has sd 1)."""
SPENDING = "power:1.5"
"""The spending function new runs record at their first look. Chosen at τ-bench airline's
figures (50 tasks, success 0.46, ICC 0.405, 80 % power) in an exploratory scan of 1,000 runs a
case (bench/SEQUENTIAL.md reproduces ρ 1.5 against O'Brien–Fleming-type on 2,000: 94 % / 63 %
against 95 % / 71 %): planned for +0.05 it takes 92 % of the fixed design's episodes at
+0.05 and 59 % at +0.07, against O'Brien–Fleming-type's 94 % and 68 % (ρ 1: 96 % and 58 %; ρ 2:
93 % and 61 %); at Δ 0 it runs 136 % against 130 %. A folder keeps the function it recorded."""
RESERVE = 0.1
"""The share of α kept for waves past the planned last look (a resume that runs longer): they
continue on a time-uniform sequence at this share, so the whole run's error stays at α."""


def spent(fraction, alpha: float, family: str = SPENDING):
    """α spent by information fraction ``fraction`` under ``family``: ``obrien-fleming`` or
    ``power:ρ`` (Kim & DeMets's α·t^ρ: ρ 1 spends evenly, like Pocock's; larger ρ saves α for
    the end)."""
    if family == "obrien-fleming":
        return obrien_fleming_spent(fraction, alpha)
    if family.startswith("power:"):
        rho = float(family.split(":", 1)[1])
        return alpha * np.clip(np.asarray(fraction, dtype=float), 0.0, 1.0) ** rho
    raise ValueError(f"spending family {family!r}: accepted: obrien-fleming or power:ρ")


FAMILIES = ("obrien-fleming", "power:1", "power:1.5", "power:2", "power:3")
"""The spending functions a run may record (``SPENDING`` is the default)."""


def obrien_fleming_spent(fraction, alpha: float):
    """α spent by information fraction ``fraction``: 2 − 2Φ(z_{α/2} / √t) (Lan–DeMets's
    O'Brien–Fleming-type function: almost nothing early, almost the fixed design's test last)."""
    from scipy.stats import norm

    t = np.clip(np.asarray(fraction, dtype=float), 1e-12, 1.0)
    return 2 * norm.sf(norm.isf(alpha / 2) / np.sqrt(t))


@lru_cache(maxsize=64)
def boundary(looks: int, alpha: float, family: str = SPENDING) -> tuple[float, ...]:
    """Two-sided z boundaries c_1..c_K (|Z_k| ≥ c_k rejects at look k) that spend ``alpha`` by
    ``family`` (``spent``) at the fractions k / K, looks at unit information each."""
    from scipy.optimize import brentq
    from scipy.signal import fftconvolve
    from scipy.stats import norm

    if looks < 1:
        raise ValueError(f"looks must be ≥ 1, got {looks!r}")
    spent_by = spent(np.arange(1, looks + 1) / looks, alpha, family)
    kernel_x = np.arange(-9.0, 9.0 + STEP / 2, STEP)
    kernel = norm.pdf(kernel_x) * STEP
    grid = np.array([0.0])
    mass = np.array([1.0])  # score 0 at the start, with probability 1
    bounds, before = [], 0.0
    for k in range(1, looks + 1):
        target = spent_by[k - 1] - before
        scale = math.sqrt(k)

        def exit_probability(c: float) -> float:
            b = c * scale
            return float(np.sum(mass * (norm.sf(b - grid) + norm.cdf(-b - grid))))

        if target <= 1e-15 or exit_probability(40.0) >= target:
            c = math.inf if target <= 1e-15 else 40.0
        else:
            c = brentq(lambda x: exit_probability(x) - target, 0.0, 40.0, xtol=1e-10)
        bounds.append(c)
        before += exit_probability(c) if math.isfinite(c) else 0.0
        if k == looks:
            break
        # the sub-density at look k, kept inside the boundary, on a grid of step STEP
        b = min(c * scale, 12.0 + scale * 6.0)
        new_grid = np.arange(-math.floor(b / STEP), math.floor(b / STEP) + 1) * STEP
        if grid.size == 1:
            density = norm.pdf(new_grid - grid[0]) * STEP * mass[0]
        else:
            start = grid[0] + kernel_x[0]
            full = fftconvolve(mass, kernel)  # on start + i·STEP
            index = np.rint((new_grid - start) / STEP).astype(int)
            ok = (index >= 0) & (index < full.size)
            density = np.where(ok, full[np.clip(index, 0, full.size - 1)], 0.0)
        grid, mass = new_grid, np.maximum(density, 0.0)
    return tuple(bounds)


TAIL_CAP = 3.5
"""Beyond this many standard errors the t reading's factor is held: mapped by tail probability,
a boundary of 7 standard errors would read as 40 at 9 degrees of freedom (a Student-t tail
that far out says nothing about bounded task means); held, it stays at 1.5 times."""


def small_sample(z, tasks):
    """A z boundary read as a Student-t one with ``tasks − 1`` degrees of freedom: multiplied by
    t's quantile over the normal's at the same tail probability (at ``TAIL_CAP`` at most). The
    variance is estimated from the tasks, so the standardised Δ has t tails, and a z boundary
    read with 10–20 tasks claims effects more often than it says."""
    from scipy import stats

    z = np.asarray(z, dtype=float)
    dof = np.maximum(np.asarray(tasks, dtype=float) - 1, 1)
    at = np.clip(np.where(np.isfinite(z), z, TAIL_CAP), 1e-6, TAIL_CAP)
    with np.errstate(invalid="ignore", over="ignore"):
        factor = stats.t.isf(stats.norm.sf(at), dof) / at
    return np.where(np.isfinite(z), z * factor, np.inf)
