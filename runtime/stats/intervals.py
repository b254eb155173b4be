"""The interval and p-value of an observed paired Δ, clustered by task, and Holm's correction.

Trials of one task share the task's difficulty and its arm effect, so they are averaged within
the task and the *tasks* are the units: the per-task differences are independent, and the
t interval over them is the clustered standard error of Miller (2024, arXiv 2411.00640,
section 2.3) for a paired design. Taking every episode for a unit instead (``clustered=False``,
kept so the calibration can show what it gets wrong) understates the uncertainty whenever an
arm's effect differs between tasks.

Pairs are made *by trial*: trial k of the treatment with trial k of the control, and an episode
whose partner is missing (errored) leaves only its own pair out, not its task.

Small samples and rates near 0 or 1: a plain t interval over 20 tasks then undercovers (as little as 69 %
at success rates of 0.05 or 0.95 in ``bench/CALIBRATION.md``) and is zero-wide whenever every task's
difference is the same. So the per-task variance is pooled with a *floor* worth ``PRIOR_TASKS``
tasks — the variance of a normal mean under a scaled-inverse-χ² prior, t with n − 1 + ν degrees
of freedom — whenever that is larger than the tasks' own variance. The floor is what one episode pair says about a task's difference: the share of
pairs whose two scores differ (|treatment − control| summed, with Agresti–Coull's 2 discordant
and 2 concordant pairs added, so it is never 0) over the task's trials. For 0/1 scores that
share is a single pair's variance of the difference, at most a task difference's variance times
its trials, so the floor widens sparse-data intervals and leaves informative ones as they were.
The choice among a plain t, Agresti–Min pseudo-pairs and floors worth 2 to n − 1 tasks was
made by the coverage the bench measures: 15 lifted the worst 20-task cells (success 0.05 / 0.95,
ICC 0.4, three trials) from 93.6 % to 95.6 % and left the informative ones at 95 %. The floor
only ever *raises* the variance (the pooled value is used when it exceeds the tasks' own): the
share of differing pairs misses part of a task × arm term when trials are many, and pooling
down with it covered 93 % at 30 tasks × 8 trials.

Every function takes arrays with any leading batch axes — ``(..., tasks, trials)`` — so a
simulation of thousands of experiments is one call through the same code a report uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PRIOR_TASKS = 15
"""How many tasks' worth of weight the variance floor has (ν of the prior)."""
PSEUDO = 2.0
"""Agresti–Coull's pseudo-pairs: this many discordant and this many concordant added."""
PRIOR_ICC = 0.5
"""An arm's intra-task correlation when its tasks cannot tell it: the published τ-bench figures
(``runtime.stats.published``: airline 0.41–0.47, retail 0.46–0.53), rounded up."""
ARM_PRIOR_TASKS = 2
"""How many informing tasks' worth of weight ``PRIOR_ICC`` has in an arm's interval: chosen
among 1–5 and ICCs 0.3 / 0.5 by the coverage ``bench/calibration.py`` measures."""


@dataclass(frozen=True)
class Interval:
    """Δ, its standard error, the ``confidence`` interval and the two-sided p-value of Δ = 0,
    over ``units`` independent units (arrays when the input had batch axes)."""

    mean: np.ndarray | float
    se: np.ndarray | float
    low: np.ndarray | float
    high: np.ndarray | float
    p: np.ndarray | float
    units: np.ndarray | int
    sd: np.ndarray | float
    """The sd of one unit's difference the interval uses (observed, pooled with the floor):
    what the run's detectable Δ uses."""
    observed_sd: np.ndarray | float = float("nan")
    """The units' own sd, before the floor."""
    floor_only: np.ndarray | bool = False
    """No variance was observed (every unit the same): the width is the floor's alone."""
    inverse_trials: np.ndarray | float = 1.0
    """The mean over units of 1 / (pairs kept in the unit)."""
    within: np.ndarray | float = float("nan")
    """The pooled within-task variance of the kept trials (NaN without two trials anywhere)."""


def mean_interval(values: np.ndarray, *, floor: np.ndarray | float | None = None,
                  confidence: float = 0.95, prior: float | None = None) -> Interval:
    """The t interval of the mean of ``values`` over the last axis (NaN entries left out); with
    ``floor`` (a per-unit variance), the variance pooled with it at the weight of ``prior`` units."""
    from scipy import stats

    d = np.asarray(values, dtype=float)
    n = np.sum(~np.isnan(d), axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nanmean(d, axis=-1) if d.size else np.nan
        squares = np.nansum((d - np.expand_dims(mean, -1)) ** 2, axis=-1)
        observed = np.sqrt(squares / np.maximum(n - 1, 1))
        weight = 0.0 if floor is None else (PRIOR_TASKS if prior is None else prior)
        pooled = (squares + weight * (0.0 if floor is None else np.asarray(floor, dtype=float))) / np.maximum(
            np.maximum(n - 1, 0) + weight, 1)
        lifted = pooled > observed ** 2  # the floor only ever raises the variance
        variance = np.where(lifted, pooled, observed ** 2)
        dof = np.maximum(n - 1, 0) + np.where(lifted, weight, 0.0)
        sd = np.sqrt(variance)
        se = sd / np.sqrt(np.maximum(n, 1))
        df = np.maximum(dof, 1)
        half = stats.t.ppf(0.5 + confidence / 2, df) * se
        t = np.where(se > 0, np.abs(mean) / np.where(se > 0, se, 1.0), np.where(mean == 0, 0.0, np.inf))
        p = np.where(n > 1, 2 * stats.t.sf(t, df), 1.0)
    half = np.where(n > 1, half, np.inf)
    p = np.where(n > 1, p, 1.0)
    return Interval(_scalar(mean), _scalar(se), _scalar(mean - half), _scalar(mean + half),
                    _scalar(p), _scalar(n), _scalar(sd), _scalar(observed),
                    _scalar((squares == 0) & (n > 1)))


SKEW_CAP = 1.0
"""The skew term widens one side by at most this many times its symmetric half-width."""
SKEW_TASKS = 10
"""The fewest units whose third moment the skew term reads: the expansion is in 1 / √n, and m₃
of a handful of tasks says nothing (at 4 tasks it doubled a side on every run)."""


def skew_extension(cubes, variance, n, z, half):
    """(extra below, extra above): the second-order Edgeworth term of the studentized mean
    (Hall 1992, §2.6): with third central moment ``cubes`` and (floored) unit variance
    ``variance`` over ``n`` units, a bound ``z`` standard errors out sits
    m₃ (2z² + 1) / (6 s² n) too close on the side the skew points to. Task effects near 0 or 1
    are skewed — a few tasks carry the effect, and a sample without them has a small mean *and*
    a small spread — so a symmetric interval misses on that side (every miss in
    bench/SEQUENTIAL.md and bench/CALIBRATION.md was). The guard: the term only *widens* the
    side it points to (it never moves the other bound, so no error rate can rise), and by at
    most ``SKEW_CAP`` times the half-width, since the sample's m₃ at 20 tasks is itself noisy."""
    c = np.nan_to_num(np.asarray(cubes, dtype=float))
    v = np.asarray(variance, dtype=float)
    z = np.where(np.isfinite(z), z, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        term = c * (2 * z * z + 1) / (6 * v * np.maximum(n, 1))
    term = np.where((np.asarray(n) >= SKEW_TASKS) & (v > 0) & np.isfinite(term), term, 0.0)
    cap = SKEW_CAP * np.where(np.isfinite(half), half, 0.0)
    return np.minimum(np.maximum(-term, 0.0), cap), np.minimum(np.maximum(term, 0.0), cap)


def pair_by_trial(treatment: np.ndarray, control: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both arms with every episode whose partner (same task, same trial) is missing set to NaN."""
    t = np.asarray(treatment, dtype=float)
    c = np.asarray(control, dtype=float)
    width = max(t.shape[-1], c.shape[-1])
    t, c = _pad(t, width), _pad(c, width)
    both = ~np.isnan(t) & ~np.isnan(c)
    return np.where(both, t, np.nan), np.where(both, c, np.nan)


def discordance_floor(t: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the variance floor of one task's difference, the mean of 1 / pairs per task) from paired
    scores ``(..., tasks, trials)`` (NaN where no pair)."""
    pairs = np.sum(~np.isnan(t), axis=-1)
    kept = pairs > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        inverse = np.nanmean(np.where(kept, 1.0 / np.where(kept, pairs, 1), np.nan), axis=-1)
        rate = (np.nansum(np.abs(t - c), axis=(-2, -1)) + PSEUDO) / (np.sum(pairs, axis=-1) + 2 * PSEUDO)
    return rate * inverse, inverse


def paired_interval(treatment: np.ndarray, control: np.ndarray, *, confidence: float = 0.95,
                    clustered: bool = True) -> Interval:
    """Δ = treatment − control from scores shaped ``(..., tasks, trials)`` (NaN: an episode
    that is missing or errored). ``clustered``: pairs by trial, their mean per task, tasks the
    units, the variance floored as the module says. Otherwise every episode pair is a unit."""
    t = np.asarray(treatment, dtype=float)
    c = np.asarray(control, dtype=float)
    if t.ndim < 2 or c.ndim < 2 or t.shape[:-1] != c.shape[:-1]:
        raise ValueError(f"need (..., tasks, trials) scores with the same tasks, got {t.shape} and {c.shape}")
    t, c = pair_by_trial(t, c)
    if not clustered:
        pairs = (t - c).reshape(*t.shape[:-2], -1)
        return mean_interval(pairs, confidence=confidence)
    with np.errstate(invalid="ignore"):
        differences = np.nanmean(t - c, axis=-1)
    floor, inverse = discordance_floor(t, c)
    found = mean_interval(differences, floor=floor, confidence=confidence)
    within = (_within(t) + _within(c)) / 2
    return Interval(found.mean, found.se, found.low, found.high, found.p, found.units, found.sd,
                    found.observed_sd, found.floor_only, _scalar(inverse), _scalar(within))


def arm_interval(scores: np.ndarray, *, confidence: float = 0.95) -> Interval:
    """One arm's mean over tasks (trials averaged within a task), scores in [0, 1]: a Wilson
    score interval at the *effective* number of episodes — the rate's binomial variance over the
    variance of a task's mean, never more than the episodes there are.

    Wilson's and not a t interval: a mean near 0 or 1 is skewed, and a t interval there covered
    82–88 % at 20 tasks × 3 trials. The variance of a task's mean is the tasks' own, raised
    towards what a benchmark with intra-task correlation ``PRIOR_ICC`` would give, with the
    weight of ``ARM_PRIOR_TASKS`` tasks against that of the tasks that *inform* it: at a rate
    near 0 that is the tasks with a success, not all of them. A rare success concentrates in a
    few tasks when the ICC is high, and the tasks' own variance then comes from two or three
    tasks; weighting all twenty of them (the earlier floor) covered as little as 74 % at 20 × 8,
    success 0.05, ICC 0.6 (``bench/CALIBRATION.md`` has the new interval's every cell)."""
    from scipy import stats

    s = np.asarray(scores, dtype=float)
    counts = np.sum(~np.isnan(s), axis=-1)
    kept = counts > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.nanmean(s, axis=-1)
        inverse = np.nanmean(np.where(kept, 1.0 / np.where(kept, counts, 1), np.nan), axis=-1)
        episodes = np.sum(counts, axis=-1)
        rate = (np.nansum(s, axis=(-2, -1)) + PSEUDO) / (episodes + 2 * PSEUDO)
        found = mean_interval(means)
        n = np.asarray(found.units)
        observed = np.asarray(found.observed_sd, dtype=float) ** 2
        prior = rate * (1 - rate) * (PRIOR_ICC + (1 - PRIOR_ICC) * inverse)
        informing = np.minimum(np.maximum(n - 1, 0),
                               np.minimum(np.sum(means > 0, axis=-1), np.sum(means < 1, axis=-1)))
        pooled = (informing * observed + ARM_PRIOR_TASKS * prior) / (informing + ARM_PRIOR_TASKS)
        variance = np.maximum(observed, pooled)  # only ever raised, as Δ's floor
        effective = np.minimum(episodes, rate * (1 - rate) * n / variance)
        z = stats.t.ppf(0.5 + confidence / 2, np.maximum(n - 1, 0) + PRIOR_TASKS)
        p = np.clip(np.asarray(found.mean, dtype=float), 0.0, 1.0)
        shrink = 1 + z * z / effective
        centre = (p + z * z / (2 * effective)) / shrink
        half = z / shrink * np.sqrt(p * (1 - p) / effective + z * z / (4 * effective * effective))
        # Wilson's bounds hold p exactly, but at p = 0 or 1 rounding can put the bound a hair
        # past it (low = 1e-17 above a mean of 0): the estimate is always inside its interval.
        low, high = np.minimum(centre - half, p), np.maximum(centre + half, p)
        sd = np.sqrt(variance)
    low, high = np.where(n > 1, low, -np.inf), np.where(n > 1, high, np.inf)
    return Interval(found.mean, _scalar(sd / np.sqrt(np.maximum(n, 1))), _scalar(low), _scalar(high),
                    found.p, found.units, _scalar(sd), found.observed_sd, found.floor_only)


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error at most α over the family):
    ``statsmodels.stats.multitest.multipletests(method="holm")``."""
    if not p_values:
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(p) for p in multipletests(np.asarray(p_values, dtype=float), method="holm")[1]]


def _within(scores: np.ndarray) -> np.ndarray:
    """The pooled variance of trials within a task (NaN when no task has two)."""
    counts = np.sum(~np.isnan(scores), axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.nanmean(scores, axis=-1)
        squares = np.nansum((scores - np.expand_dims(means, -1)) ** 2, axis=(-2, -1))
        dof = np.sum(np.maximum(counts - 1, 0), axis=-1)
        return np.where(dof > 0, squares / np.maximum(dof, 1), np.nan)


def _pad(a: np.ndarray, width: int) -> np.ndarray:
    if a.shape[-1] == width:
        return a
    out = np.full((*a.shape[:-1], width), np.nan)
    out[..., :a.shape[-1]] = a
    return out


def _scalar(value):
    array = np.asarray(value)
    return array.item() if array.ndim == 0 else array
