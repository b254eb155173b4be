"""Statistics for comparing modes on the same tasks: the paired Δ with its clustered t interval
(``runtime.stats.intervals``, calibrated in tests/test_calibration.py), the size the run could
detect at its own variance and the verdict that follows, the exact sign test, pass^k. Single
τ²-bench runs differ by several points between identical runs, so every difference the reports
show comes with its uncertainty and with what the run could have seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb
from typing import Any

import numpy as np
import pandas as pd


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
    se: float = float("nan")
    p: float = float("nan")
    """The two-sided p-value of Δ = 0 from the clustered t test."""
    mde: float = float("inf")
    """The Δ this run could detect (80 % power, two-sided at 1 − confidence) at its own
    per-task variance (``runtime.stats.design.run_detectable``, the figure ``runtime.power
    --from`` gives for the same folder): what "the interval covers 0" has to be read against."""
    floor_only: bool = False
    """No variance was observed: the interval's width and the detectable size are the floor's."""
    pairs: int = 0
    """Episode pairs (same task, same trial, both arms) the Δ rests on."""
    components: Any = None
    """The ``Components`` the detectable size is computed from (``design.run_components``)."""

    def covers_zero(self) -> bool:
        return self.low <= 0.0 <= self.high

    def verdict(self, digits: int = 2, scale: float = 1.0) -> str:
        from runtime.stats.verdict import verdict

        said = verdict(self.mean, self.low, self.high, self.mde, digits=digits, scale=scale)
        return f"{FLOOR_NOTE}; {said}" if self.floor_only else said


FLOOR_NOTE = ("no variance observed (every task's difference the same): interval and detectable "
              "size from the floor (Agresti–Coull's 2 differing and 2 equal pairs added), not from "
              "the run")


def paired_delta(treatment: np.ndarray, control: np.ndarray, *, confidence: float = 0.95) -> PairedDelta:
    """Mean of ``treatment - control`` over paired units: scores ``(tasks, trials)`` paired by
    trial (NaN: no episode), or per-task means ``(tasks,)`` taken for one trial each. The
    clustered interval with its variance floor (``runtime.stats.intervals.paired_interval``,
    calibrated in bench/calibration.py), its detectable size and the exact two-sided sign test."""
    # scipy takes ~1 s to import: loaded by the reports that compare arms, not by every run
    from scipy.stats import binomtest

    from runtime.stats.design import run_components, run_detectable
    from runtime.stats.intervals import paired_interval

    t = np.asarray(treatment, dtype=float)
    c = np.asarray(control, dtype=float)
    if t.ndim == 1 and c.ndim == 1:
        t, c = t[:, None], c[:, None]
    if t.shape[0] != c.shape[0] or t.ndim != 2 or c.ndim != 2 or len(t) == 0:
        raise ValueError(f"need two equal-length non-empty samples, got {t.shape} and {c.shape}")
    found = paired_interval(t, c, confidence=confidence)
    with np.errstate(invalid="ignore"):
        per_task = np.nanmean(np.where(np.isnan(t) | np.isnan(c), np.nan, t - c), axis=1)
    diff = per_task[~np.isnan(per_task)]
    if len(diff) == 0:
        raise ValueError("no task has an episode pair in both arms")
    components = None
    if len(diff) < 2:  # one task: nothing to tell its difference from noise with
        low, high, detectable = -np.inf, np.inf, float("inf")
    else:
        low, high = float(found.low), float(found.high)
        components = run_components(float(found.sd) ** 2, float(found.within), float(found.inverse_trials))
        detectable = run_detectable(components, len(diff), float(found.inverse_trials), alpha=1 - confidence)
    wins, losses = int((diff > 0).sum()), int((diff < 0).sum())
    sign_p = binomtest(wins, wins + losses, 0.5).pvalue if wins + losses else 1.0
    pairs = int(np.sum(~np.isnan(t) & ~np.isnan(c)))
    return PairedDelta(float(diff.mean()), low, high, len(diff), wins, losses,
                       int((diff == 0).sum()), float(sign_p), float(found.se), float(found.p), detectable,
                       bool(found.floor_only) and len(diff) > 1, pairs, components)


def pass_hat_k(successes: int, trials: int, k: int) -> float:
    """τ-bench's pass^k for one task: the chance that k trials drawn without replacement from
    the ``trials`` run all succeed, C(successes, k) / C(trials, k)."""
    if not 1 <= k <= trials:
        raise ValueError(f"k must be in 1..{trials}, got {k}")
    return comb(successes, k) / comb(trials, k)


TASK = ["domain", "task_id"]
"""The unit Δ is paired on. Trials of one task are not independent, so they are averaged within
the task first and the tasks are the resampled units."""

SUCCESS = 1.0 - 1e-6
"""τ²-bench's success threshold: an episode succeeds when its reward is at least this."""

ERROR_RATE_LIMIT = 0.05
"""A report flags an arm whose share of errored episodes is above this…"""
ERROR_GAP_LIMIT = 0.02
"""…or arms whose error rates differ by more than this (2 percentage points)."""

DELTA_LINES = {"complete": "episode pairs complete in both arms", "errors_as_0": "errored episodes scored 0"}
"""The two ways Δ is reported: complete-case, and with every episode counted."""


def _status(frame: pd.DataFrame) -> pd.Series:
    return frame["status"] if "status" in frame else pd.Series("ok", index=frame.index)


def task_delta(treatment: pd.DataFrame, control: pd.DataFrame, *, errors: str = "complete",
               **kwargs) -> PairedDelta | None:
    """Δ = treatment − control, the one definition every table uses. Each arm's episodes
    (columns ``domain``, ``task_id``, ``trial``, ``score``, ``status``) are paired by trial
    within a task (trial k with trial k), averaged over the task's pairs and the tasks paired.

    ``errors="complete"``: only the pairs whose two episodes finished, so an arm that errors
    more is not compared on an easier subset of trials; an errored episode leaves out its own
    pair, never the task's other pairs. ``errors="errors_as_0"``: every episode, an errored one
    scored 0 as τ²'s runner and ToolSandbox score a failed run. ``None`` when no pair qualifies."""
    if errors not in DELTA_LINES:
        raise ValueError(f"errors must be one of {list(DELTA_LINES)}, got {errors!r}")
    t, c = trial_scores(treatment, errors), trial_scores(control, errors)
    units = t.index.intersection(c.index)
    if not len(units):
        return None
    columns = t.columns.union(c.columns)
    t = t.loc[units].reindex(columns=columns).to_numpy()
    c = c.loc[units].reindex(columns=columns).to_numpy()
    keep = np.any(~np.isnan(t) & ~np.isnan(c), axis=1)
    if not keep.any():
        return None
    return paired_delta(t[keep], c[keep], **kwargs)


def trial_scores(frame: pd.DataFrame, errors: str = "complete") -> pd.DataFrame:
    """Scores as a table: one row per task (``TASK``), one column per trial; an errored
    episode NaN (``complete``) or 0 (``errors_as_0``)."""
    ok = _status(frame) == "ok"
    score = frame["score"].astype(float).where(ok, np.nan if errors == "complete" else 0.0)
    trial = frame["trial"] if "trial" in frame else frame.groupby([frame[c] for c in TASK]).cumcount()
    table = pd.DataFrame({"domain": frame["domain"], "task_id": frame["task_id"], "trial": trial,
                          "score": score})
    if table.empty:
        return pd.DataFrame(index=pd.MultiIndex.from_tuples([], names=TASK))
    return table.pivot_table(index=TASK, columns="trial", values="score", aggfunc="mean", dropna=False)


def delta_lines(treatment: pd.DataFrame, control: pd.DataFrame, **kwargs) -> dict[str, PairedDelta | None]:
    """Both lines of Δ, complete-case first."""
    return {line: task_delta(treatment, control, errors=line, **kwargs) for line in DELTA_LINES}


def pass_k(frame: pd.DataFrame, trials: int) -> dict[int, float]:
    """pass^k for k = 1..trials, averaged over tasks with at least k episodes; an episode counts
    as a success as in τ² (reward ≥ 1 − 1e-6) and an errored one as a failure."""
    success = (_status(frame) == "ok") & (frame["score"].fillna(0.0).astype(float) >= SUCCESS)
    per_task = success.groupby([frame[c] for c in TASK]).agg(["sum", "count"])
    result = {}
    for k in range(1, trials + 1):
        values = [pass_hat_k(int(r["sum"]), int(r["count"]), k) for _, r in per_task.iterrows()
                  if r["count"] >= k]
        if values:
            result[k] = float(np.mean(values))
    return result


@dataclass(frozen=True)
class ArmErrors:
    """How many of an arm's episodes errored, and how many of those were infrastructure's."""

    episodes: int
    errors: int
    infrastructure: int
    causes: tuple[tuple[str, int], ...] = field(default=(), compare=False)
    """Errors by cause (``runtime.episode.failures.CAUSES``), most frequent first; older records
    without a cause are counted as ``unrecorded``."""

    def causes_text(self) -> str:
        return ", ".join(f"{n} {cause}" for cause, n in self.causes)

    @property
    def rate(self) -> float:
        return self.errors / self.episodes if self.episodes else 0.0


def arm_errors(frame: pd.DataFrame) -> ArmErrors:
    errored = _status(frame) == "error"
    kinds = frame["error_kind"] if "error_kind" in frame else pd.Series(None, index=frame.index)
    causes = frame["error_cause"] if "error_cause" in frame else pd.Series(None, index=frame.index)
    counted = causes[errored].fillna("unrecorded").value_counts()
    return ArmErrors(int(len(frame)), int(errored.sum()), int((errored & (kinds == "infrastructure")).sum()),
                     tuple(sorted(((str(c), int(n)) for c, n in counted.items()), key=lambda x: (-x[1], x[0]))))


def error_warnings(arms: dict[str, ArmErrors]) -> list[str]:
    """Why the arms' numbers may be biased by errors: an arm above ``ERROR_RATE_LIMIT``, or two
    arms whose error rates differ by more than ``ERROR_GAP_LIMIT``."""
    warnings = [f"{name}: {a.errors}/{a.episodes} episodes errored ({a.rate:.1%} > "
                f"{ERROR_RATE_LIMIT:.0%}; {a.infrastructure} infrastructure; by cause: "
                f"{a.causes_text()})"
                for name, a in arms.items() if a.episodes and a.rate > ERROR_RATE_LIMIT]
    rated = {n: a.rate for n, a in arms.items() if a.episodes}
    if len(rated) > 1:
        high, low = max(rated, key=rated.get), min(rated, key=rated.get)
        if rated[high] - rated[low] > ERROR_GAP_LIMIT + 1e-12:
            warnings.append(f"error rates differ between arms by {(rated[high] - rated[low]) * 100:.1f} "
                            f"points ({high} {rated[high]:.1%} vs {low} {rated[low]:.1%}; limit "
                            f"{ERROR_GAP_LIMIT * 100:.0f})")
    return warnings
