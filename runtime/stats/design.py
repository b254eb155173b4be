"""How small a Δ a planned comparison can see, and what a target Δ takes.

The design: every task is run in both arms (Refine and Plan-first, or two strategies) for
``trials`` trials each, and Δ is the mean over tasks of the per-task difference of trial means.
A score is modelled as ``y = μ_arm + u_task + v_task×arm + e`` with variances ``between_task``,
``task_mode`` and ``within_task`` (``Components``). Pairing removes ``u_task`` from every
difference, so one task's difference has variance ``2·task_mode + 2·within_task / trials``; the
tasks are independent, so Δ's variance is that over ``tasks`` — the clustered, paired standard
error of Miller (2024, sections 2.3 and 4: cluster by the unit that repeats, difference within
it). Trials of one task are *not* independent: more trials shrink only the within-task part, so
``task_mode`` sets a floor no number of trials goes below.

Errored episodes: a pair (trial k in both arms) is kept when neither episode errored, with
chance ``(1 − e)²`` at a per-episode error rate ``e``; a task is lost only when none of its
pairs is kept. A plan at error rate ``e`` counts the tasks expected to keep a pair and uses
``E[1 / pairs kept]`` for the within-task part (``error_effect``).

Δ is then tested as a one-sample t test of the per-task differences (n − 1 degrees of freedom);
its power at a given Δ is the noncentral t's, from ``statsmodels.stats.power.TTestPower``. The
minimum detectable Δ (MDE) is the Δ that test finds with the stated power at level α, two-sided.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

ALPHA = 0.05
POWER = 0.80
MAX_TRIALS = 10_000
"""The most trials a task is searched for before a target is called unreachable."""


@dataclass(frozen=True)
class Components:
    """Variance components of one episode's score, in the score's own units squared.

    ``between_task``: how much tasks differ in difficulty (cancels in a paired Δ);
    ``task_mode``: how much an arm's effect differs between tasks (the task × arm interaction,
    each arm's own term; one task's true effect then varies with variance ``2·task_mode``);
    ``within_task``: trial-to-trial variation of one task in one arm."""

    between_task: float
    task_mode: float
    within_task: float

    def __post_init__(self) -> None:
        for name in ("between_task", "task_mode", "within_task"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite variance ≥ 0, got {value!r}")

    @classmethod
    def from_sd_icc(cls, sd: float, icc: float, task_mode_sd: float = 0.0) -> "Components":
        """From the per-episode standard deviation, the intra-task correlation (the correlation
        of two trials of one task in one arm, τ-bench's ICC(1)) and the task × arm term's sd."""
        if not (sd > 0 and math.isfinite(sd)):
            raise ValueError(f"sd must be a positive number, got {sd!r}")
        if not 0 <= icc < 1:
            raise ValueError(f"icc must be in [0, 1), got {icc!r}")
        total, task_mode = sd * sd, task_mode_sd * task_mode_sd
        if task_mode > icc * total + 1e-15:
            raise ValueError(f"task-mode sd {task_mode_sd:g} is larger than the task part of the "
                             f"variance (icc × sd² = {icc * total:g}); give a smaller one or a larger icc")
        return cls(max(icc * total - task_mode, 0.0), task_mode, (1 - icc) * total)

    @property
    def total(self) -> float:
        return self.between_task + self.task_mode + self.within_task

    @property
    def icc(self) -> float:
        return (self.between_task + self.task_mode) / self.total if self.total else 0.0

    def task_difference_variance(self, trials: float, clustered: bool = True, *,
                                 inverse_trials: float | None = None) -> float:
        """The variance of one task's difference of trial means, both arms run ``trials`` times.
        ``clustered=False`` is the variance of one episode pair, which is what a design that
        takes every episode for an independent unit uses (wrongly, when ``task_mode`` > 0)."""
        if clustered:
            inverse = 1 / trials if inverse_trials is None else inverse_trials
            return 2 * self.task_mode + 2 * self.within_task * inverse
        return 2 * self.task_mode + 2 * self.within_task


@dataclass(frozen=True)
class Plan:
    tasks: int
    trials: int
    sd_difference: float
    """The sd of one task's difference (of one episode pair when not clustered)."""
    units: float
    """The independent units the test counts: tasks (or episode pairs when not clustered);
    with errors, the tasks expected to keep at least one pair."""
    alpha: float
    power: float
    error_rate: float = 0.0

    @property
    def se(self) -> float:
        return self.sd_difference / math.sqrt(self.units)

    @property
    def mde(self) -> float:
        return standardized_mde(self.units, self.alpha, self.power) * self.sd_difference

    def power_at(self, delta: float) -> float:
        return power_of(abs(delta) / self.sd_difference if self.sd_difference else math.inf,
                        self.units, self.alpha)


def plan(components: Components, tasks: int, trials: int, *, alpha: float = ALPHA,
         power: float = POWER, clustered: bool = True, error_rate: float = 0.0) -> Plan:
    _check(tasks=tasks, trials=trials, alpha=alpha, power=power, error_rate=error_rate)
    if not clustered:
        sd = math.sqrt(components.task_difference_variance(trials, False))
        return Plan(tasks, trials, sd, tasks * trials, alpha, power, error_rate)
    kept, inverse = error_effect(trials, error_rate)
    sd = math.sqrt(components.task_difference_variance(trials, inverse_trials=inverse))
    return Plan(tasks, trials, sd, tasks * kept, alpha, power, error_rate)


def mde(components: Components, tasks: int, trials: int, *, alpha: float = ALPHA,
        power: float = POWER, clustered: bool = True, error_rate: float = 0.0) -> float:
    """The minimum detectable Δ of ``tasks`` × ``trials`` in both arms."""
    return plan(components, tasks, trials, alpha=alpha, power=power, clustered=clustered,
                error_rate=error_rate).mde


@lru_cache(maxsize=4096)
def error_effect(trials: int, error_rate: float) -> tuple[float, float]:
    """(the share of tasks that keep at least one pair, E[1 / pairs kept | at least one]) when
    each episode errors with chance ``error_rate``, independently."""
    if error_rate <= 0:
        return 1.0, 1.0 / trials
    kept = (1 - error_rate) ** 2
    if kept <= 0:
        return 0.0, 1.0
    # the binomial's chances of k = 1..trials pairs kept, in logs (no scipy import on a dry run)
    chances = [math.exp(math.lgamma(trials + 1) - math.lgamma(k + 1) - math.lgamma(trials - k + 1)
                        + k * math.log(kept) + (trials - k) * math.log1p(-kept)) if kept < 1 else float(k == trials)
               for k in range(1, trials + 1)]
    share = math.fsum(chances)
    if share <= 0:
        return 0.0, 1.0
    return share, math.fsum(c / k for k, c in enumerate(chances, 1)) / share


def run_components(variance: float, within: float, inverse_trials: float) -> Components:
    """The components a run's own Δ implies, for its detectable size and for ``runtime.power
    --from``: ``variance`` is one task's difference variance the interval used, ``within`` the
    pooled within-task variance (NaN with one trial a task: then all of ``variance`` is taken
    for within-task, the reading under which more trials help most). The task × arm term is
    what ``variance`` leaves over the within-task part, never below 0."""
    if not math.isfinite(within):
        within = variance / (2 * inverse_trials)
    task_mode = max((variance - 2 * within * inverse_trials) / 2, 0.0)
    return Components(0.0, task_mode, within)


def run_detectable(components: Components, tasks: int, inverse_trials: float, *,
                   alpha: float = ALPHA, power: float = POWER) -> float:
    """The detectable Δ of a run with ``tasks`` paired tasks whose mean 1 / pairs per task is
    ``inverse_trials``: the one figure the report and ``runtime.power --from`` give."""
    sd = math.sqrt(components.task_difference_variance(1, inverse_trials=inverse_trials))
    return standardized_mde(tasks, alpha, power) * sd


def mde_of_sd(sd_difference: float, tasks: int, *, alpha: float = ALPHA, power: float = POWER) -> float:
    """The detectable Δ at an observed per-task difference sd: a run's own variance."""
    _check(tasks=tasks, trials=1, alpha=alpha, power=power)
    return standardized_mde(tasks, alpha, power) * sd_difference


def trials_for(components: Components, tasks: int, target: float, *, alpha: float = ALPHA,
               power: float = POWER, error_rate: float = 0.0) -> int | None:
    """The fewest trials per task and arm whose MDE is at most ``target``; ``None`` when no
    number of trials reaches it (the task × arm term's floor, or too few tasks)."""
    if not target > 0:
        raise ValueError(f"target Δ must be > 0, got {target!r}")
    return _fewest(1, MAX_TRIALS, lambda n: mde(components, tasks, n, alpha=alpha, power=power,
                                                error_rate=error_rate) <= target)


def tasks_for(components: Components, trials: int, target: float, *, alpha: float = ALPHA,
              power: float = POWER, limit: int = 1_000_000, error_rate: float = 0.0) -> int | None:
    """The fewest tasks whose MDE at ``trials`` is at most ``target`` (``None`` past ``limit``)."""
    if not target > 0:
        raise ValueError(f"target Δ must be > 0, got {target!r}")
    return _fewest(2, limit, lambda n: mde(components, n, trials, alpha=alpha, power=power,
                                           error_rate=error_rate) <= target)


def _fewest(low: int, high: int, enough: Callable[[int], bool]) -> int | None:
    """The smallest n in [low, high] for which ``enough(n)`` holds, by bisection (the MDE falls
    as tasks or trials grow); ``None`` when even ``high`` is not enough."""
    if not enough(high):
        return None
    while low < high:
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle + 1
    return low


@lru_cache(maxsize=4096)
def standardized_mde(units: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The effect size (Δ over the per-unit sd) a two-sided one-sample t test on ``units``
    units finds with ``power`` at level ``alpha`` (statsmodels' ``TTestPower``)."""
    if units < 2:
        return math.inf
    from runtime.stats.solved import remembered

    return remembered(f"mde {units!r} {alpha!r} {power!r}", lambda: _solved_mde(units, alpha, power))


def _solved_mde(units: float, alpha: float, power: float) -> float:
    import numpy as np
    from statsmodels.stats.power import TTestPower

    found = TTestPower().solve_power(effect_size=None, nobs=units, alpha=alpha, power=power,
                                     alternative="two-sided")
    return float(np.ravel(found)[0])


def power_of(effect_size: float, units: float, alpha: float = ALPHA) -> float:
    if units < 2:
        return 0.0
    if math.isinf(effect_size):
        return 1.0
    from statsmodels.stats.power import TTestPower

    return float(TTestPower().power(effect_size=effect_size, nobs=units, alpha=alpha,
                                    alternative="two-sided"))


def _check(*, tasks: int, trials: int, alpha: float, power: float, error_rate: float = 0.0) -> None:
    if not (isinstance(tasks, int) and tasks >= 2):
        raise ValueError(f"tasks must be an integer ≥ 2, got {tasks!r}")
    if not (isinstance(trials, int) and trials >= 1):
        raise ValueError(f"trials must be an integer ≥ 1, got {trials!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not 0 < power < 1:
        raise ValueError(f"power must be in (0, 1), got {power!r}")
    if not (math.isfinite(error_rate) and 0 <= error_rate < 1):
        raise ValueError(f"error rate must be in [0, 1), got {error_rate!r}")
