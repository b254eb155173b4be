"""A stochastic benchmark whose truth is known: per-task success probabilities, the true Δ and the
variance components, for calibrating the statistics (``runtime.stats``) and for running the
batch layer end to end with a model that varies like a real one.

The class of experiment it stands for: tasks differ in difficulty (a task's success probability
``p`` drawn from a Beta whose intra-task correlation is ``icc``); the treatment shifts every
task by ``effect`` and, with ``spread`` > 0, helps half the tasks by ``spread`` more and the
other half by ``spread`` less (a coin per task), so the effect differs between tasks as a real
critique's does; each episode succeeds (1) or fails (0) on its own. Probabilities are clipped to
[0, 1], so the true Δ and the components are computed from the generator by quadrature, never
assumed.

``StochasticReplay`` is the same generator behind litellm: an executor that replays τ²'s
reference solution when its episode succeeds and leaves out the last write when it fails, the
outcome drawn from the episode's trial seed, task and mode — so a run is reproducible. It proves
the plumbing and the statistics' calibration, never a model.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from runtime.stats.design import Components, mde

TREATED = ("refine",)
"""The modes that get the treatment's probabilities; every other mode is the control."""


@dataclass(frozen=True)
class StochasticBenchmark:
    mean: float = 0.5
    icc: float = 0.45
    effect: float = 0.0
    spread: float = 0.0

    def __post_init__(self) -> None:
        if not (0 < self.mean < 1 and 0 < self.icc < 1):
            raise ValueError(f"need 0 < mean < 1 and 0 < icc < 1, got {self.mean}, {self.icc}")

    @property
    def _ab(self) -> tuple[float, float]:
        concentration = 1 / self.icc - 1  # a Bernoulli's ICC over Beta(a, b) tasks: 1 / (a + b + 1)
        return self.mean * concentration, (1 - self.mean) * concentration

    def arms(self, p: np.ndarray, sign: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(treatment, control) success probabilities of tasks with base ``p`` and coin ``sign``."""
        shift = self.effect / 2 + self.spread * sign
        return np.clip(p + shift, 0, 1), np.clip(p - shift, 0, 1)

    @cached_property
    def truth(self) -> tuple[float, Components]:
        """The true Δ (treatment − control, over the task population) and the components."""
        p = _quantiles(*self._ab)
        moments = []
        for sign in (-1.0, 1.0):
            t, c = self.arms(p, np.full_like(p, sign))
            moments.append((t - c, (t + c) / 2, (t * (1 - t) + c * (1 - c)) / 2))
        diff = np.concatenate([m[0] for m in moments])
        avg = np.concatenate([m[1] for m in moments])
        within = float(np.mean(np.concatenate([m[2] for m in moments])))
        task_mode = float(np.var(diff)) / 2
        between = max(float(np.var(avg)) - task_mode / 2, 0.0)
        return float(np.mean(diff)), Components(between, task_mode, within)

    def at_mde(self, tasks: int, trials: int, *, alpha: float = 0.05, power: float = 0.8) -> "StochasticBenchmark":
        """The same benchmark with the effect set so that its true Δ equals the MDE the
        statistics state for its own components (which move a little with the effect)."""
        bench = self
        for _ in range(6):
            true, components = bench.truth
            target = mde(components, tasks, trials, alpha=alpha, power=power)
            bench = StochasticBenchmark(self.mean, self.icc, bench.effect + (target - true), self.spread)
        return bench

    def simulate(self, tasks: int, trials: int, experiments: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """``experiments`` independent experiments, each on ``tasks`` fresh tasks: 0/1 scores
        (treatment, control) shaped ``(experiments, tasks, trials)``."""
        rng = np.random.default_rng(seed)
        a, b = self._ab
        p = rng.beta(a, b, size=(experiments, tasks, 1))
        sign = rng.choice([-1.0, 1.0], size=(experiments, tasks, 1))
        pt, pc = self.arms(p, sign)
        shape = (experiments, tasks, trials)
        return (rng.random(shape) < pt).astype(float), (rng.random(shape) < pc).astype(float)

    def task_probabilities(self, task_id: str, salt: str = "") -> tuple[float, float]:
        """(treatment, control) success probabilities of a named task: its base and coin drawn
        from the task id, so every run on the same tasks sees the same tasks."""
        from scipy import stats

        rng = random.Random(f"{salt}:{task_id}")
        p = float(stats.beta.ppf(rng.random(), *self._ab))
        t, c = self.arms(np.array([p]), np.array([rng.choice([-1.0, 1.0])]))
        return float(t[0]), float(c[0])

    def succeeds(self, task_id: str, mode: str, seed: int, salt: str = "") -> bool:
        """Whether the episode (task, mode) with trial seed ``seed`` succeeds."""
        t, c = self.task_probabilities(task_id, salt)
        draw = random.Random(zlib.crc32(f"{seed}:{task_id}:{mode}".encode())).random()
        return draw < (t if mode in TREATED else c)


@lru_cache(maxsize=32)
def _quantiles(a: float, b: float, nodes: int = 200_000) -> np.ndarray:
    """The Beta's quantiles at the midpoints of ``nodes`` equal slices: the midpoint rule in
    probability space, which the clipping kinks do not upset as they would a polynomial rule."""
    from scipy import stats

    return stats.beta.ppf((np.arange(nodes) + 0.5) / nodes, a, b)


@dataclass
class StochasticReplay:
    """An executor + user script: τ²'s reference replayed in full when the episode succeeds
    (``StochasticBenchmark.succeeds`` on the request's seed), without its last write when not."""

    benchmark: StochasticBenchmark
    salt: str = ""
    _good: Any = field(default=None)
    _bad: Any = field(default=None)

    def __post_init__(self) -> None:
        from testkit.gold import GoldReplay

        self._good, self._bad = GoldReplay(), GoldReplay(drop_last_write=True)

    def __call__(self, request: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
        seed = request.get("seed")
        seed = int(seed) if seed is not None else int(context.get("trial", 0))
        ok = self.benchmark.succeeds(str(context["task_id"]), str(context.get("mode")), seed, self.salt)
        return (self._good if ok else self._bad)(request, context)


def register(benchmark: StochasticBenchmark, name: str = "stochastic") -> str:
    """``scripted/<name>``: every role scripted, the executor and user stochastic."""
    from testkit.roles import ScriptedRoles

    return ScriptedRoles(act=StochasticReplay(benchmark)).model_name(name)
