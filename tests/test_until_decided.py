"""``--until-decided``: a run in waves read by an anytime-valid confidence sequence.

The sequence's arithmetic (its half-width is where the mixture martingale reaches 1/α), its
type-I error under a look after every wave on simulated experiments of the class the runtime runs
(the full 10,000 are bench/sequential_calibration.py's; a small fast version here, beside the
fixed-size interval read at every wave, which fails the same bound), and end to end on the
known-truth stochastic model: a large effect stops before --max-trials with *effect*, a killed
run resumes the same sequence, threads and Ray decide alike, a grown folder's report shows the
anytime-valid interval, bad values are one line and exit 2.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from runtime.stats import sequential as sq
from runtime.stats.sequential_plan import issue_grid, paired_differences

EFFECT_MODEL = "stochastic-decided"


def test_half_width_is_where_the_mixture_martingale_reaches_one_over_alpha():
    rho, alpha = sq.mixture_precision(0.03), 0.05
    for variance in (1e-4, 1e-3, 0.02):
        info, h = 1 / variance, sq.half_width(variance, rho, alpha)
        martingale = math.sqrt(rho / (rho + info)) * math.exp(info ** 2 * h ** 2 / (2 * (rho + info)))
        assert martingale == pytest.approx(1 / alpha, rel=1e-9)
    # the boundary is wider than a fixed-size interval's everywhere, least near its tuning point
    tuned = (sq.TUNED_AT * 0.03 / sq.PLANNED_POWER_Z) ** 2
    assert 2.9 < sq.half_width(tuned, rho) / math.sqrt(tuned) < 3.2
    assert sq.half_width(100 * tuned, rho) / math.sqrt(100 * tuned) > 5


def _fixed_any(d: np.ndarray) -> np.ndarray:
    from scipy import stats

    means, _ = sq.task_means(d)
    n = np.sum(~np.isnan(means), axis=-2)
    m = np.nanmean(means, axis=-2)
    half = stats.t.ppf(0.975, n - 1) * np.sqrt(np.nanvar(means, axis=-2, ddof=1) / n)
    return ((m - half > 0) | (m + half < 0)).any(axis=-1)


def test_type_one_error_under_a_look_after_every_wave():
    """1,500 experiments with no effect over the issue's ranges (success 0.05–0.95, ICC
    0.2–0.6, task × arm sd 0–0.15, 2–15 % errored), 30 tasks, a look after each of 20 waves."""
    rng = np.random.default_rng(20)
    d = paired_differences(rng, 1500, 30, 20, **issue_grid(rng, 1500))
    seq = sq.sequence(d, margin=0.03)
    _, code = sq.first_decision(sq.decisions(seq.low, seq.high, 0.03))
    assert np.mean(code == 1) <= 0.055
    # the same looks at the fixed-size interval claim far more: the bound is one that can fail
    assert np.mean(_fixed_any(d)) > 0.15


def test_the_sequence_finds_an_effect_and_rules_out_none():
    rng = np.random.default_rng(21)
    d = paired_differences(rng, 300, 50, 30, mean=0.46, icc=0.405, task_arm_sd=0.03, error_rate=0.05,
                           effect=0.12)
    seq = sq.sequence(d, margin=0.03)
    wave, code = sq.first_decision(sq.decisions(seq.low, seq.high, 0.03))
    assert np.mean(code == 1) > 0.9 and np.median(wave[code == 1]) < 15
    # a degenerate wave (every pair tied) is no certainty: the variance floor keeps it undecided
    ties = sq.sequence(np.zeros((10, 1)), margin=0.03)
    assert ties.low[0] < -0.03 and ties.high[0] > 0.03


def test_decision_from_records_counts_complete_waves_and_pairs():
    import pandas as pd

    from runtime.reports.decision import complete_waves, differences, planned

    rows = [{"domain": "d", "task_id": str(t), "arm": arm, "trial": k, "status": status,
             "score": score} for t in range(3) for k in range(2) for arm, status, score in
            (("plan-first", "ok", 0.0), ("refine", "error" if (t, k) == (0, 1) else "ok", 1.0))]
    rows.append({"domain": "d", "task_id": "0", "arm": "refine", "trial": 2, "status": "ok", "score": 1.0})
    df = pd.DataFrame(rows)
    assert planned(["direct", "plan-first", "plan-first-aa", "refine"]) == [("refine", "plan-first"),
                                                                           ("plan-first", "direct")]
    assert complete_waves(df, ["plan-first", "refine"]) == 2  # the third trial is partial
    d = differences(df, "refine", "plan-first", 2)
    assert d.shape == (3, 2) and np.isnan(d[0, 1]) and np.nansum(d) == 5


# ----- the wave loop, on records made up by a fake executor (fast) -----

def _loop(monkeypatch, records: list, effect: float, max_trials: int = 10, tasks: int = 12, *,
          out: Path, margin: float = 0.03, looks: int | None = None,
          rates: dict | None = None):
    """Run ``runtime.cli.waves.run_until_decided`` with a fake executor that records, per wave,
    every task in both arms (outcomes drawn from (task, trial, mode), so reruns agree)."""
    import random
    from dataclasses import dataclass
    from types import SimpleNamespace

    from runtime.cli import lifecycle, waves
    from runtime.folder.records import EpisodeKey, EpisodeRecord

    ran = []

    @dataclass
    class FakeRun:
        config: object
        spec: object
        out: Path

    class Spec(SimpleNamespace):
        def model_copy(self, update):
            return Spec(**{**vars(self), **update})

    def run_wave(run, console):
        ran.append(run.spec.trials)
        done = {r.record_id for r in records}
        for t in range(tasks):
            for k in range(run.spec.trials):
                for mode in run.spec.modes:
                    key = EpisodeKey(env="tau2", domain="d", task_id=str(t), mode=mode, model="m", trial=k,
                                     strategy="anti-leak" if mode == "refine" else "")
                    if key.id() in done:
                        continue
                    p = rates[mode] if rates else 0.3 + (effect if mode == "refine" else 0.0)
                    ok = random.Random(f"{t}:{k}:{mode}").random() < p
                    records.append(EpisodeRecord(run_id="r", key=key, record_id=key.id(), status="ok",
                                                 seed=k, score=float(ok), started_at="2026-01-01T00:00:00",
                                                 finished_at="2026-01-01T00:00:01"))

    monkeypatch.setattr(lifecycle, "run_with_progress", run_wave)
    monkeypatch.setattr(lifecycle, "finished_records", lambda run: list(records))
    modes = list(rates) if rates else ["plan-first", "refine"]
    run = FakeRun(SimpleNamespace(max_trials=max_trials, margin=margin, planned_looks=looks, modes=modes),
                  Spec(task_ids=[str(t) for t in range(tasks)], trials=max_trials, modes=modes,
                       strategies=["anti-leak"], env="tau2", domain="d", tested_model="m"), out)
    waves.run_until_decided(run, SimpleNamespace(print=lambda *a, **k: None))
    return ran, waves.decision_of(run, records)


def test_the_wave_loop_stops_when_decided_and_resumes_from_the_records(monkeypatch, tmp_path):
    records: list = []
    ran, entry = _loop(monkeypatch, records, effect=0.6, out=tmp_path / "a")
    assert entry["decided"] and entry["comparisons"][0]["decision"] == "effect"
    assert ran == list(range(1, entry["wave"] + 1)) and entry["wave"] < 10  # one wave at a time, none after
    # killed in its last wave: three records lost; the loop runs that wave again, and only it
    partial = records[:-3]
    again, resumed = _loop(monkeypatch, partial, effect=0.6, out=tmp_path / "a")
    assert again == [entry["wave"]] and resumed == entry
    # decided: nothing more runs
    assert _loop(monkeypatch, partial, effect=0.6, out=tmp_path / "a")[0] == []
    # no effect: runs to --max-trials undecided (12 tasks cannot resolve ±0.03 in 4 waves)
    ran, entry = _loop(monkeypatch, [], effect=0.0, max_trials=4, out=tmp_path / "b")
    assert ran == [1, 2, 3, 4] and entry["stopped"] == "max-trials" and not entry["decided"]


def test_an_arm_stops_once_every_comparison_it_is_in_is_decided(monkeypatch, tmp_path):
    """Plan-first − Direct is a large effect, Refine − Plan-first none: Direct stops after the
    wave that decides its comparison; Plan-first and Refine go on to --max-trials."""
    records: list = []
    _, entry = _loop(monkeypatch, records, effect=0.0, max_trials=8, tasks=16, out=tmp_path,
                     rates={"direct": 0.05, "plan-first": 0.9, "refine": 0.9})
    rows = {(r["treatment"], r["control"]): r for r in entry["comparisons"]}
    direct = rows[("plan-first", "direct")]
    assert direct["decision"] == "effect" and direct["wave"] < 8
    trials = {m: 1 + max(r.key.trial for r in records if r.key.mode == m) for m in ("direct", "plan-first", "refine")}
    assert trials["direct"] == direct["wave"] and trials["plan-first"] == trials["refine"] == 8
    assert rows[("refine", "plan-first")]["waves"] == 8 and direct["waves"] == direct["wave"]


def test_settings_are_fixed_at_the_first_look_and_another_margin_is_refused(monkeypatch, tmp_path, capsys):
    from types import SimpleNamespace

    from runtime.cli import lifecycle, waves

    records: list = []
    _loop(monkeypatch, records, effect=0.0, max_trials=3, out=tmp_path, looks=3)
    fixed = json.loads((tmp_path / "run.json").read_text())["decision_settings"]["tau2/d/m"]
    assert fixed["margin"] == 0.03 and fixed["comparisons"] == [["refine", "plan-first"]]
    assert fixed["boundary"] == "alpha-spending" and fixed["looks"] == 3 and fixed["fixed_at_wave"] == 1
    assert fixed["precision"] > 0 and fixed["alpha"] == 0.05
    # a later invocation with margin 0.1 moves nothing: refused in one line, exit 2
    from dataclasses import dataclass

    class Config(SimpleNamespace):
        def model_copy(self, update):
            return Config(**{**vars(self), **update})

    @dataclass
    class Run:
        out: Path
        spec: object
        config: object

    run = Run(tmp_path, SimpleNamespace(task_ids=[str(t) for t in range(12)], env="tau2", domain="d",
                                        tested_model="m", strategies=["anti-leak"]),
              Config(modes=["plan-first", "refine"], margin=0.1))
    assert lifecycle.guarded(lambda: waves.fixed_settings(run, margin=0.1, max_trials=None)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--margin 0.1" in err and "margin 0.03" in err, err
    # not given: the recorded one is used
    assert waves.fixed_settings(run, margin=None, max_trials=None).config.margin == 0.03
    # the records then decide under the recorded margin even if the run's config says otherwise
    _, again = _loop(monkeypatch, records, effect=0.0, max_trials=3, out=tmp_path, margin=0.1)
    assert again["margin"] == 0.03 and again["looks"] == 3
    # another comparison (a Direct arm added) is refused too
    run.config.modes = ["direct", "plan-first", "refine"]
    assert lifecycle.guarded(lambda: waves.fixed_settings(run, margin=None, max_trials=None)) == 2
    assert "fixed at its first look on refine − plan-first" in capsys.readouterr().err
    # too few tasks for the shown guarantee: refused before any episode
    run.spec.task_ids = ["1", "2", "3"]
    assert lifecycle.guarded(lambda: waves.fixed_settings(run, margin=None, max_trials=None)) == 2
    assert "shown from 10 tasks" in capsys.readouterr().err


def test_errors_that_depend_on_the_outcome_keep_the_run_going_and_are_flagged():
    """The treatment's failing episodes crash (15 %): on complete pairs it looks better than it
    is; with errors counted as failures it does not. The two readings disagree: undecided."""
    import pandas as pd

    from runtime.reports.decision import evaluate, lines

    rng = np.random.default_rng(3)
    tasks, waves = 40, 12
    p = rng.beta(0.46 * 1.5, 0.54 * 1.5, size=tasks)
    rows = []
    for t in range(tasks):
        for k in range(waves):
            for arm in ("plan-first", "refine"):
                ok = rng.random() < p[t]
                crashed = arm == "refine" and not ok and rng.random() < 0.6
                rows.append({"domain": "d", "task_id": str(t), "arm": arm, "trial": k,
                             "status": "error" if crashed else "ok", "score": None if crashed else float(ok)})
    df = pd.DataFrame(rows)
    entry = evaluate(df, margin=0.03)
    [row] = entry["comparisons"]
    assert row["error_rates"]["unequal"] and entry["unequal_errors"] == ["refine − plan-first"]
    assert row["errors_as_failures"]["decision"] != "effect"
    # complete pairs alone stop on a false effect; the run does not
    assert not row["views_agree"] and row["decision"] == "undecided" and not entry["decided"]
    text = "\n".join(lines(entry))
    assert "unequal error rates: refine" in text
    # with the errors as failures on both sides the readings agree, and nothing is flagged
    fair = df.assign(status="ok", score=df["score"].fillna(0.0))
    assert not evaluate(fair, margin=0.03)["comparisons"][0]["error_rates"]["unequal"]


def test_alpha_spending_boundary_spends_alpha_and_holds_when_information_saturates():
    """The boundary's crossing probability on a Brownian motion with one unit of information per
    wave is α; with information that saturates (a task × arm term) it crosses less."""
    from runtime.stats.spending import boundary

    obf = np.asarray(boundary(10, 0.05, "obrien-fleming"))
    assert np.all(np.diff(obf[np.isfinite(obf)]) < 0) and 1.96 < obf[-1] < 2.2
    c = np.asarray(boundary(10, 0.05))  # the default spends more early: lower first looks
    assert np.all(np.diff(c) < 0) and c[0] < obf[0] and c[-1] > obf[-1]
    rng = np.random.default_rng(4)
    steps = rng.standard_normal((60_000, 10))
    linear = np.cumsum(steps, axis=1) / np.sqrt(np.arange(1, 11))
    assert abs(np.mean((np.abs(linear) >= c).any(axis=1)) - 0.05) < 0.005
    shared = rng.standard_normal((60_000, 1)) * 0.5  # G: never shrinks
    saturating = (shared + np.cumsum(steps, axis=1) / np.arange(1, 11)) / np.sqrt(0.25 + 1 / np.arange(1, 11))
    assert np.mean((np.abs(saturating) >= c).any(axis=1)) <= 0.05


@pytest.mark.parametrize("tasks,waves,looks", [(10, 40, None), (10, 40, 40), (20, 200, None), (20, 200, 200)])
def test_type_one_error_at_few_tasks_and_long_horizons(tasks, waves, looks):
    """The issue's failing designs (7.3 % at 10 × 40, 7.5 % at 20 × 200 before the boundaries
    were read as Student-t): 400 experiments each over the issue's ranges; the full 2,000 a
    design are bench/sequential_calibration.py's."""
    rng = np.random.default_rng(tasks * 1000 + waves)
    d = paired_differences(rng, 400, tasks, waves, **issue_grid(rng, 400))
    seq = sq.sequence(d, margin=0.03, looks=looks)
    _, code = sq.first_decision(sq.decisions(seq.low, seq.high, 0.03))
    assert np.mean(code == 1) <= 0.05


# ----- end to end on the stochastic scripted model -----

def _register(name: str, effect: float):
    from testkit import stochastic
    from testkit.stochastic import StochasticBenchmark

    bench = StochasticBenchmark(mean=0.3, effect=effect, icc=0.3)
    stochastic.register(bench, name)
    return bench


def _argv(out: Path, name: str, *extra: str, tasks: int = 10) -> list[str]:
    from testkit.plan_follower import suitable_tasks

    return ["--mode", "plan-first,refine", "--env", "tau2", "--domain", "airline",
            "--task-ids", ",".join(suitable_tasks("airline", tasks)), "--model", f"scripted/{name}",
            "--out", str(out), "--no-cache", "--concurrency", "4", "--no-report", *extra]


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]


@pytest.mark.slow  # ~30 s alone, minutes on a loaded machine: 40-odd episodes through τ² and three invocations
def test_a_large_effect_stops_early_with_effect_and_resumes_the_same_sequence(tmp_path, capsys):
    from runtime import validate

    _register(EFFECT_MODEL, 0.6)
    out = tmp_path / "run"
    argv = _argv(out, EFFECT_MODEL, "--until-decided", "--max-trials", "6")
    assert validate.main(argv) == 0
    decision = json.loads((out / "summary.json").read_text())["decision"]
    assert decision["stopped"] == "decided" and decision["wave"] < 6
    [row] = decision["comparisons"]
    assert (row["treatment"], row["control"], row["decision"]) == ("refine", "plan-first", "effect")
    assert row["low"] > 0 and row["wave"] == decision["waves"]
    records = _records(out)
    assert len(records) == decision["waves"] * 10 * 2  # no wave past the deciding one was run
    printed = capsys.readouterr().out
    assert f"effect at wave {row['wave']}" in printed and "anytime-valid" in printed

    # killed in the deciding wave: its last episodes lost; the same command runs only those
    # and reaches the same decision from the same sequence
    lines = (out / "records.jsonl").read_text().splitlines()
    last = [i for i, line in enumerate(lines) if json.loads(line)["key"]["trial"] == row["wave"] - 1]
    kept = [line for i, line in enumerate(lines) if i not in set(last[-3:])]
    (out / "records.jsonl").write_text("\n".join(kept) + "\n")
    assert validate.main(argv) == 0
    again = json.loads((out / "summary.json").read_text())["decision"]
    assert again == decision
    assert len(_records(out)) == len(records)
    # and a decided folder runs nothing more
    assert validate.main(argv) == 0
    assert len(_records(out)) == len(records)
    assert "decided at wave" in capsys.readouterr().out
    # another margin on the folder looked at: refused in one line naming the recorded one
    assert validate.main([*argv, "--margin", "0.1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--margin 0.1" in err and "margin 0.03" in err, err
    assert json.loads((out / "summary.json").read_text())["decision"] == again
    assert len(_records(out)) == len(records)


@pytest.mark.slow  # two runs through τ² and their reports
def test_a_grown_folder_reports_the_anytime_valid_interval(tmp_path):
    from runtime import validate

    _register("stochastic-grown", 0.1)
    out = tmp_path / "grown"
    base = [a for a in _argv(out, "stochastic-grown", tasks=4) if a != "--no-report"]
    assert validate.main([*base, "--trials", "1"]) == 0
    first = (out / "report.md").read_text()
    assert "Decision (anytime-valid)" not in first  # read once: the fixed-size interval holds
    assert validate.main([*base, "--trials", "2"]) == 0
    report = (out / "report.md").read_text()
    assert "Decision (anytime-valid)" in report and "reported before at 1 trial(s)" in report
    assert "A decision may rest only on the anytime-valid interval" in report
    looks = json.loads((out / "run.json").read_text())["looks"]
    assert [x["trials"] for x in looks] == [1, 2]


@pytest.mark.parametrize("argv,expected", [
    (["--until-decided", "--margin", "-1"], "margin = -1.0"),
    (["--until-decided", "--max-trials", "0"], "max_trials = 0"),
    (["--until-decided", "--mode", "refine"], "--until-decided with --mode refine: no comparison"),
    (["--max-trials", "5"], "--max-trials: only with --until-decided"),
    (["--until-decided", "--trials", "3"], "--trials with --until-decided"),
    (["--until-decided", "--max-trials", "500"], "--max-trials 500: --until-decided's type-I error has been shown up to 200"),
])
def test_bad_values_are_one_line_and_exit_2(argv, expected, capsys):
    from runtime import validate

    base = ["--env", "tau2", "--domain", "airline", "--model", "scripted/none"]
    mode = [] if "--mode" in argv else ["--mode", "plan-first,refine"]
    assert validate.main([*base, *mode, *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err, err


def test_dry_run_states_expected_and_worst_case_episodes(capsys):
    from runtime import validate

    assert validate.main(["--env", "tau2", "--domain", "airline", "--mode", "plan-first,refine",
                          "--until-decided", "--max-trials", "20", "--dry-run", "--tasks", "20",
                          "--model", "openai/gpt-4o"]) == 0
    out = capsys.readouterr().out
    assert "under planned Δ +0.03 (the paper's lower figure): expected" in out
    assert "under Δ 0: expected" in out and "worst case: 800 episodes" in out
    # the fixed planner's assumptions, their sensitivity, and whether "no effect" can be reached
    assert "task × arm sd 0.1, 5% of episodes errored" in out
    assert "sensitivity at planned Δ +0.03: task × arm sd 0 → " in out
    assert "no effect of interest: NOT reachable at margin ±0.03 by wave 20" in out
    assert "α-spending needs 50 tasks or more" in out  # --max-trials given, 20 tasks: time-uniform


def test_a_resume_past_the_planned_waves_continues_on_the_reserve_and_says_so(monkeypatch, tmp_path):
    records: list = []
    _loop(monkeypatch, records, effect=0.0, max_trials=3, out=tmp_path, looks=3)
    _, entry = _loop(monkeypatch, records, effect=0.0, max_trials=5, out=tmp_path, looks=5)
    assert entry["looks"] == 3 and entry["waves"] == 5  # the boundary recorded at the first look
    assert "past the planned 3 waves" in entry["past_planned_looks"]
    assert "time-uniform sequence past wave 3" in entry["comparisons"][0]["method"]


@pytest.mark.ray
@pytest.mark.slow
def test_threads_and_ray_decide_alike(tmp_path):
    pytest.importorskip("ray", reason="the Ray backend needs Ray: pip install -e '.[ray]'")
    from runtime import backends, validate
    from runtime.backends import ray_backend
    from testkit import stochastic

    bench = _register("stochastic-ray", 0.6)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
        mp.setattr(backends, "WORKER_SETUP", [functools.partial(stochastic.register, bench, "stochastic-ray")])
        ray_backend.start_local(2)
        try:
            found = {}
            for backend in ("threads", "ray"):
                out = tmp_path / backend
                assert validate.main(_argv(out, "stochastic-ray", "--until-decided", "--max-trials", "6",
                                           "--backend", backend)) == 0
                found[backend] = json.loads((out / "summary.json").read_text())["decision"]
        finally:
            ray_backend.stop_local()
    assert found["threads"] == found["ray"] and found["ray"]["comparisons"][0]["decision"] == "effect"


def test_the_sequence_covers_a_skewed_real_effect_uniformly_over_the_waves():
    """Issue item 3: 20 tasks, success 0.92, the task effects skewed (logit scale), a look after
    every wave for 40: the true Δ inside the sequence at every wave in ≥ 94 % of experiments,
    and the misses, all below the truth (a sample without the few tasks that carry the effect
    has a small mean and a small spread), ≤ 5 %. Before the skew term widened that side: 94.0 %,
    5.95 % below (2,000 experiments, bench/SEQUENTIAL.md)."""
    from bench.experiments import simulate, true_delta

    truth = true_delta(mean=0.92, icc=0.4, shift=1.0, arm_sd=0.3, scale="logit", tasks=200_000)
    below = covered = 0
    for i in range(4):
        x = simulate(np.random.default_rng([21, i]), 500, 20, 40, mean=0.92, icc=0.4, shift=1.0,
                     arm_sd=0.3, scale="logit")
        seq = sq.sequence(x.excluded(), margin=0.03)
        low_miss = (seq.high < truth).any(axis=-1)
        below += int(low_miss.sum())
        covered += int((~low_miss & ~(seq.low > truth).any(axis=-1)).sum())
    assert covered >= 0.94 * 2000 and below <= 0.05 * 2000, (covered, below)
