"""The interval and p-value of an observed paired Δ, clustered by task, and Holm's correction.

Trials of one task share the task's difficulty and its arm effect, so they are averaged within
the task and the *tasks* are the units: the per-task differences are independent, and the
t interval over them (n − 1 degrees of freedom) is the clustered standard error of Miller (2024,
arXiv 2411.00640, section 2.3) for a paired design. Taking every episode for a unit instead
(``clustered=False``, kept so the calibration tests can show what it gets wrong) understates the
uncertainty whenever an arm's effect differs between tasks.

Every function takes arrays with any leading batch axes — ``(..., tasks, trials)`` — so a
simulation of thousands of experiments is one call through the same code a report uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
    """The sd of one unit's difference: the run's own variance, what its detectable Δ uses."""


def mean_interval(differences: np.ndarray, *, confidence: float = 0.95) -> Interval:
    """The t interval of the mean of ``differences`` over the last axis (NaN entries left out)."""
    from scipy import stats

    d = np.asarray(differences, dtype=float)
    n = np.sum(~np.isnan(d), axis=-1)
    mean = np.nanmean(d, axis=-1) if d.size else np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(np.nansum((d - np.expand_dims(mean, -1)) ** 2, axis=-1) / np.maximum(n - 1, 1))
        se = sd / np.sqrt(n)
        df = np.maximum(n - 1, 1)
        half = stats.t.ppf(0.5 + confidence / 2, df) * se
        t = np.where(se > 0, np.abs(mean) / np.where(se > 0, se, 1.0), np.where(mean == 0, 0.0, np.inf))
        p = np.where(n > 1, 2 * stats.t.sf(t, df), 1.0)
    half = np.where(n > 1, half, np.inf)
    return Interval(_scalar(mean), _scalar(se), _scalar(mean - half), _scalar(mean + half),
                    _scalar(p), _scalar(n), _scalar(sd))


def paired_interval(treatment: np.ndarray, control: np.ndarray, *, confidence: float = 0.95,
                    clustered: bool = True) -> Interval:
    """Δ = treatment − control from scores shaped ``(..., tasks, trials)`` (NaN: an episode
    that is missing). ``clustered``: trial means per task, differenced, tasks the units.
    Otherwise trial k of one arm is paired with trial k of the other and every pair is a unit."""
    t = np.asarray(treatment, dtype=float)
    c = np.asarray(control, dtype=float)
    if t.ndim < 2 or c.ndim < 2 or t.shape[:-1] != c.shape[:-1]:
        raise ValueError(f"need (..., tasks, trials) scores with the same tasks, got {t.shape} and {c.shape}")
    if clustered:
        with np.errstate(invalid="ignore"):
            return mean_interval(np.nanmean(t, axis=-1) - np.nanmean(c, axis=-1), confidence=confidence)
    if t.shape != c.shape:
        raise ValueError("unclustered pairing needs the same trials in both arms")
    pairs = (t - c).reshape(*t.shape[:-2], -1)
    return mean_interval(pairs, confidence=confidence)


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error at most α over the family):
    ``statsmodels.stats.multitest.multipletests(method="holm")``."""
    if not p_values:
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(p) for p in multipletests(np.asarray(p_values, dtype=float), method="holm")[1]]


def _scalar(value):
    array = np.asarray(value)
    return array.item() if array.ndim == 0 else array
