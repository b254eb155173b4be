"""Variance components of a run's scores, estimated from its episodes.

The estimator is the method of moments (ANOVA estimators, as in Searle, Casella & McCulloch,
"Variance Components", ch. 4), written for two arms that need not have the same trial counts:

* ``within_task``: the pooled variance of the trials of one task in one arm;
* ``task_mode``: from the per-task differences d_i of trial means, whose variance is
  ``2·task_mode + within_task·(1/n_iA + 1/n_iB)``;
* ``between_task``: from the per-task averages a_i of the two arms' means, whose variance is
  ``between_task + task_mode/2 + within_task·(1/n_iA + 1/n_iB)/4``.

Each is set to 0 where its moment equation makes it negative. Why moments and not a fitted mixed
model: closed form, no convergence failures on 0/1 rewards, unbiased (before truncation) in
balanced designs. Their own uncertainty comes from resampling *tasks* (the clustered unit) with
replacement and re-estimating: an expanded percentile interval per component
(``expanded_percentiles``). Measured in ``bench/calibration.py``: the plain percentile interval
covered the task × arm term 87–90 % at 20–50 tasks; the expanded one does better but is still
short of 95 % there, and the truncated estimates lean upward where the term is near 0 — the
report says "95 % intervals from resampling tasks" and points at those figures. With one arm only, the task
× arm term cannot be told from the between-task one; it is reported as 0 and said so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from runtime.stats.design import Components

TASK = ("domain", "task_id")


@dataclass(frozen=True)
class Estimate:
    components: Components
    low: Components
    high: Components
    """The percentile bounds of each component over the task resamples (``confidence``)."""
    tasks: int
    trials: float
    """Mean trials per task and arm."""
    arms: tuple[str, ...]
    confidence: float
    notes: tuple[str, ...] = field(default=())


def cells(frame: pd.DataFrame, arms: tuple[str, ...], *, arm: str = "arm", score: str = "score",
          task: tuple[str, ...] = TASK) -> np.ndarray:
    """Scores as an array ``(tasks, arms, trials)`` padded with NaN, for the tasks present in
    every arm."""
    part = frame[frame[arm].isin(arms)].dropna(subset=[score])
    keys = [tuple(k) if isinstance(k, tuple) else (k,) for k in part[list(task)].itertuples(index=False, name=None)]
    part = part.assign(_task=keys)
    present = set.intersection(*(set(part.loc[part[arm] == a, "_task"]) for a in arms)) if arms else set()
    units = sorted(present)
    width = int(part.groupby(["_task", arm]).size().max()) if len(part) else 0
    out = np.full((len(units), len(arms), max(width, 1)), np.nan)
    index = {u: i for i, u in enumerate(units)}
    for (unit, name), group in part[part["_task"].isin(present)].groupby(["_task", arm]):
        values = group[score].astype(float).to_numpy()
        out[index[unit], arms.index(name), :len(values)] = values
    return out


def moments(scores: np.ndarray) -> Components:
    """The moment estimates from ``(tasks, arms, trials)`` scores (one or two arms)."""
    between, task_mode, within = batch_moments(scores)
    return Components(float(between), float(task_mode), float(within))


def batch_moments(scores: np.ndarray, *, truncate: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(between-task, task × arm, within-task) from ``(..., tasks, arms, trials)`` scores (NaN:
    no episode), for any leading batch axes: one call estimates every resample or every
    simulated experiment. ``truncate=False`` keeps a negative moment estimate as it is."""
    s = np.asarray(scores, dtype=float)
    counts = np.sum(~np.isnan(s), axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.nanmean(s, axis=-1)
        squares = np.nansum((s - means[..., None]) ** 2, axis=-1)
        dof = np.sum(np.maximum(counts - 1, 0), axis=(-2, -1))
        within = np.where(dof > 0, np.sum(squares, axis=(-2, -1)) / np.maximum(dof, 1), 0.0)
        inverse = 1.0 / counts
    tasks = s.shape[-3]
    clip = (lambda x: np.maximum(x, 0.0)) if truncate else (lambda x: x)
    zero = np.zeros_like(within)
    if tasks < 2:
        return zero, zero, within
    if s.shape[-2] == 1:
        spread = np.var(means[..., 0], axis=-1, ddof=1)
        return clip(spread - within * np.mean(inverse[..., 0], axis=-1)), zero, within
    h = np.mean(inverse[..., 0] + inverse[..., 1], axis=-1)
    d = means[..., 0] - means[..., 1]
    a = (means[..., 0] + means[..., 1]) / 2
    task_mode = clip((np.var(d, axis=-1, ddof=1) - within * h) / 2)
    between = clip(np.var(a, axis=-1, ddof=1) - task_mode / 2 - within * h / 4)
    return between, task_mode, within


def expanded_percentiles(tasks: int, confidence: float) -> list[float]:
    """The percentiles of the expanded percentile interval (Hesterberg, "What teachers should
    know about the bootstrap", 2015): those of a normal at ``√(n / (n − 1)) · t_{n−1}`` instead
    of z, which undoes the plain percentile interval's narrowness at a few dozen tasks."""
    from scipy import stats

    z = math.sqrt(tasks / (tasks - 1)) * stats.t.ppf((1 + confidence) / 2, tasks - 1)
    tail = float(stats.norm.sf(z))
    return [tail, 1 - tail]


def estimate(frame: pd.DataFrame, arms: tuple[str, ...], *, arm: str = "arm", score: str = "score",
             task: tuple[str, ...] = TASK, confidence: float = 0.95, resamples: int = 1000,
             seed: int = 0) -> Estimate:
    """The components of ``frame``'s scores in ``arms`` (two: treatment, control; or one)."""
    if not 1 <= len(arms) <= 2:
        raise ValueError(f"need one or two arms, got {arms!r}")
    scores = cells(frame, tuple(arms), arm=arm, score=score, task=task)
    if len(scores) < 2:
        raise ValueError(f"need at least 2 tasks scored in {' and '.join(arms)}, found {len(scores)}")
    point = moments(scores)
    rng = np.random.default_rng(seed)
    draws = batch_moments(scores[rng.integers(0, len(scores), (resamples, len(scores)))])
    q = expanded_percentiles(len(scores), confidence)
    bounds = {name: np.quantile(draw, q) for name, draw in zip(("between_task", "task_mode", "within_task"), draws)}
    notes = []
    trials = float(np.mean(np.sum(~np.isnan(scores), axis=-1)))
    if np.nanmax(np.sum(~np.isnan(scores), axis=-1)) < 2:
        notes.append("one trial per task and arm: within-task variance cannot be told from the "
                     "task × arm term (both read as 0 / task × arm); run ≥ 2 trials")
    if len(arms) == 1:
        notes.append("one arm: the task × arm term cannot be estimated and is taken as 0")
    return Estimate(point, Components(*(float(bounds[n][0]) for n in bounds)),
                    Components(*(float(bounds[n][1]) for n in bounds)), len(scores), trials,
                    tuple(arms), confidence, tuple(notes))
