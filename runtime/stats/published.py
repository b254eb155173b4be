"""Published figures to plan a run with before it has records of its own, chosen by name.

Only figures a public source states are here, each with the source and its date. A per-episode
sd of a 0/1 reward is ``sqrt(p(1 − p))`` at the published pass^1 ``p``; the intra-task
correlation is the source's ICC(1) of repeated trials of one agent on one task. Where a source
gives several configurations the range is kept (``icc`` low → high) and a plan is worked at
both ends: the low end is the conservative one (a larger detectable Δ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

TASK_MODE_SD = 0.1
"""The task × arm sd (each arm's own term) a plan assumes when no figure of the comparison
gives one. No public source states this term for two strategies of one model on τ-bench, and 0
— the effect the same on every task — is the most optimistic value there is: a plan made at 0 has
60–76 % power, not 80 %, once the term is 0.1 (``bench/CALIBRATION.md``). 0.1 (a task's
effect then varies with sd √2 · 0.1 ≈ 0.14 around the mean effect) is the value the outside
simulations of this design used; every plan prints what it becomes at 0 and at twice this."""
TASK_MODE_SENSITIVITY = (0.0, 2 * TASK_MODE_SD)
"""The task × arm sds every plan is also worked at."""
BOUND_SD = 0.5
"""The largest sd a score in [0, 1] can have: the bound ToolSandbox is planned against."""


@dataclass(frozen=True)
class Figures:
    name: str
    description: str
    source: str
    date: str
    tasks: int
    trials: int
    sd: float | None = None
    icc: tuple[float, float] | None = None
    effect: tuple[float, float] | None = None
    """A published effect (low, high) the comparison looks for, in the score's units."""
    unit: str = "reward"
    notes: str = ""

    def sd_icc(self) -> list[tuple[float, float]]:
        if self.sd is None or self.icc is None:
            return []
        return [(self.sd, self.icc[0]), (self.sd, self.icc[1])]


_TAU_57 = ("sierra-research/tau-bench issue #57, comment of 2026-08-23: ICC(1) and pass^1 "
           "computed from the repository's historical_trajectories (gpt-4o, 4 trials; "
           "sonnet-35-new, 8 trials)")
_TAU2_540 = ("sierra-research/tau2-bench issue #540 (2026-09-12): run-to-run noise of the "
             "published baselines and leaderboard submissions, four trials each")

FIGURES: dict[str, Figures] = {f.name: f for f in (
    Figures("tau-airline", "τ-bench airline: 50 tasks, intra-task correlation of published trials",
            _TAU_57, "2026-08-23", tasks=50, trials=4,
            sd=round(math.sqrt(0.46 * 0.54), 3), icc=(0.405, 0.465),
            notes="pass^1 0.42 (gpt-4o) and 0.46 (sonnet-35-new): sd 0.494-0.498; ICC(1) 0.405 "
                  "and 0.465; τ²-bench airline has the same 50 tasks"),
    Figures("tau-retail", "τ-bench retail: 115 tasks (τ²-bench retail: 114)",
            _TAU_57, "2026-08-23", tasks=114, trials=4,
            sd=round(math.sqrt(0.604 * 0.396), 3), icc=(0.456, 0.530),
            notes="pass^1 0.604 (gpt-4o) and 0.692 (sonnet-35-new): sd 0.489-0.462 (the larger "
                  "is kept); ICC(1) 0.530 and 0.456; 114 tasks as τ²-bench retail (issue #540)"),
    Figures("tau2-run-to-run", "τ²-bench airline (50) and retail (114): how far two single runs "
            "of one agent must differ before the gap is outside repetition alone",
            _TAU2_540, "2026-09-12", tasks=50, trials=1,
            notes="airline 10-11 points (June 2025 baselines), 5.5-10.7 (leaderboard); retail 7-8 "
                  "and 7.1-8.7; 32-55% of tasks flip their verdict between identical runs. No sd "
                  "or correlation is stated, so this entry plans nothing: it is the noise floor "
                  "an A/A comparison should reproduce"),
    Figures("apb-table3-tau2", "The APB paper's Table 3, τ²-bench: 200 tasks, single runs, "
            "Refine − Plan-first +0.03 to +0.07 reward across its three tested models",
            "the APB paper's Table 3, as configs/table3.yaml records it (published: tau2)",
            "not stated in this repository", tasks=200, trials=1, effect=(0.03, 0.07),
            notes="the paper gives no variance: plan with --sd/--icc, --published tau-airline "
                  "or --from a run of your own"),
    Figures("apb-table3-toolsandbox", "The APB paper's Table 3, ToolSandbox: 200 scenarios, "
            "Refine − Plan-first +3.4 to +5.5 similarity points",
            "the APB paper's Table 3, as configs/table3.yaml records it (published: toolsandbox)",
            "not stated in this repository", tasks=200, trials=1, effect=(3.4, 5.5),
            unit="similarity points", notes="no variance is published for ToolSandbox similarity"),
)}


def figures(name: str) -> Figures:
    try:
        return FIGURES[name]
    except KeyError:
        raise ValueError(f"unknown published figures {name!r}; accepted: {', '.join(FIGURES)}") from None
