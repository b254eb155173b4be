"""Statistics for comparing modes on the same tasks: paired bootstrap CIs, the exact sign test,
pass^k. Single τ²-bench runs differ by several points between identical runs, so every
difference the reports show comes with its uncertainty.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np
import pandas as pd
from scipy.stats import binomtest


@dataclass(frozen=True)
class PairedDelta:
    mean: float
    low: float
    high: float
    n: int
    wins: int
    losses: int
    ties: int
    sign_p: float

    def covers_zero(self) -> bool:
        return self.low <= 0.0 <= self.high


def paired_delta(treatment: np.ndarray, control: np.ndarray, *, confidence: float = 0.95,
                 resamples: int = 10_000, seed: int = 0) -> PairedDelta:
    """Mean of ``treatment - control`` over paired units (tasks), with a percentile bootstrap CI
    that resamples units, and the exact two-sided sign test over non-tied pairs."""
    t = np.asarray(treatment, dtype=float)
    c = np.asarray(control, dtype=float)
    if t.shape != c.shape or t.ndim != 1 or len(t) == 0:
        raise ValueError(f"need two equal-length non-empty 1-D samples, got {t.shape} and {c.shape}")
    diff = t - c
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(diff), size=(resamples, len(diff)))
    means = diff[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    wins, losses = int((diff > 0).sum()), int((diff < 0).sum())
    sign_p = binomtest(wins, wins + losses, 0.5).pvalue if wins + losses else 1.0
    return PairedDelta(float(diff.mean()), float(low), float(high), len(diff), wins, losses,
                       int((diff == 0).sum()), float(sign_p))


def pass_hat_k(successes: int, trials: int, k: int) -> float:
    """τ-bench's pass^k for one task: the chance that k trials drawn without replacement from
    the ``trials`` run all succeed, C(successes, k) / C(trials, k)."""
    if not 1 <= k <= trials:
        raise ValueError(f"k must be in 1..{trials}, got {k}")
    return comb(successes, k) / comb(trials, k)


TASK = ["domain", "task_id"]
"""The unit Δ is paired on. Trials of one task are not independent, so they are averaged within
the task first and the tasks are the resampled units."""


def task_delta(treatment: pd.DataFrame, control: pd.DataFrame, **kwargs) -> PairedDelta | None:
    """Δ = treatment − control, the one definition every table uses: each arm's scored episodes
    (columns ``domain``, ``task_id``, ``score``) averaged over trials within a task, paired over
    the tasks present in both arms. ``None`` when no task is in both."""
    t = treatment.groupby(TASK)["score"].mean()
    c = control.groupby(TASK)["score"].mean()
    units = t.index.intersection(c.index)
    if not len(units):
        return None
    return paired_delta(t.loc[units].to_numpy(), c.loc[units].to_numpy(), **kwargs)
