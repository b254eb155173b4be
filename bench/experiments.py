"""Simulated two-arm experiments as a real run behaves, for the calibration of ``--until-decided``
(bench/sequential_calibration.py). Written apart from ``runtime.stats.sequential_plan`` (the dry
run's own simulation), so the rule is not checked only against the model it was planned with.

One experiment: a fixed set of tasks, one trial of every task in both arms per wave, binary
rewards. Task difficulties are Beta draws with intra-task correlation ``icc`` around ``mean``.
Each arm adds a task × arm term, either on the probability scale (normal, clipped to [0, 1]) or
on the logit scale (which makes task effects skewed near 0 and 1). The treatment shifts every
task by ``shift`` on that scale (half up in one arm, half down in the other), and the *true* Δ —
the population's mean difference — is computed by integrating over a large task sample, so
coverage at Δ ≠ 0 is measured against what the experiment actually implies.

Errors (an episode that ends without a score):
  ``random``   every episode with probability ``error_rate``;
  ``hard``     more on hard tasks: probability 2 · error_rate · (1 − the task's success);
  ``outcome``  only the treatment's *failing* episodes, with probability ``error_rate`` — an arm
               whose failures crash (a tool that times out on hard cases): dropping its errored
               pairs makes it look better than it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, logit

SCALES = ("probability", "logit")
ERRORS = ("random", "hard", "outcome")
FAMILIES = ("beta", "logit-normal", "point-mass")
"""How task difficulties are drawn: Beta (the default); logit-normal (the logit of a task's
success normal, with the Beta's mean and variance matched by sd ``LOGIT_SD``); point-mass — a
share ``STUCK`` of the tasks fixed at 0 (success below 0.5) or 1 in *both* arms, untouched by
the treatment, the rest Beta: the effect is carried by a minority of tasks, the most skewed
task effects of the three. The calibration checks a rule on all three, so it is not tuned to
one generator's shape."""
LOGIT_SD = 1.5
STUCK = 0.6


@dataclass(frozen=True)
class Experiments:
    treated: np.ndarray
    """(experiments, tasks, waves) rewards, 0/1."""
    control: np.ndarray
    treated_error: np.ndarray
    """Where the treatment's episode errored (its reward is then unknown)."""
    control_error: np.ndarray
    difficulty: np.ndarray | None = None
    """(experiments, tasks): each task's control success probability (low: hard)."""

    def excluded(self) -> np.ndarray:
        """Paired differences with every pair that has an errored episode left out (NaN)."""
        d = self.treated - self.control
        d[self.treated_error | self.control_error] = np.nan
        return d

    def as_failures(self) -> np.ndarray:
        """Paired differences with every errored episode scored 0."""
        return np.where(self.treated_error, 0.0, self.treated) - np.where(self.control_error, 0.0, self.control)


def _column(value, experiments: int | None):
    """A per-experiment setting as an (experiments, 1, 1) array (a scalar stays a scalar)."""
    value = np.asarray(value, dtype=float)
    return value if value.ndim == 0 or experiments is None else value.reshape(experiments, 1, 1)


def _probabilities(rng, shape, *, mean, icc, shift, arm_sd, scale, family="beta"):
    if family not in FAMILIES:
        raise ValueError(f"family {family!r}: accepted: {', '.join(FAMILIES)}")
    experiments = shape[0] if len(shape) == 3 else None
    mean, icc, arm_sd = (_column(v, experiments) for v in (mean, icc, arm_sd))
    concentration = 1 / icc - 1
    if family == "logit-normal":
        base = expit(logit(mean) + LOGIT_SD * rng.standard_normal(shape))
    else:
        base = rng.beta(np.broadcast_to(mean * concentration, shape), np.broadcast_to((1 - mean) * concentration, shape))
    if scale == "probability":
        t = np.clip(base + shift / 2 + arm_sd * rng.standard_normal(shape), 0, 1)
        c = np.clip(base - shift / 2 + arm_sd * rng.standard_normal(shape), 0, 1)
    else:
        z = logit(np.clip(base, 1e-6, 1 - 1e-6))
        t = expit(z + shift / 2 + arm_sd * rng.standard_normal(shape))
        c = expit(z - shift / 2 + arm_sd * rng.standard_normal(shape))
    if family == "point-mass":
        stuck = rng.random(shape) < STUCK
        at = np.broadcast_to(np.where(np.asarray(mean) < 0.5, 0.0, 1.0), shape)
        t, c = np.where(stuck, at, t), np.where(stuck, at, c)
    return t, c


def true_delta(*, mean: float, icc: float, shift: float, arm_sd: float, scale: str,
               tasks: int = 2_000_000, seed: int = 99, family: str = "beta") -> float:
    """The population Δ the design implies (by a two-million-task integration)."""
    if shift == 0:
        return 0.0
    t, c = _probabilities(np.random.default_rng(seed), (tasks,), mean=mean, icc=icc, shift=shift,
                          arm_sd=arm_sd, scale=scale, family=family)
    return float(np.mean(t - c))


def simulate(rng: np.random.Generator, experiments: int, tasks: int, waves: int, *, mean: float,
             icc: float, shift: float = 0.0, arm_sd: float = 0.1, scale: str = "probability",
             errors: str = "random", error_rate: float = 0.05, family: str = "beta") -> Experiments:
    if scale not in SCALES or errors not in ERRORS:
        raise ValueError(f"scale in {SCALES}, errors in {ERRORS}")
    pt, pc = _probabilities(rng, (experiments, tasks, 1), mean=mean, icc=icc, shift=shift,
                            arm_sd=arm_sd, scale=scale, family=family)
    size = (experiments, tasks, waves)
    error_rate = _column(error_rate, experiments)
    t = (rng.random(size) < pt).astype(np.float32)
    c = (rng.random(size) < pc).astype(np.float32)
    if errors == "random":
        te, ce = rng.random(size) < error_rate, rng.random(size) < error_rate
    elif errors == "hard":
        te = rng.random(size) < np.minimum(2 * error_rate * (1 - pt), 1)
        ce = rng.random(size) < np.minimum(2 * error_rate * (1 - pc), 1)
    else:
        te = (t == 0) & (rng.random(size) < error_rate)
        ce = np.zeros(size, dtype=bool)
    return Experiments(t, c, te, ce, pc[..., 0])


def exact_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Clopper–Pearson's interval of a rate k / n."""
    from scipy.stats import beta

    a = (1 - confidence) / 2
    low = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return low, high


def rate(k: int, n: int) -> str:
    """``4.1 % [3.3, 5.0] (82/2000)``."""
    low, high = exact_interval(k, n)
    return f"{100 * k / n:.1f} % [{100 * low:.1f}, {100 * high:.1f}] ({k}/{n})"
