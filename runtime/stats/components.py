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
replacement and re-estimating: a percentile interval per component. With one arm only, the task
× arm term cannot be told from the between-task one; it is reported as 0 and said so.
"""

from __future__ import annotations

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
    counts = np.sum(~np.isnan(scores), axis=-1)
    means = np.nanmean(scores, axis=-1)
    squares = np.nansum((scores - means[..., None]) ** 2, axis=-1)
    dof = np.sum(np.maximum(counts - 1, 0))
    within = float(np.sum(squares) / dof) if dof > 0 else 0.0
    inverse = 1.0 / counts
    if scores.shape[1] == 1:
        spread = float(np.var(means[:, 0], ddof=1)) if len(means) > 1 else 0.0
        return Components(max(spread - within * float(np.mean(inverse[:, 0])), 0.0), 0.0, within)
    h = inverse[:, 0] + inverse[:, 1]
    d = means[:, 0] - means[:, 1]
    a = (means[:, 0] + means[:, 1]) / 2
    if len(d) < 2:
        return Components(0.0, 0.0, within)
    task_mode = max((float(np.var(d, ddof=1)) - within * float(np.mean(h))) / 2, 0.0)
    between = max(float(np.var(a, ddof=1)) - task_mode / 2 - within * float(np.mean(h)) / 4, 0.0)
    return Components(between, task_mode, within)


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
    draws = [moments(scores[rng.integers(0, len(scores), len(scores))]) for _ in range(resamples)]
    q = [(1 - confidence) / 2, (1 + confidence) / 2]
    bounds = {name: np.quantile([getattr(c, name) for c in draws], q)
              for name in ("between_task", "task_mode", "within_task")}
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
