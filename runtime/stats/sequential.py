"""An anytime-valid confidence sequence for a paired, task-clustered Δ read after every wave.

A run that goes in waves (one more trial of every task in every arm per wave) and is read after
each one needs an interval that holds at *every* wave at once, however many are read: a
fixed-size interval read at 3, 5, 8, 12 and 18 trials claims an effect three times as often as
its nominal 5 %. The sequence here is the two-sided normal-mixture boundary of Howard, Ramdas,
McAuliffe & Sekhon (2021, "Time-uniform, nonparametric, nonasymptotic confidence sequences",
Ann. Statist., eq. (14) and Proposition 6), written in *information time*, with the variance
plugged in as in the asymptotic confidence sequences of Waudby-Smith et al. (2024).

Why in information time, and not the textbook i.i.d. sequence (``savvi``, ``confseq``): the
tasks are the cluster and they are fixed; waves add trials, not tasks. After wave ``w`` each task
``i`` has the mean ``d_i(w)`` of its complete pairs (treatment − control, paired by trial) and
the estimate is ``D(w) = mean_i d_i(w)``. Write ``D(w) − Δ = G + S_w / w``: ``G``, the task
set's own mean effect minus the population's, is drawn once (variance ``2·task_mode / n``) and
never shrinks; ``S_w``, the trials' noise, is a sum of independent wave increments. Their joint
likelihood depends on the data only through ``D(w)`` with information ``I_w = 1 / Var D(w)``,
which grows with the waves but saturates at ``n / (2·task_mode)``. For every alternative μ′ the
likelihood ratio of μ′ to the true Δ is then a martingale over the waves, and so is its mixture
over μ′ ~ N(Δ, 1/ρ):

    M_w = sqrt(ρ / (ρ + I_w)) · exp(I_w² (D(w) − Δ)² / (2 (ρ + I_w)))

Ville's inequality bounds P(∃w: M_w ≥ 1/α) by α, which gives the half-width below. A sequence
over individual episodes (what the libraries implement) would take every trial for new
information and shrink towards the task set's own mean, not the population's: with a task × arm
term it claims effects that another task sample would not show. ``I_w`` is estimated by the
clustered standard error of the report's own interval (``Var D(w)`` over the tasks present), so
the sequence is valid as the number of tasks grows; at 10–30 tasks a z boundary over an
estimated variance claims effects too often (7.3 % at 10 tasks × 40 waves, 7.5 % at 20 × 200), so
every boundary is read as a Student-t one with tasks − 1 degrees of freedom at the same tail
probability (``runtime.stats.spending.small_sample``). bench/sequential_calibration.py measures
the type-I error and coverage where it is used; the CLI refuses the designs it has not shown
(``SHOWN_TASKS``, ``SHOWN_WAVES``).

With a known last look (``looks``) the boundary is instead ``runtime.stats.spending``'s
α-spending one over those looks, on (1 − RESERVE) of α; waves past them continue on this
time-uniform sequence at the RESERVE share, so a resume that runs longer stays valid.

Pure arithmetic: numpy arrays with any leading batch axes, so the calibration's 10,000 simulated
experiments go through the code a run uses.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

ALPHA = 0.05
MIXTURE_OPTIMUM = 0.122
"""The ρ·v that makes the half-width smallest relative to sqrt(v) at α 0.05:
argmin_x (1 + x)(2 log(1/α) + log(1 + 1/x)) (0.122 numerically, where the half-width is 3.04 standard errors; flat between 0.08 and 0.2)."""
PLANNED_POWER_Z = 2.8016
"""z_{0.975} + z_{0.80}: a fixed design with 80 % power at Δ has its standard error at Δ / 2.80."""
TUNED_AT = 2.0
"""The sequence is tuned for an effect of this many margins (+0.06 at the default margin: the
middle of the paper's +0.03 … +0.07); bench/sequential_calibration.py chose it over 1 and 4
(fewer expected episodes at the paper's effects, the same type-I error)."""

SHOWN_TASKS = 10
"""The fewest tasks at which bench/sequential_calibration.py has shown the type-I error ≤ 5 %
(with a look after every wave); fewer is refused before any episode runs."""
SHOWN_WAVES = 200
"""The most waves shown (at SHOWN_TASKS tasks and up); more is refused."""
SPENDING_TASKS = 50
"""The fewest tasks at which the α-spending boundary's coverage of a real, skewed effect has been
shown at 94 % (bench/SEQUENTIAL.md: 94.6–94.8 % at 50 tasks, 90.2–95.1 % at 20–30); with fewer a
run with --max-trials keeps the time-uniform sequence, whose wider boundary covers at 20–30 tasks."""


def planned_looks(tasks: int, max_trials_given: int | None) -> int | None:
    """The boundary the planner chooses: α-spending over ``--max-trials`` when it is given and
    the tasks are enough for it, else time-uniform (None)."""
    return max_trials_given if max_trials_given and tasks >= SPENDING_TASKS else None

PRIOR_TASKS = 15
"""The floor's weight in tasks (as the fixed-size interval's, ``runtime.stats.intervals``)."""

EFFECT = "effect"
NO_EFFECT = "no effect of interest"
UNDECIDED = "undecided"


def mixture_precision(margin: float, alpha: float = ALPHA) -> float:
    """ρ, chosen before any data: the boundary is tightest where Var D equals the variance at
    which a fixed design would detect ``TUNED_AT`` × ``margin`` with 80 % power."""
    if not margin > 0:
        raise ValueError(f"margin must be > 0, got {margin!r}")
    return MIXTURE_OPTIMUM / (TUNED_AT * margin / PLANNED_POWER_Z) ** 2


def half_width(variance, rho: float, alpha: float = ALPHA):
    """The sequence's half-width at estimate variance ``variance`` (= 1 / I_w)."""
    v = np.asarray(variance, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = rho * v
        width = np.sqrt(v * (1 + x) * (2 * math.log(1 / alpha) + np.log1p(1 / x)))
    return np.where(v > 0, width, 0.0) if width.ndim else (float(width) if v > 0 else 0.0)


def floor_variance(tasks, waves):
    """The least per-task difference variance an estimate may use: a wave of ties in every task
    must not read as certainty (1 / (tasks · waves), below any real comparison's)."""
    return 1.0 / (np.maximum(tasks, 1) * np.maximum(waves, 1))


def task_means(differences: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per task, after every wave: (mean of its complete pairs so far, their count), from paired
    differences shaped ``(..., tasks, waves)`` with NaN for a pair with an errored episode."""
    d = np.asarray(differences, dtype=float)
    present = ~np.isnan(d)
    sums = np.cumsum(np.where(present, d, 0.0), axis=-1)
    counts = np.cumsum(present, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan), counts


def discordance_floor(differences: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per wave, the least variance of one task's mean difference: one pair's variance (the
    share of pairs whose two scores differ so far, with Agresti–Coull's pseudo-pairs, less the
    squared mean difference) over the task's pairs — after the
    fixed-size interval's floor (``runtime.stats.intervals``), for the sparse, skewed data of
    success rates near 0 or 1 where the tasks' own spread is too small to trust."""
    from runtime.stats.intervals import PSEUDO

    d = np.asarray(differences, dtype=float)
    present = ~np.isnan(d)
    moved = np.cumsum(np.nansum(np.where(present, np.abs(d), 0.0), axis=-2), axis=-1)
    pairs = np.cumsum(np.sum(present, axis=-2), axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        inverse = np.nanmean(np.where(counts > 0, 1.0 / np.maximum(counts, 1), np.nan), axis=-2)
    sums = np.cumsum(np.nansum(np.where(present, d, 0.0), axis=-2), axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        second = (moved + PSEUDO) / (pairs + 2 * PSEUDO)
        first = sums / (pairs + 2 * PSEUDO)  # the pseudo-pairs differ half each way
    # a pair's variance, E d² − (E d)²: a run where every pair says +1 is not uncertain
    return np.nan_to_num(np.maximum(second - first ** 2, 0.0) * inverse, nan=1.0)


@dataclass(frozen=True)
class Sequence:
    """The sequence after every wave (arrays over the last axis, waves 1..W)."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    tasks: np.ndarray
    """Tasks with at least one complete pair by that wave."""
    variance: np.ndarray
    """Var D(w) as estimated (the clustered standard error squared, floored)."""


def z_boundary(variance, waves, *, margin: float, alpha: float = ALPHA, looks: int | None = None,
               family: str | None = None, rho: float | None = None):
    """The boundary in standard errors at every wave (before the small-sample reading):
    time-uniform (``looks`` None) or α-spending over ``looks`` waves with the rest time-uniform."""
    v = np.asarray(variance, dtype=float)
    w = np.broadcast_to(np.asarray(waves), v.shape)
    safe = np.where(np.isfinite(v) & (v > 0), v, 1.0)

    def uniform(level):
        return half_width(safe, rho or mixture_precision(margin), level) / np.sqrt(safe)

    if looks is None:
        return uniform(alpha)
    from runtime.stats.spending import RESERVE, SPENDING, boundary

    planned = np.asarray(boundary(int(looks), alpha * (1 - RESERVE), family or SPENDING))
    inside = w <= looks
    return np.where(inside, planned[np.clip(w, 1, looks) - 1], uniform(alpha * RESERVE))


def sequence(differences: np.ndarray, *, margin: float, alpha: float = ALPHA,
             looks: int | None = None, family: str | None = None,
             rho: float | None = None) -> Sequence:
    """The confidence sequence of Δ after each wave, from ``(..., tasks, waves)`` paired
    differences (treatment − control, each in [−1, 1]; NaN where a pair is incomplete);
    ``looks``: the planned last wave of an α-spending boundary (None: time-uniform); ``rho``:
    the mixture's precision as recorded at the first look (default: from ``margin``)."""
    from runtime.stats.intervals import skew_extension
    from runtime.stats.spending import small_sample

    means, counts = task_means(differences)  # (..., tasks, waves)
    n = np.sum(~np.isnan(means), axis=-2)
    waves = np.arange(1, means.shape[-1] + 1)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a wave with no complete pair: NaN, said so
        estimate = np.nanmean(means, axis=-2) if means.size else np.full(n.shape, np.nan)
        squares = np.nansum((means - np.expand_dims(estimate, -2)) ** 2, axis=-2)
        spread = squares / np.maximum(n - 1, 1)
        pooled = (squares + PRIOR_TASKS * discordance_floor(differences, counts)) / (np.maximum(n - 1, 0) + PRIOR_TASKS)
        cubes = np.nansum((means - np.expand_dims(estimate, -2)) ** 3, axis=-2) / np.maximum(n, 1)
    spread = np.maximum(np.maximum(spread, pooled), floor_variance(n, waves))
    variance = np.where(n >= 2, spread / np.maximum(n, 1), np.inf)
    finite = np.isfinite(variance)
    z = small_sample(z_boundary(variance, waves, margin=margin, alpha=alpha, looks=looks,
                                family=family, rho=rho), n)
    half = np.where(finite, z * np.sqrt(np.where(finite, variance, 1.0)), np.inf)
    below, above = skew_extension(cubes, spread, n, z, half)
    # Δ of scores in [0, 1] lies in [−1, 1]: the sequence clipped there is as valid and readable
    return Sequence(estimate, np.maximum(estimate - half - below, -1.0),
                    np.minimum(estimate + half + above, 1.0), n, variance)


def decisions(low, high, margin: float) -> np.ndarray:
    """Per wave: 1 effect (0 excluded), −1 no effect of interest (inside ±margin), 0 undecided."""
    low, high = np.asarray(low), np.asarray(high)
    effect = (low > 0) | (high < 0)
    none = (low > -margin) & (high < margin)
    return np.where(effect, 1, np.where(none, -1, 0))


def first_decision(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the first decided wave, 1-based, or 0; its code) over the last axis."""
    codes = np.asarray(codes)
    decided = codes != 0
    any_ = decided.any(axis=-1)
    first = np.argmax(decided, axis=-1)
    code = np.take_along_axis(codes, first[..., None], axis=-1)[..., 0]
    return np.where(any_, first + 1, 0), np.where(any_, code, 0)


WORDS = {1: EFFECT, -1: NO_EFFECT, 0: UNDECIDED}


@dataclass(frozen=True)
class Decision:
    """What one comparison's sequence decided, and at which wave (``None``: not yet)."""

    decision: str
    wave: int | None
    waves: int
    """Complete waves read."""
    estimate: float
    low: float
    high: float
    tasks: int
    margin: float
    alpha: float
    method: str = ""

    def as_dict(self) -> dict:
        def number(x: float) -> float | None:  # JSON has no NaN: no estimate yet is None
            return float(x) if math.isfinite(x) else None

        return {"decision": self.decision, "wave": self.wave, "waves": self.waves,
                "delta": number(self.estimate), "low": number(self.low), "high": number(self.high),
                "tasks": self.tasks,
                "margin": self.margin, "alpha": self.alpha,
                "method": self.method or method(None)}


def decide(differences: np.ndarray, *, margin: float, alpha: float = ALPHA, looks: int | None = None,
           family: str | None = None, rho: float | None = None) -> Decision:
    """One comparison's decision from its ``(tasks, waves)`` paired differences: the first wave
    whose sequence decides, and the sequence there (else at the last wave)."""
    d = np.asarray(differences, dtype=float)
    if d.ndim != 2:
        raise ValueError(f"need (tasks, waves) differences, got shape {d.shape}")
    if d.shape[1] == 0:
        return Decision(UNDECIDED, None, 0, math.nan, -math.inf, math.inf, 0, margin, alpha)
    seq = sequence(d, margin=margin, alpha=alpha, looks=looks, family=family, rho=rho)
    wave, code = first_decision(decisions(seq.low, seq.high, margin))
    at = int(wave) - 1 if wave else d.shape[1] - 1
    return Decision(WORDS[int(code)], int(wave) or None, d.shape[1], float(seq.estimate[at]),
                    float(seq.low[at]), float(seq.high[at]), int(seq.tasks[at]), margin, alpha,
                    method(looks, family))


def method(looks: int | None, family: str | None = None) -> str:
    """The boundary in words, as summary.json and the report name it."""
    small = "read as Student-t with tasks − 1 degrees of freedom; tasks the cluster, read after every wave"
    if looks is None:
        return f"normal-mixture confidence sequence in information time (Howard et al. 2021), {small}"
    from runtime.stats.spending import RESERVE, SPENDING

    return (f"α-spending boundary over {looks} waves (Lan–DeMets, {family or SPENDING}) on {1 - RESERVE:.0%} of α, "
            f"the rest to a time-uniform sequence past wave {looks}; {small}")
