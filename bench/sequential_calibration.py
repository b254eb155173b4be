"""``python -m bench.sequential_calibration``: the calibration of ``--until-decided``
(``runtime.stats.sequential``, ``runtime.stats.spending``) by simulation; its output is
bench/SEQUENTIAL.md. Every rate is given with its experiment count and Clopper–Pearson 95 %
interval.

The experiments are bench/experiments.py's, written apart from the dry run's own simulation:
Beta task difficulties, a task × arm term on the probability or the logit scale, errors at
random, on hard tasks, or only on the treatment's failing episodes.

1. Type-I error by tasks × horizon, a look after every wave, for both boundaries (time-uniform;
   α-spending planned over the horizon); designs drawn per experiment over success 0.05–0.95,
   ICC 0.2–0.6, task × arm sd 0–0.15 (probability scale) or 0–0.6 (logit scale), 2–15 %
   errored (at random or on hard tasks). Beside it the fixed-size t interval read every wave.
2. Coverage of a real effect, uniformly over the waves (the true Δ inside the interval at every
   wave at once), at 20 and 30 tasks with success near 0 or 1 and task effects skewed by the
   logit scale.
3. Expected episodes against the fixed design of equal power at τ-bench airline's figures (50
   tasks, success 0.46, ICC 0.405, task × arm sd 0.03, 5 % errored), 80 % power.
4. The errors-by-arm case: 15 % of the treatment's failing episodes error, Δ 0 — the share that
   stops on *effect* on complete pairs alone and under the runtime's rule (both readings agree).
5. The Δ at a stop against the truth (why the report caveats it).

``--scale F`` multiplies every experiment count (0.25 for a quick look); the full run (scale 1)
takes about three minutes on one core (182 s on a shared machine). ``--write bench/SEQUENTIAL.md`` replaces the tables there
(the text above them is kept).
"""

from __future__ import annotations

import sys
import time

import numpy as np
from scipy import stats

from bench.experiments import rate, simulate, true_delta
from runtime.stats.sequential import decisions, first_decision, sequence, task_means
from runtime.stats.spending import SPENDING

MARGIN = 0.03
CHUNK = 500
SCALE = 1.0


def count(n: int) -> int:
    return max(CHUNK // 5, int(round(n * SCALE / 100)) * 100)


def fixed_codes(d: np.ndarray) -> np.ndarray:
    """Per experiment and wave: the fixed-size clustered t interval's verdict (−1, 0, 1)."""
    means, _ = task_means(d)
    n = np.sum(~np.isnan(means), axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.nanmean(means, axis=-2)
        half = stats.t.ppf(0.975, np.maximum(n - 1, 1)) * np.sqrt(np.nanvar(means, axis=-2, ddof=1) / n)
    return np.where(m - half > 0, 1, np.where(m + half < 0, -1, 0))


def rule(d_excluded: np.ndarray, d_failures: np.ndarray | None, looks: int | None, family: str | None = None):
    """The runtime's stop rule: (the deciding wave or 0, its code) where both readings agree;
    ``family``: the spending function (None: the runtime's default)."""
    seq = sequence(d_excluded, margin=MARGIN, looks=looks, family=family)
    wave, code = first_decision(decisions(seq.low, seq.high, MARGIN))
    if d_failures is None:
        return wave, code, seq
    other = sequence(d_failures, margin=MARGIN, looks=looks, family=family)
    wave_f, code_f = first_decision(decisions(other.low, other.high, MARGIN))
    agree = (code == code_f) & (code != 0)
    return np.where(agree, np.maximum(wave, wave_f), 0), np.where(agree, code, 0), seq


def designs(rng, size: int, scale: str) -> dict:
    top = 0.15 if scale == "probability" else 0.6
    return {"mean": rng.uniform(0.05, 0.95, size), "icc": rng.uniform(0.2, 0.6, size),
            "arm_sd": rng.uniform(0.0, top, size), "error_rate": rng.uniform(0.02, 0.15, size)}


def type_one(tasks: int, waves: int, experiments: int, seed: int) -> dict:
    claims = {None: 0, waves: 0}
    fixed_any = 0
    for i, start in enumerate(range(0, experiments, CHUNK)):
        size = min(CHUNK, experiments - start)
        rng = np.random.default_rng([seed, i])
        scale = ("probability", "logit")[i % 2]
        x = simulate(rng, size, tasks, waves, scale=scale, errors=("random", "hard")[(i // 2) % 2],
                     **designs(rng, size, scale))
        d, f = x.excluded(), x.as_failures()
        for looks in claims:
            _, code, _ = rule(d, f, looks)
            claims[looks] += int(np.sum(code == 1))
        fixed_any += int(np.sum((fixed_codes(d) != 0).any(axis=-1)))
    return {"uniform": claims[None], "spending": claims[waves], "fixed": fixed_any, "n": experiments}


def coverage(tasks: int, mean: float, shift: float, experiments: int, seed: int, waves: int = 40,
             family: str = "beta") -> dict:
    truth = true_delta(mean=mean, icc=0.4, shift=shift, arm_sd=0.3, scale="logit", family=family)
    covered = {None: 0, waves: 0}
    below = {None: 0, waves: 0}
    for i, start in enumerate(range(0, experiments, CHUNK)):
        size = min(CHUNK, experiments - start)
        rng = np.random.default_rng([seed, i])
        x = simulate(rng, size, tasks, waves, mean=mean, icc=0.4, shift=shift, arm_sd=0.3, scale="logit",
                     errors="random", error_rate=0.05, family=family)
        d = x.excluded()
        for looks in covered:
            seq = sequence(d, margin=MARGIN, looks=looks)
            miss_low = (seq.high < truth).any(axis=-1)
            miss = miss_low | (seq.low > truth).any(axis=-1)
            covered[looks] += int(np.sum(~miss))
            below[looks] += int(np.sum(miss_low))
    return {"truth": truth, "uniform": covered[None], "spending": covered[waves], "n": experiments,
            "below": below}


def airline(shift: float, experiments: int, seed: int, horizon: int = 60):
    rng = np.random.default_rng(seed)
    x = simulate(rng, experiments, 50, horizon, mean=0.46, icc=0.405, shift=shift, arm_sd=0.03,
                 scale="probability", errors="random", error_rate=0.05)
    return x.excluded(), x.as_failures()


def fixed_trials(d: np.ndarray, power: float) -> int | None:
    reach = np.nonzero(np.mean(fixed_codes(d) == 1, axis=0) >= power)[0]
    return int(reach[0]) + 1 if len(reach) else None


def planned_looks(d, f, fixed: int, family: str | None = None) -> int:
    """The fewest α-spending looks whose simulated power is at least 80 %."""
    for looks in range(max(fixed - 2, 1), 3 * fixed):
        _, code, _ = rule(d[..., :looks], f[..., :looks], looks, family)
        if np.mean(code == 1) >= 0.8:
            return looks
    return 3 * fixed


HEAD = "## Type-I error by tasks × horizon"


def tables() -> int:
    started = time.time()
    print(HEAD + "\n")
    print(f"Margin ±{MARGIN:g}, α 0.05, a look after every wave, no effect; the runtime's rule (complete "
          "pairs and errors-as-failures must agree). Designs drawn per experiment (success 0.05–0.95, "
          "ICC 0.2–0.6, task × arm sd 0–0.15 on the probability scale or 0–0.6 on the logit scale, "
          "2–15 % errored at random or on hard tasks). Each rate: % [95 % exact interval] (claims/experiments).\n")
    print("| tasks × waves | time-uniform | α-spending over the waves | fixed-size interval read every wave |")
    print("|---|---:|---:|---:|")
    for tasks, waves, n in ((10, 40, 2000), (15, 40, 2000), (20, 40, 2000), (30, 40, 2000), (50, 40, 2000),
                            (114, 40, 1000), (10, 200, 1000), (20, 200, 2000), (30, 200, 1000)):
        r = type_one(tasks, waves, count(n), seed=tasks * 1000 + waves)
        print(f"| {tasks} × {waves} | {rate(r['uniform'], r['n'])} | {rate(r['spending'], r['n'])} | "
              f"{rate(r['fixed'], r['n'])} |", flush=True)

    print("\n## Coverage of a real effect, uniformly over 40 waves\n")
    print("Task effects skewed: a task × arm term of sd 0.3 and the treatment's shift on the logit "
          "scale, success near 0 or 1, ICC 0.4, 5 % errored at random; covered = the true Δ (the "
          "population's, integrated over two million tasks) inside the interval at *every* wave.\n")
    print("Task difficulties: Beta, and as a check that the rule is not "
          "tuned to one shape, logit-normal and a point mass (60 % of tasks fixed at 0 or 1 in both "
          "arms, the effect carried by the rest; bench/experiments.py's FAMILIES).\n")
    print("| family | tasks | success | logit shift | true Δ | time-uniform | α-spending (40) | misses below the truth (TU / spending) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    cells = [("beta", tasks, shifts) for tasks, shifts in ((20, (0.5, 1.0)), (30, (0.5, 1.0)), (50, (1.0,)))]
    cells += [(family, tasks, (1.0,)) for family in ("logit-normal", "point-mass") for tasks in (20, 30)]
    for family, tasks, shifts in cells:
        for mean in (0.08, 0.92):
            for shift in shifts:
                r = coverage(tasks, mean, shift, count(2000 if family == "beta" else 1000),
                             seed=int(tasks * 100 + mean * 100 + shift * 10), family=family)
                print(f"| {family} | {tasks} | {mean:g} | {shift:g} | {r['truth']:+.4f} | {rate(r['uniform'], r['n'])} | "
                      f"{rate(r['spending'], r['n'])} | {r['below'][None]} / {r['below'][40]} |", flush=True)

    print("\n## Expected episodes against the fixed design of equal power (τ-bench airline)\n")
    n = count(2000)
    print(f"50 tasks, success 0.46, ICC 0.405, task × arm sd 0.03, 5 % errored; {n:,} experiments per Δ. "
          "Fixed design: the fewest trials whose simulated power at the planned Δ is ≥ 80 %. "
          "α-spending: the fewest looks (--max-trials) whose power there is ≥ 80 %. Time-uniform: "
          "--max-trials 60. Episodes per comparison = 2 × 50 × trials.\n")
    print("| planned for | true Δ | fixed trials (80 %) | design | power | mean trials | mean / fixed |")
    print("|---:|---:|---:|---|---:|---:|---:|")
    data = {s: airline(s, n, seed=int(s * 1000)) for s in (0.0, 0.03, 0.05, 0.07)}
    for planned in (0.05, 0.07):
        d, f = data[planned]
        fixed = fixed_trials(d, 0.8)
        looks = planned_looks(d, f, fixed)
        obf = planned_looks(d, f, fixed, "obrien-fleming")
        for true in (0.0, planned, 0.07) if planned == 0.05 else (0.0, planned):
            dd, ff = data[true]
            for name, lk, horizon, both, fam in (
                    (f"α-spending ({SPENDING}), {looks} looks", looks, looks, True, None),
                    (f"α-spending ({SPENDING}), {looks} looks, complete pairs alone", looks, looks, False, None),
                    (f"α-spending (O'Brien–Fleming-type, before), {obf} looks", obf, obf, True, "obrien-fleming"),
                    ("time-uniform, 60", None, 60, True, None)):
                wave, code, _ = rule(dd[..., :horizon], ff[..., :horizon] if both else None, lk, fam)
                used = np.where(wave > 0, wave, horizon).mean()
                print(f"| +{planned:g} | {true:+g} | {fixed} | {name} | {np.mean(code == 1):.1%} | "
                      f"{used:.1f} | {used / fixed:.0%} |", flush=True)

    print("\n## Errors that depend on the outcome\n")
    n = count(2000)
    rng = np.random.default_rng(77)
    x = simulate(rng, n, 50, 40, mean=0.46, icc=0.405, shift=0.0, arm_sd=0.03, errors="outcome",
                 error_rate=0.15)
    d, f = x.excluded(), x.as_failures()
    _, alone, _ = rule(d, None, None)
    _, both, _ = rule(d, f, None)
    _, alone_s, _ = rule(d, None, 40)
    _, both_s, _ = rule(d, f, 40)
    print(f"Δ 0, 50 tasks × 40 waves (airline figures); 15 % of the treatment's failing episodes error; "
          f"{n:,} experiments. Share that stops on *effect*:\n")
    print("| boundary | complete pairs alone | the runtime's rule (both readings agree) |")
    print("|---|---:|---:|")
    print(f"| time-uniform | {rate(int(np.sum(alone == 1)), n)} | {rate(int(np.sum(both == 1)), n)} |")
    print(f"| α-spending (40) | {rate(int(np.sum(alone_s == 1)), n)} | {rate(int(np.sum(both_s == 1)), n)} |")

    print("\n## The Δ at a stop\n")
    print("Mean Δ at the deciding wave of runs that stop on *effect*, against the truth (airline figures, "
          "time-uniform, --max-trials 60): why a stopped run's Δ is caveated.\n")
    print("| true Δ | runs stopped on effect | mean Δ at the stop | above the truth |")
    print("|---:|---:|---:|---:|")
    for s in (0.03, 0.05, 0.07):
        d, f = data[s]
        wave, code, seq = rule(d, f, None)
        stopped = code == 1
        at = np.take_along_axis(seq.estimate, np.maximum(wave - 1, 0)[:, None], axis=-1)[:, 0]
        mean = float(np.mean(at[stopped])) if stopped.any() else float("nan")
        print(f"| +{s:g} | {int(stopped.sum())}/{len(stopped)} | {mean:+.4f} | {100 * (mean / s - 1):+.0f} % |")
    extremes()
    print(f"\n(seeded; scale {SCALE:g}; {time.time() - started:.0f} s)")


def extremes() -> None:
    """The fixed-size interval (``runtime.stats.intervals.paired_interval``, the report's) at 20
    tasks × 5 trials with success near 0 or 1, errors at random or removing whole hard tasks."""
    from runtime.stats.intervals import paired_interval

    n = count(2000)
    print("\n## The fixed-size interval at the extremes (20 tasks × 5 trials)\n")
    print(f"The report's paired Δ interval, {n:,} experiments a row. ICC 0.4; 5 % of episodes errored "
          "at random, or in addition the two tasks with the lowest success probability lose *every* "
          "pair (a task that loses every pair is left out of the complete-pairs Δ: it contributes no "
          "unit; the report's errors-as-0 Δ counts its episodes as failures). *Upper bound too low* is "
          "the share whose upper bound is below the truth — the rate at which a verdict of *no effect "
          "that large* can be wrong (one-sided, 2.5 % allowed).\n")
    print("| family | scale (task × arm sd) | success | shift | true Δ | errors | coverage | upper bound too low | lower bound too high |")
    print("|---|---|---:|---:|---:|---|---:|---:|---:|")
    rows = [("beta", scale, sd, mean, effect, whole)
            for scale, sd, shift in (("probability", 0.1, 0.05), ("logit", 0.3, 1.0))
            for mean in (0.05, 0.08, 0.92, 0.95) for effect in (0.0, shift) for whole in (False, True)]
    rows += [(family, "logit", 0.3, mean, 1.0, False) for family in ("logit-normal", "point-mass")
             for mean in (0.05, 0.08, 0.92, 0.95)]
    for family, scale, sd, mean, effect, whole in rows:
        rng = np.random.default_rng([int(mean * 100), int(effect * 100), int(whole)])
        x = simulate(rng, n, 20, 5, mean=mean, icc=0.4, shift=effect, arm_sd=sd, scale=scale,
                     errors="random", error_rate=0.05, family=family)
        t = np.where(x.treated_error, np.nan, x.treated)
        c = np.where(x.control_error, np.nan, x.control)
        if whole:  # by the tasks' true difficulty, not by their outcomes
            hard = np.argsort(x.difficulty, axis=-1)[:, :2]
            for k in range(2):
                t[np.arange(n), hard[:, k], :] = np.nan
        truth = true_delta(mean=mean, icc=0.4, shift=effect, arm_sd=sd, scale=scale, family=family)
        with np.errstate(all="ignore"):
            iv = paired_interval(t, c)
        covered = int(np.sum((iv.low <= truth) & (truth <= iv.high)))
        print(f"| {family} | {scale} ({sd:g}) | {mean:g} | {effect:g} | {truth:+.4f} | "
              f"{'two hard tasks lost' if whole else 'at random'} | {rate(covered, n)} | "
              f"{rate(int(np.sum(iv.high < truth)), n)} | {rate(int(np.sum(iv.low > truth)), n)} |",
              flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse
    import contextlib
    import io
    from pathlib import Path

    global SCALE
    p = argparse.ArgumentParser(prog="python -m bench.sequential_calibration")
    p.add_argument("--write", type=Path, metavar="FILE", help="replace the tables in FILE (text above them kept)")
    p.add_argument("--scale", type=float, default=1.0, help="multiply every experiment count (default 1)")
    args = p.parse_args(argv)
    SCALE = args.scale
    if args.write is None:
        return tables()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        tables()
    kept = args.write.read_text(encoding="utf-8").split("## Type-I error")[0] if args.write.exists() else ""
    args.write.write_text(kept + out.getvalue(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
