"""Reports say what a Δ means: every Δ row carries the size the run could detect and a verdict,
the variance components, Holm's correction across strategies — shown end to end on a run of
the known-truth stochastic model through the batch layer."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from runtime.stats.verdict import verdict
from testkit.stochastic import StochasticBenchmark


@pytest.mark.parametrize("delta,low,high,mde,expected", [
    (0.04, -0.03, 0.11, 0.11, "detectable from ±0.11; +0.04 is below it: this run shows neither an effect nor its absence"),
    (0.15, 0.05, 0.25, 0.11, "excludes 0: the treatment scores better"),
    (-0.15, -0.25, -0.05, 0.11, "excludes 0: the treatment scores worse"),
    (0.00, -0.02, 0.02, 0.05, "covers 0 and excludes ±0.05: no effect that large"),
    (0.12, -0.01, 0.25, 0.11, "covers 0: this run shows neither an effect nor its absence"),
])
def test_verdicts(delta, low, high, mde, expected):
    assert expected in verdict(delta, low, high, mde)


def _frame(rng, strategies: dict[str, float], tasks: int = 40, trials: int = 3) -> pd.DataFrame:
    rows = []
    base = rng.uniform(0.2, 0.8, tasks)
    for mode, strategy, shift in [("plan-first", "", 0.0)] + [("refine", s, d) for s, d in strategies.items()]:
        for i in range(tasks):
            for k in range(trials):
                rows.append({"mode": mode, "strategy": strategy, "domain": "d", "task_id": str(i), "trial": k,
                             "status": "ok", "score": float(rng.random() < min(1, base[i] + shift)),
                             "guard_fired": False, "tokens": 0, "cost_usd": 0.0,
                             **{f"{p}_correct": None for p in ("p0", "p1")},
                             **{f"{p}_grade": None for p in ("p0", "p1")},
                             **{f"{p}_E{j}": None for p in ("p0", "p1") for j in range(1, 7)}})
    return pd.DataFrame(rows)


def test_ablation_carries_detectable_size_and_holm():
    from statsmodels.stats.multitest import multipletests

    from runtime.reports.ablation import ablation_table

    table = ablation_table(_frame(np.random.default_rng(4), {"anti-leak": 0.1, "none": 0.0, "leaky": 0.3}))
    assert {"mde", "p", "p_holm", "verdict"} <= set(table.columns)
    expected = multipletests(table["p"].to_numpy(), method="holm")[1]
    assert table["p_holm"].to_numpy() == pytest.approx(expected)
    assert (table["p_holm"] >= table["p"] - 1e-12).all()
    assert table["verdict"].str.contains("detectable from").all()


def test_end_to_end_run_shows_the_figures(tmp_path):
    """A run of the stochastic model (through validate, the batch layer and the report): every
    episode's outcome is the generator's for its trial seed, and summary.json, the report and
    the explorer index carry Δ with its detectable size, verdict and variance components."""
    from runtime import validate
    from testkit import stochastic
    from testkit.plan_follower import suitable_tasks

    bench = StochasticBenchmark(effect=0.3, icc=0.45)
    stochastic.register(bench, "stochastic-e2e")
    ids = suitable_tasks("airline", 4)
    out = tmp_path / "run"
    assert validate.main(["--mode", "plan-first,refine,plan-first-aa", "--env", "tau2", "--domain", "airline",
                          "--task-ids", ",".join(ids), "--trials", "2", "--model", "scripted/stochastic-e2e",
                          "--out", str(out), "--no-cache", "--concurrency", "4"]) == 0
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(records) == 4 * 2 * 3
    # the A/A arm: its own trial seeds, its own opening requests and plans (made, not reused)
    by_mode = {}
    for r in records:
        by_mode.setdefault(r["key"]["mode"], {})[(r["key"]["task_id"], r["key"]["trial"])] = r
    assert set(by_mode) == {"plan-first", "refine", "plan-first-aa"}
    for unit, aa in by_mode["plan-first-aa"].items():
        assert aa["seed"] != by_mode["plan-first"][unit]["seed"]
        assert "p0" not in aa["reused"] and "opening" not in aa["reused"], aa["reused"]
        # while Refine and Plan-first share one p0: whichever ran first made it, the other reused it
        shared = [by_mode[m][unit]["reused"] for m in ("plan-first", "refine")]
        assert sorted("p0" in reused for reused in shared) == [False, True], shared
    for r in records:  # reproducible: the outcome is the generator's for the trial seed
        assert (r["score"] >= 1 - 1e-6) == bench.succeeds(r["key"]["task_id"], r["key"]["mode"], r["seed"]), r["key"]
    # Δ computed independently from the records: per-task trial means, differenced, averaged
    scores = pd.DataFrame([{"task": r["key"]["task_id"], "mode": r["key"]["mode"], "score": r["score"]}
                           for r in records]).groupby(["task", "mode"])["score"].mean().unstack()
    diff = scores["refine"] - scores["plan-first"]
    summary = json.loads((out / "summary.json").read_text())
    [row] = [d for d in summary["deltas"] if d["treatment"] == "refine"]
    assert row["delta"] == pytest.approx(diff.mean())
    from scipy import stats
    # the floored t interval by hand: trial k paired with trial k; the share of pairs whose scores
    # differ (2 differing and 2 equal pairs added) over the trials, worth 15 tasks of variance
    pairs = pd.DataFrame([{"task": r["key"]["task_id"], "trial": r["key"]["trial"], "mode": r["key"]["mode"],
                           "score": r["score"]} for r in records]).pivot_table(
        index=["task", "trial"], columns="mode", values="score")
    floor = ((pairs["refine"] - pairs["plan-first"]).abs().sum() + 2) / (len(pairs) + 4) / 2
    n = len(diff)
    pooled = (diff.var(ddof=1) * (n - 1) + 15 * floor) / (n - 1 + 15)  # used only when it raises it
    variance, dof = (pooled, n - 1 + 15) if pooled > diff.var(ddof=1) else (diff.var(ddof=1), n - 1)
    half = stats.t.ppf(0.975, dof) * np.sqrt(variance / n)
    assert (row["low"], row["high"]) == pytest.approx((diff.mean() - half, diff.mean() + half))
    assert row["mde"] > 0 and "detectable from ±" in row["verdict"]
    assert set(row["components"]) >= {"between_task", "task_mode", "within_task"}
    report = (out / "report.md").read_text()
    assert "| detectable |" in report and f"±{row['mde']:.3f}" in report
    assert "## What each Δ can tell" in report and "variance components between-task" in report
    [aa] = [d for d in summary["deltas"] if d["treatment"] == "plan-first-aa"]
    assert aa["kind"] == "A/A (noise floor)" and "p_holm" not in aa
    assert "A/A (Plan-first again, independent trial seeds)" in report
    aa_diff = (pd.DataFrame([{"task": r["key"]["task_id"], "mode": r["key"]["mode"], "score": r["score"]}
                             for r in records]).groupby(["task", "mode"])["score"].mean().unstack())
    assert aa["delta"] == pytest.approx((aa_diff["plan-first-aa"] - aa_diff["plan-first"]).mean())
    index = (out / "explorer" / "index.html").read_text()
    assert "Δ against Plan-first" in index and row["verdict"].split(";")[0] in index


def test_the_aa_arm_draws_seeds_independent_of_every_trial():
    from runtime.episode.spec import episode_seed, trial_seed
    from runtime.folder.records import EpisodeKey

    def key(mode: str, trial: int) -> EpisodeKey:
        return EpisodeKey(env="tau2", domain="airline", task_id="1", mode=mode, model="m", trial=trial)

    for seeding in ("runtime", "tau2"):
        trials = {trial_seed(300, k, seeding) for k in range(50)}
        aa = [episode_seed(300, key("plan-first-aa", k), seeding) for k in range(50)]
        assert not trials & set(aa) and len(set(aa)) == 50
        assert all(episode_seed(300, key("plan-first", k), seeding) == trial_seed(300, k, seeding)
                   for k in range(5)), "the other modes keep their trial seeds"
