"""Simulated runs read after every wave: what ``--until-decided`` is expected to cost (the dry
run) and how ``runtime.stats.sequential`` is calibrated (bench/sequential_calibration.py).

The class of experiment: a fixed set of tasks (the cluster) run in two arms, one trial of every
task and arm per wave; binary rewards; tasks differ in difficulty (a task's success probability
drawn from a Beta with intra-task correlation ``icc`` around ``mean``); each arm adds its own
task × arm term (normal, sd ``task_arm_sd``, on the probability scale) so the effect differs
between tasks; the treatment shifts every task by ``effect`` (half up in one arm, half down in
the other, so clipping at 0 and 1 treats both arms alike and Δ = 0 is exactly the null);
each episode errors on its own with probability ``error_rate``, and a pair with an errored
episode is left out (its task keeps its other pairs). Every experiment may draw its own
``mean``, ``icc``, sd and error rate (arrays), so a grid of designs is one call.

Vectorised with numpy: ``(experiments, tasks, waves)`` paired differences, NaN where incomplete.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def paired_differences(rng: np.random.Generator, experiments: int, tasks: int, waves: int, *,
                       mean, icc, task_arm_sd, error_rate, effect: float = 0.0) -> np.ndarray:
    """Treatment − control per (experiment, task, wave), NaN where either episode errored."""
    shape = (experiments, 1, 1)
    mean, icc = np.broadcast_to(mean, shape[:1]).reshape(shape), np.broadcast_to(icc, shape[:1]).reshape(shape)
    sd = np.broadcast_to(task_arm_sd, shape[:1]).reshape(shape)
    errors = np.broadcast_to(error_rate, shape[:1]).reshape(shape)
    concentration = 1 / icc - 1  # a Bernoulli's ICC over Beta(a, b) tasks is 1 / (a + b + 1)
    a = np.broadcast_to(mean * concentration, (experiments, tasks, 1))
    b = np.broadcast_to((1 - mean) * concentration, (experiments, tasks, 1))
    base = rng.beta(a, b)
    treated = np.clip(base + effect / 2 + sd * rng.standard_normal(base.shape), 0, 1)
    control = np.clip(base - effect / 2 + sd * rng.standard_normal(base.shape), 0, 1)
    size = (experiments, tasks, waves)
    t = (rng.random(size) < treated).astype(np.float32)
    c = (rng.random(size) < control).astype(np.float32)
    lost = (rng.random(size) < errors) | (rng.random(size) < errors)
    diff = t - c
    diff[lost] = np.nan
    return diff


@dataclass(frozen=True)
class Expected:
    """What ``--until-decided`` is expected to take at one true Δ, by simulation."""

    delta: float
    mean_waves: float
    p90_waves: float
    effect: float
    """Share of simulated runs that stop with an effect."""
    no_effect: float
    """…that stop with no effect of interest (the rest reach the last wave undecided)."""


def expected_waves(*, tasks: int, max_waves: int, margin: float, delta: float, mean: float,
                   icc: float, task_arm_sd: float = 0.0, error_rate: float = 0.0,
                   experiments: int = 400, seed: int = 0, looks: int | None = None,
                   alpha: float = 0.05) -> Expected:
    """Waves an ``--until-decided`` run takes at true Δ ``delta`` (a fraction of a second);
    ``looks``: an α-spending boundary over that many waves (None: time-uniform)."""
    from runtime.stats.sequential import decisions, first_decision, sequence

    rng = np.random.default_rng(seed)
    d = paired_differences(rng, experiments, tasks, max_waves, mean=mean, icc=icc,
                           task_arm_sd=task_arm_sd, error_rate=error_rate, effect=delta)
    seq = sequence(d, margin=margin, looks=looks, alpha=alpha)
    wave, code = first_decision(decisions(seq.low, seq.high, margin))
    waves = np.where(wave > 0, wave, max_waves)
    return Expected(delta, float(waves.mean()), float(np.quantile(waves, 0.9)),
                    float(np.mean(code == 1)), float(np.mean(code == -1)))


def issue_grid(rng: np.random.Generator, experiments: int) -> dict[str, np.ndarray]:
    """Designs drawn over the ranges the sequence must hold on: success 0.05–0.95, intra-task
    correlation 0.2–0.6, task × arm sd 0–0.15, 2–15 % of episodes errored."""
    return {"mean": rng.uniform(0.05, 0.95, experiments), "icc": rng.uniform(0.2, 0.6, experiments),
            "task_arm_sd": rng.uniform(0.0, 0.15, experiments),
            "error_rate": rng.uniform(0.02, 0.15, experiments)}
