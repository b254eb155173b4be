"""``python -m bench.sequential_calibration``: the calibration of ``--until-decided``'s
confidence sequence (``runtime.stats.sequential``) by simulation; its output is
bench/SEQUENTIAL.md.

1. Type-I error under a look after every wave: ≥ 10,000 simulated experiments with no effect
   (``runtime.stats.sequential_plan``: binary rewards, success 0.05–0.95, intra-task correlation
   0.2–0.6, task × arm sd 0–0.15, 2–15 % of episodes errored, each experiment its own draw), a
   look after every one of 40 waves; the share that ever claims an effect. Beside it, the
   fixed-size t interval read at every wave (what a grown folder read again does).
2. Power and expected episodes at the paper's effects (+0.03, +0.05, +0.07) on τ²-bench airline's
   figures (50 tasks, success 0.46, intra-task correlation 0.405, task × arm sd 0.03, 5 % of
   episodes errored), each ``--max-trials``, against the fixed design of the same power (the
   fewest trials whose simulated power is at least the sequence's).
3. The tuning: the sequence tuned for 1, 2 (the default) or 4 margins — type-I error and mean
   trials at +0.05 and +0.07 (``--max-trials`` 60).

Seeded; about a minute and a half on one core. ``--write bench/SEQUENTIAL.md`` replaces the
tables there (the text above them is kept).
"""

from __future__ import annotations

import sys
import time

import numpy as np
from scipy import stats

from runtime.stats.sequential import decisions, first_decision, sequence, task_means
from runtime.stats.sequential_plan import issue_grid, paired_differences

MARGIN = 0.03
WAVES = 40
CHUNK = 1000


def fixed_rejections(d: np.ndarray) -> np.ndarray:
    """Per experiment and wave: whether the fixed-size clustered t interval excludes 0 (−1, 0, 1)."""
    means, _ = task_means(d)
    n = np.sum(~np.isnan(means), axis=-2)
    m = np.nanmean(means, axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(np.nanvar(means, axis=-2, ddof=1) / n)
        half = stats.t.ppf(0.975, np.maximum(n - 1, 1)) * se
    return np.where(m - half > 0, 1, np.where(m + half < 0, -1, 0))


def type_one(tasks: int, experiments: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    claims = fixed_any = none = 0
    waves = []
    for start in range(0, experiments, CHUNK):
        size = min(CHUNK, experiments - start)
        d = paired_differences(rng, size, tasks, WAVES, **issue_grid(rng, size))
        seq = sequence(d, margin=MARGIN)
        wave, code = first_decision(decisions(seq.low, seq.high, MARGIN))
        claims += int(np.sum(code == 1))
        none += int(np.sum(code == -1))
        waves.append(np.where(wave > 0, wave, WAVES))
        fixed_any += int(np.sum((fixed_rejections(d) != 0).any(axis=-1)))
    rate = claims / experiments
    upper = stats.beta.ppf(0.975, claims + 1, experiments - claims) if claims < experiments else 1.0
    return {"tasks": tasks, "experiments": experiments, "type_one": rate, "upper": float(upper),
            "no_effect": none / experiments, "mean_waves": float(np.mean(np.concatenate(waves))),
            "fixed_read_every_wave": fixed_any / experiments}


def power_rows(effect: float, experiments: int, seed: int, limits=(20, 40, 60)) -> list[dict]:
    rng = np.random.default_rng(seed)
    horizon = max(limits)
    d = paired_differences(rng, experiments, 50, horizon, mean=0.46, icc=0.405, task_arm_sd=0.03,
                           error_rate=0.05, effect=effect)
    seq = sequence(d, margin=MARGIN)
    codes = decisions(seq.low, seq.high, MARGIN)
    fixed_power = np.mean(fixed_rejections(d) == 1, axis=0)  # by trials 1..horizon
    rows = []
    for limit in limits:
        wave, code = first_decision(codes[:, :limit])
        power = float(np.mean(code == 1))
        used = np.where(wave > 0, wave, limit)
        enough = np.nonzero(fixed_power >= power)[0]
        fixed = int(enough[0]) + 1 if len(enough) else None
        rows.append({"effect": effect, "max_trials": limit, "power": power,
                     "mean_trials": float(used.mean()), "p90_trials": float(np.quantile(used, 0.9)),
                     "no_effect": float(np.mean(code == -1)), "fixed_trials": fixed,
                     "ratio": float(used.mean()) / fixed if fixed else None})
    return rows


HEAD = "## Type-I error, a look after every wave"


def main(argv: list[str] | None = None) -> int:
    import argparse
    import contextlib
    import io
    from pathlib import Path

    p = argparse.ArgumentParser(prog="python -m bench.sequential_calibration")
    p.add_argument("--write", type=Path, metavar="FILE", help="replace the tables in FILE (text above them kept)")
    args = p.parse_args(argv)
    if args.write is None:
        return tables()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        tables()
    kept = args.write.read_text(encoding="utf-8").split(HEAD)[0] if args.write.exists() else ""
    args.write.write_text(kept + out.getvalue(), encoding="utf-8")
    return 0


def tables() -> int:
    started = time.time()
    print(HEAD + "\n")
    print(f"Margin ±{MARGIN:g}, α 0.05, {WAVES} waves, no effect; designs drawn per experiment "
          "(success 0.05–0.95, ICC 0.2–0.6, task × arm sd 0–0.15, 2–15 % of episodes errored).\n")
    print("| tasks | experiments | effect claimed (type-I) | 95 % upper bound | no effect of interest "
          "| mean waves | fixed-size interval read every wave |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for tasks, experiments, seed in ((50, 10_000, 1), (20, 3_000, 2), (114, 3_000, 3)):
        r = type_one(tasks, experiments, seed)
        print(f"| {r['tasks']} | {r['experiments']:,} | {r['type_one']:.2%} | {r['upper']:.2%} | "
              f"{r['no_effect']:.1%} | {r['mean_waves']:.1f} | {r['fixed_read_every_wave']:.1%} |",
              flush=True)
    print("\n## Power and expected episodes at the paper's effects\n")
    print("τ²-bench airline's figures: 50 tasks, success 0.46, ICC 0.405, task × arm sd 0.03, 5 % "
          "of episodes errored; 4,000 experiments per effect. Episodes per comparison = 2 × 50 × "
          "trials. Fixed design: the fewest trials whose simulated power is at least the "
          "sequence's.\n")
    print("| Δ | --max-trials | power | mean trials | 90th percentile | no effect of interest | "
          "fixed design, same power | mean episodes / fixed |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for effect, seed in ((0.03, 11), (0.05, 12), (0.07, 13)):
        for r in power_rows(effect, 4_000, seed):
            fixed = f"{r['fixed_trials']} trials ({100 * r['fixed_trials']:,} episodes)" if r["fixed_trials"] else "–"
            ratio = f"{r['ratio']:.0%}" if r["ratio"] is not None else "–"
            print(f"| +{effect:g} | {r['max_trials']} | {r['power']:.1%} | {r['mean_trials']:.1f} | "
                  f"{r['p90_trials']:.0f} | {r['no_effect']:.1%} | {fixed} | {ratio} |", flush=True)
    print("\n## Tuning: the effect the mixture is tuned for\n")
    print("| tuned for | type-I (3,000, 50 tasks) | mean trials at +0.05 | power | mean trials at +0.07 | power |")
    print("|---:|---:|---:|---:|---:|---:|")
    from runtime.stats import sequential

    default = sequential.TUNED_AT
    try:
        for tuned in (1.0, 2.0, 4.0):
            sequential.TUNED_AT = tuned
            r = type_one(50, 3_000, 21)
            at = {e: power_rows(e, 2_000, 22, limits=(60,))[0] for e in (0.05, 0.07)}
            print(f"| {tuned:g} × margin | {r['type_one']:.2%} | {at[0.05]['mean_trials']:.1f} | "
                  f"{at[0.05]['power']:.1%} | {at[0.07]['mean_trials']:.1f} | {at[0.07]['power']:.1%} |",
                  flush=True)
    finally:
        sequential.TUNED_AT = default
    print(f"\n(seeded; {time.time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
