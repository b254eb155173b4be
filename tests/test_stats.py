"""Statistics against known answers."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from runtime.reports.stats import paired_delta, pass_hat_k


def test_known_effect_is_recovered_and_excludes_zero():
    rng = np.random.default_rng(1)
    control = rng.uniform(0, 1, 200)
    treatment = control + 0.1 + rng.normal(0, 0.05, 200)
    d = paired_delta(treatment, control)
    assert d.low < 0.1 < d.high
    assert d.low > 0.05 and not d.covers_zero()
    assert d.sign_p < 1e-6


def test_no_effect_ci_covers_zero():
    rng = np.random.default_rng(2)
    control = rng.integers(0, 2, 200).astype(float)
    treatment = control.copy()
    flip = rng.choice(200, 40, replace=False)
    treatment[flip[:20]] = 1 - treatment[flip[:20]]
    treatment[flip[20:]] = 1 - treatment[flip[20:]]
    d = paired_delta(treatment, control)
    assert d.covers_zero()
    assert d.sign_p > 0.05


def test_identical_samples_give_no_zero_width_interval_and_say_why():
    """No variance observed: the interval and the detectable size come from the floor, are
    wider than 0, and the verdict says so; p is 1 and every task a tie."""
    x = np.array([0.0, 1.0, 1.0, 0.5])
    d = paired_delta(x, x)
    assert (d.mean, d.sign_p, d.ties) == (0.0, 1.0, 4)
    assert d.low < 0 < d.high and d.high - d.low > 0.1
    assert d.floor_only and d.mde > 0.05
    assert "no variance observed" in d.verdict() and "±0.00" not in d.verdict()


def test_an_all_zero_folder_gets_an_interval_and_no_detectable_zero():
    """50 tasks × 3 trials, every episode 0 in both arms: the floor gives a positive width."""
    from runtime.reports.report import _detectable

    zeros = np.zeros((50, 3))
    d = paired_delta(zeros, zeros)
    assert d.low < 0 < d.high and d.mde > 0
    assert _detectable(d.mde, 3, 1.0) != "±0.000"
    assert d.floor_only


def test_sign_test_matches_the_binomial_by_hand():
    # 9 wins, 1 loss: two-sided p = 2 * (C(10,0) + C(10,1)) / 2^10
    d = paired_delta(np.array([1.0] * 9 + [0.0]), np.array([0.0] * 9 + [1.0]))
    assert d.sign_p == pytest.approx(2 * 11 / 1024)


@pytest.mark.parametrize("n,c,k", [(4, 2, 1), (4, 2, 2), (5, 3, 2), (8, 8, 4), (8, 0, 1), (6, 5, 3)])
def test_pass_hat_k_matches_enumeration(n, c, k):
    outcomes = [1] * c + [0] * (n - c)
    subsets = list(combinations(range(n), k))
    expected = sum(all(outcomes[i] for i in s) for s in subsets) / len(subsets)
    assert pass_hat_k(c, n, k) == pytest.approx(expected)


def test_pass_hat_k_rejects_k_out_of_range():
    with pytest.raises(ValueError):
        pass_hat_k(1, 3, 4)
