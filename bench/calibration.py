"""``python -m bench.calibration``: the calibration grid of the statistics layer, as a table.

For each cell (tasks × trials × intra-task correlation × effect spread) of the known-truth
stochastic benchmark (``testkit.stochastic``): the share of 95 % intervals that cover the true
Δ, and the share of experiments that reject Δ = 0 at the MDE the statistics state — clustered by
task (what the reports use) and, in the spread cells, without the clustering. The experiments
per cell are those of tests/test_calibration.py's slow grid.
"""

from __future__ import annotations

import sys

from tests.test_calibration import FULL, measure


def main() -> int:
    print("| tasks | trials | icc | spread | experiments | coverage | power at MDE | "
          "coverage, unclustered | power, unclustered |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for tasks, trials, icc, spread in FULL:
        experiments = max(4000, min(20_000, 2_000_000 // (tasks * trials)))
        coverage, power = measure(tasks, trials, icc, spread, experiments, seed=7 + tasks + trials)
        naive = ("–", "–")
        if spread and trials > 1:
            c, p = measure(tasks, trials, icc, spread, experiments, seed=11 + tasks + trials, clustered=False)
            naive = (f"{c:.1%}", f"{p:.1%}")
        print(f"| {tasks} | {trials} | {icc:g} | {spread:g} | {experiments} | {coverage:.1%} | "
              f"{power:.1%} | {naive[0]} | {naive[1]} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
