"""``python -m bench.calibration``: the fixed-design calibration of the statistics layer.

Every figure comes from experiments whose truth is known (``testkit.stochastic``: tasks of
differing difficulty, 0/1 episodes, an effect that differs between tasks), simulated many times
over and read through the same functions a report and a plan use:

1. **Δ's interval** (``runtime.stats.intervals.paired_interval``, floored) against the plain t
   interval it replaced: coverage of the true Δ at 20 × 1, 20 × 3 and 50 × 3, success rates
   0.05 / 0.5 / 0.95, ICC 0.2 / 0.4 / 0.6, task × arm sd 0 / 0.15, effect 0 / +0.1 and 0 / 2 /
   15 % of episodes errored (an errored episode loses its pair), and the share of zero-width
   intervals;
2. **each arm's mean** (``arm_interval``): its coverage on the same cells, and on a grid of its
   own up to 50 × 10 and success 0.2, where a rare success concentrates in a few tasks;
3. **power at the planner's stated size** (``runtime.stats.design.plan``): the share of
   experiments that reject Δ = 0 at the Δ the planner states for 80 %, with errors, and when
   the planner assumes a task × arm sd other than the truth's;
4. **the variance components' intervals** (``runtime.stats.components.estimate``): their
   coverage and the task × arm estimate's bias;
5. the original grid (30 / 50 / 114 tasks, ICC 0.2 / 0.45, spread 0 / 0.1) with and without the
   clustering by task.

``--write FILE`` replaces FILE with the tables (``bench/CALIBRATION.md``); ``--quick`` runs a
tenth of the experiments. A few minutes on one core.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from functools import lru_cache
from itertools import product
from pathlib import Path

import numpy as np

from runtime.stats import design
from runtime.stats.components import batch_moments, expanded_percentiles
from runtime.stats.design import Components
from runtime.stats.intervals import arm_interval, paired_interval
from testkit.stochastic import StochasticBenchmark

DESIGNS = ((20, 1), (20, 3), (50, 3))
RATES = (0.05, 0.5, 0.95)
ICCS = (0.2, 0.4, 0.6)
TASK_MODE_SDS = (0.0, 0.15)
EFFECTS = (0.0, 0.1)
ERRORS = (0.0, 0.02, 0.15)
BAND = (0.935, 0.965)


@lru_cache(maxsize=None)
def bench_for(rate: float, icc: float, task_mode_sd: float, effect: float) -> StochasticBenchmark:
    """The generator whose per-arm task × arm sd is ``task_mode_sd`` before clipping: its
    spread s gives a task's effect ± 2s, a per-arm term of variance 2s². One instance per
    cell, so its truth (by quadrature) is computed once."""
    return StochasticBenchmark(mean=rate, icc=icc, effect=effect, spread=task_mode_sd / math.sqrt(2))


def with_errors(scores: np.ndarray, rate: float, rng: np.random.Generator) -> np.ndarray:
    if rate <= 0:
        return scores
    return np.where(rng.random(scores.shape) < rate, np.nan, scores)


@lru_cache(maxsize=None)
def arm_truth(bench: StochasticBenchmark) -> tuple[float, float]:
    """The two arms' true mean success rates over the task population."""
    from testkit.stochastic import _quantiles

    p = _quantiles(*bench._ab)
    sums = [bench.arms(p, np.full_like(p, sign)) for sign in (-1.0, 1.0)]
    return (float(np.mean([s[0].mean() for s in sums])), float(np.mean([s[1].mean() for s in sums])))


def plain_t(t: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The interval the reports used before: t over per-task differences, no floor."""
    from scipy import stats

    from runtime.stats.intervals import pair_by_trial

    t, c = pair_by_trial(t, c)
    with np.errstate(invalid="ignore"):
        d = np.nanmean(t - c, axis=-1)
    n = np.sum(~np.isnan(d), axis=-1)
    sd = np.nanstd(d, axis=-1, ddof=1)
    half = stats.t.ppf(0.975, np.maximum(n - 1, 1)) * sd / np.sqrt(n)
    mean = np.nanmean(d, axis=-1)
    return mean - half, mean + half


def coverage_grid(scale: float) -> list[str]:
    rows = ["| tasks × trials | success | ICC | task × arm sd | effect | errored | true Δ | experiments "
            "| coverage | plain t | zero-width (plain t) | zero-width | arm means' coverage |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    seed, covered = 100, []
    for (tasks, trials), rate, icc, tm, effect, errors in product(DESIGNS, RATES, ICCS, TASK_MODE_SDS,
                                                                    EFFECTS, ERRORS):
        seed += 1
        experiments = int(2000 * scale)
        bench = bench_for(rate, icc, tm, effect)
        truth, _ = bench.truth
        rng = np.random.default_rng(seed)
        t, c = bench.simulate(tasks, trials, experiments, seed)
        t, c = with_errors(t, errors, rng), with_errors(c, errors, rng)
        found = paired_interval(t, c)
        ok = ~np.isnan(found.low)
        cover = float(np.mean((found.low <= truth) & (truth <= found.high) & ok))
        low, high = plain_t(t, c)
        plain = float(np.mean((low <= truth) & (truth <= high)))
        zero = float(np.mean((high - low) == 0))
        zero_new = float(np.mean((found.high - found.low) == 0))
        t_mean, c_mean = arm_truth(bench)
        arms = [arm_interval(t), arm_interval(c)]
        arm_cover = float(np.mean([np.mean((a.low <= m) & (m <= a.high))
                                   for a, m in zip(arms, (t_mean, c_mean))]))
        covered.append((cover, arm_cover, effect, tasks, trials))
        rows.append(f"| {tasks} × {trials} | {rate:g} | {icc:g} | {tm:g} | {effect:+g} | "
                    f"{errors:.0%} | {truth:+.3f} | {experiments} | {cover:.1%} | "
                    f"{plain:.1%} | {zero:.1%} | {zero_new:.1%} | {arm_cover:.1%} |")
    cover = np.array([c[0] for c in covered])
    arms = np.array([c[1] for c in covered])
    rows += ["", f"Δ's interval: coverage {cover.min():.2%} to {cover.max():.1%} over {len(cover)} cells; "
             f"{int(np.sum(cover >= BAND[0]))} cells at or above {BAND[0]:.1%}, "
             f"{int(np.sum((cover >= BAND[0]) & (cover <= BAND[1])))} within 95 ± 1.5 %. "
             f"Arm means: {arms.min():.1%} to {arms.max():.1%}; {int(np.sum(arms >= BAND[0]))} cells at or "
             f"above {BAND[0]:.1%}."]
    return rows


ARM_DESIGNS = ((20, 1), (20, 3), (50, 3), (20, 8), (50, 10))
ARM_RATES = (0.05, 0.2, 0.5, 0.95)


def arm_grid(scale: float) -> list[str]:
    """Each arm's interval alone, on more trials a task than Δ's grid: the arm's failure mode
    (a rare success concentrated in a few tasks) grows with the trials."""
    from scipy import stats

    rows = ["| tasks × trials | success | ICC | task × arm sd | errored | true mean | experiments "
            "| coverage | interval below the truth | above it |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    seed, covered = 900, []
    for (tasks, trials), rate, icc, tm, errors in product(ARM_DESIGNS, ARM_RATES, ICCS, TASK_MODE_SDS,
                                                          (0.0, 0.15)):
        seed += 1
        experiments = int(2000 * scale)
        bench = bench_for(rate, icc, tm, 0.0)
        _, truth = arm_truth(bench)
        rng = np.random.default_rng(seed)
        _, c = bench.simulate(tasks, trials, experiments, seed)
        found = arm_interval(with_errors(c, errors, rng))
        below = float(np.mean(found.high < truth))
        above = float(np.mean(found.low > truth))
        covered.append((1 - below - above, tasks, trials))
        rows.append(f"| {tasks} × {trials} | {rate:g} | {icc:g} | {tm:g} | {errors:.0%} | "
                    f"{truth:.3f} | {experiments} | {1 - below - above:.1%} | {below:.1%} | "
                    f"{above:.1%} |")
    cover = np.array([c[0] for c in covered])
    counts = np.array([c[1] * c[2] for c in covered])
    many = cover[counts > 20]
    # 20 × 1: the mean is a binomial count of 20, so at 0.05 every interval that is a function
    # of it covers P(X ≤ 2) = 92.5 % or at least P(X ≤ 3) = 98.4 %: none can be within the band
    tight, loose = stats.binom.cdf(2, 20, 0.05), stats.binom.cdf(3, 20, 0.05)
    rows += ["", f"Arm means: coverage {cover.min():.1%} to {cover.max():.1%} over {len(cover)} cells; "
             f"beyond 20 × 1, {many.min():.1%} to {many.max():.1%}, {int(np.sum(many >= BAND[0]))} of "
             f"{len(many)} cells at or above {BAND[0]:.1%}, {int(np.sum((many >= BAND[0]) & (many <= BAND[1])))} "
             f"within 95 ± 1.5 %. At 20 × 1 an arm's mean is a binomial count of 20 episodes: at "
             f"success 0.05 any interval that is a function of the count covers {tight:.1%} or at "
             f"least {loose:.1%}, never in between."]
    return rows


def power_grid(scale: float) -> list[str]:
    rows = ["| tasks × trials | ICC | true task × arm sd | planned task × arm sd | errored (true = planned) "
            "| stated detectable Δ | experiments | power in simulation |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    seed = 5000
    for tasks, trials in ((20, 3), (50, 3), (50, 10)):
        for icc in (0.2, 0.45):
            for true_tm in (0.0, 0.1):
                for planned_tm in sorted({0.0, 0.1}):
                    for errors in (0.0, 0.05, 0.15):
                        if planned_tm != true_tm and errors:
                            continue
                        seed += 1
                        bench = bench_for(0.5, icc, true_tm, 0.0)
                        _, truth = bench.truth
                        planned = Components(truth.between_task + truth.task_mode - planned_tm ** 2,
                                             planned_tm ** 2, truth.within_task)
                        stated = design.mde(planned, tasks, trials, error_rate=errors)
                        at = _at_effect(bench, stated)
                        experiments = int(4000 * scale)
                        rng = np.random.default_rng(seed)
                        t, c = at.simulate(tasks, trials, experiments, seed)
                        t, c = with_errors(t, errors, rng), with_errors(c, errors, rng)
                        found = paired_interval(t, c)
                        power = float(np.mean((found.low > 0) | (found.high < 0)))
                        rows.append(f"| {tasks} × {trials} | {icc:g} | {true_tm:g} | {planned_tm:g} | "
                                    f"{errors:.0%} | {stated:.3f} | {experiments} | {power:.1%} |")
    return rows


def _at_effect(bench: StochasticBenchmark, target: float) -> StochasticBenchmark:
    """The same benchmark with its true Δ moved to ``target`` (to 1e-4 after three steps)."""
    for _ in range(3):
        true, _ = bench.truth
        bench = StochasticBenchmark(bench.mean, bench.icc, bench.effect + (target - true), bench.spread)
    return bench


def components_grid(scale: float) -> list[str]:
    rows = ["| tasks × trials | ICC | true task × arm | experiments | between-task | task × arm | "
            "within-task | task × arm bias |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    seed = 9000
    for tasks, trials in ((20, 3), (50, 3), (114, 3)):
        for icc in (0.2, 0.45):
            for tm in (0.0, 0.1):
                seed += 1
                bench = bench_for(0.5, icc, tm, 0.0)
                _, truth = bench.truth
                experiments = int(300 * scale)
                t, c = bench.simulate(tasks, trials, experiments, seed)
                scores = np.stack([t, c], axis=-2)  # (experiments, tasks, arms, trials)
                point = batch_moments(scores)
                rng = np.random.default_rng(seed)
                hits = np.zeros(3)
                true = np.array([truth.between_task, truth.task_mode, truth.within_task])
                for one in scores:  # the report's method: 500 task resamples, expanded percentiles
                    draws = np.array(batch_moments(one[rng.integers(0, tasks, (500, tasks))]))
                    low, high = np.quantile(draws, expanded_percentiles(tasks, 0.95), axis=-1)
                    hits += (low <= true + 1e-12) & (true - 1e-12 <= high)
                cover = list(hits / experiments)
                bias = float(np.mean(point[1]) - truth.task_mode)
                rows.append(f"| {tasks} × {trials} | {icc:g} | {truth.task_mode:.4f} | {experiments} | "
                            f"{cover[0]:.1%} | {cover[1]:.1%} | {cover[2]:.1%} | {bias:+.4f} |")
    return rows


def legacy_grid(scale: float) -> list[str]:
    from tests.test_calibration import FULL, measure

    rows = ["| tasks | trials | icc | spread | experiments | coverage | power at MDE | "
            "coverage, unclustered | power, unclustered |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for tasks, trials, icc, spread in FULL:
        experiments = int(max(2000, min(8000, 800_000 // (tasks * trials))) * scale)
        coverage, power = measure(tasks, trials, icc, spread, experiments, seed=7 + tasks + trials)
        naive = ("–", "–")
        if spread and trials > 1:
            c, p = measure(tasks, trials, icc, spread, experiments, seed=11 + tasks + trials, clustered=False)
            naive = (f"{c:.1%}", f"{p:.1%}")
        rows.append(f"| {tasks} | {trials} | {icc:g} | {spread:g} | {experiments} | {coverage:.1%} | "
                    f"{power:.1%} | {naive[0]} | {naive[1]} |")
    return rows


SECTIONS = (
    ("Δ's interval at small samples and extreme rates", coverage_grid),
    ("Each arm's mean: its interval at more trials a task and rates", arm_grid),
    ("Power at the planner's stated detectable Δ", power_grid),
    ("Variance components: 95 % intervals from resampling tasks", components_grid),
    ("The original grid, with and without clustering by task", legacy_grid),
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.calibration", description=__doc__.split("\n\n")[0])
    p.add_argument("--write", type=Path, metavar="FILE", help="write the tables to FILE (Markdown)")
    p.add_argument("--quick", action="store_true", help="a tenth of the experiments")
    args = p.parse_args(argv)
    scale = 0.1 if args.quick else 1.0
    out = ["# Calibration of the statistics (fixed designs)", "",
           "Made by `python -m bench.calibration --write bench/CALIBRATION.md` (`make calibration`); "
           "every experiment is simulated from `testkit/stochastic.py` and read through the "
           "functions the reports and plans use. Coverage of a 95 % interval is the share of "
           "experiments whose interval holds the true value; power, the share that reject Δ = 0.", ""]
    started = time.time()
    for title, section in SECTIONS:
        began = time.time()
        out += [f"## {title}", "", *section(scale), "", f"({time.time() - began:.0f} s)", ""]
        print(f"{title}: done in {time.time() - began:.0f} s", file=sys.stderr, flush=True)
    out.append(f"Total: {time.time() - started:.0f} s.")
    text = "\n".join(out) + "\n"
    if args.write:
        args.write.write_text(text, encoding="utf-8")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
