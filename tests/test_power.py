"""The power command and the design's arithmetic, against computations made independently of it:
the noncentral t solved by hand with scipy (not statsmodels), a Monte Carlo of the design, and
variance components of synthetic folders whose truth is known."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from datetime import datetime, timezone

import numpy as np
import pytest
from scipy import optimize, stats

from runtime import power as power_command
from runtime.stats.components import estimate
from runtime.stats.design import Components, mde, trials_for

MDE_LINE = re.compile(r"^minimum detectable Δ: ([0-9.]+)$", re.M)


def hand_mde(tasks: int, trials: int, sd: float, icc: float, task_mode_sd: float = 0.0,
             alpha: float = 0.05, power: float = 0.8) -> float:
    """The same formula from first principles: one task's paired difference of trial means has
    variance 2·σ_tm² + 2·σ_w²/trials; the t test over tasks rejects when |t| > t_crit, and its
    power is that of a noncentral t with noncentrality Δ·√n / sd_d."""
    within = (1 - icc) * sd ** 2
    sd_d = math.sqrt(2 * task_mode_sd ** 2 + 2 * within / trials)
    df = tasks - 1
    crit = stats.t.ppf(1 - alpha / 2, df)

    def shortfall(delta: float) -> float:
        nc = delta * math.sqrt(tasks) / sd_d
        return stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc) - power

    return optimize.brentq(shortfall, 1e-9, 8 * sd_d / math.sqrt(tasks))


GRID = [(t, k, icc, tm) for t in (20, 50, 114, 200) for k in (1, 3, 8) for icc in (0.2, 0.45, 0.53)
        for tm in (0.0, 0.1)]


@pytest.mark.parametrize("tasks,trials,icc,tm", GRID)
def test_mde_agrees_with_the_hand_computation_within_2_percent(tasks, trials, icc, tm):
    ours = mde(Components.from_sd_icc(0.5, icc, tm), tasks, trials)
    assert ours == pytest.approx(hand_mde(tasks, trials, 0.5, icc, tm), rel=0.02)


def test_the_issues_figures():
    airline = Components.from_sd_icc(0.5, 0.45)
    assert mde(airline, 50, 3) == pytest.approx(0.12, abs=0.005)
    assert mde(airline, 114, 3) == pytest.approx(0.08, abs=0.005)
    assert trials_for(airline, 50, 0.05) == 18
    # a task × arm term sets a floor no number of trials goes below
    assert trials_for(Components.from_sd_icc(0.5, 0.45, 0.15), 50, 0.05) is None


def test_stated_power_holds_in_a_monte_carlo_of_normal_scores():
    """A design simulated from its components (normal scores, not the formula): at the stated
    MDE the clustered t test rejects 80 % of the time."""
    from runtime.stats.intervals import paired_interval

    c = Components(0.1, 0.01, 0.15)
    tasks, trials = 40, 3
    delta = mde(c, tasks, trials)
    rng = np.random.default_rng(5)
    n = 4000
    u = rng.normal(0, math.sqrt(c.between_task), (n, tasks, 1))
    arm = lambda shift: (shift + u + rng.normal(0, math.sqrt(c.task_mode), (n, tasks, 1))  # noqa: E731
                         + rng.normal(0, math.sqrt(c.within_task), (n, tasks, trials)))
    found = paired_interval(arm(delta), arm(0.0))
    rejected = np.mean((found.low > 0) | (found.high < 0))
    assert rejected == pytest.approx(0.80, abs=0.025)


def test_command_prints_the_mde_on_a_line_of_its_own(capsys):
    assert power_command.main(["--tasks", "50", "--trials", "3", "--sd", "0.5", "--icc", "0.45"]) == 0
    out = capsys.readouterr().out
    value = float(MDE_LINE.search(out).group(1))
    # not optimistic by default: the task × arm sd assumed is 0.1 per arm
    assert value == pytest.approx(hand_mde(50, 3, 0.5, 0.45, 0.1), abs=0.0006)
    assert power_command.main(["--tasks", "50", "--trials", "3", "--sd", "0.5", "--icc", "0.45",
                               "--task-mode-sd", "0"]) == 0
    assert float(MDE_LINE.search(capsys.readouterr().out).group(1)) == pytest.approx(
        hand_mde(50, 3, 0.5, 0.45), abs=0.0006)


def test_command_target_mde_published_and_cost(capsys):
    # at the default task × arm sd (0.1) +0.05 is out of reach of airline's 50 tasks: said so
    assert power_command.main(["--published", "tau-airline", "--target-mde", "0.05"]) == 0
    out = capsys.readouterr().out
    assert out.count("cannot be detected with 50 tasks at any number of trials") == 2, out
    assert power_command.main(["--published", "tau-airline", "--target-mde", "0.05", "--task-mode-sd", "0",
                               "--model", "openai/gpt-4o"]) == 0
    out = capsys.readouterr().out
    assert "sierra-research/tau-bench issue #57" in out and "2026-08-23" in out
    needed = [int(n) for n in re.findall(r"with 50 tasks: (\d+) trials", out)]
    assert needed == [trials_for(Components.from_sd_icc(0.498, icc), 50, 0.05) for icc in (0.405, 0.465)]
    assert re.search(r"cost ~\$[0-9,]+\.\d\d with openai/gpt-4o", out)


def test_paper_sized_design_says_it_cannot_reach_the_effect(capsys):
    assert power_command.main(["--published", "apb-table3-tau2", "--sd", "0.5", "--icc", "0.45"]) == 0
    assert "cannot reach the paper's effect" in capsys.readouterr().out


@pytest.mark.parametrize("argv,named", [
    (["--tasks", "1", "--trials", "3", "--sd", "0.5", "--icc", "0.45"], "--tasks 1"),
    (["--tasks", "50", "--trials", "3", "--sd", "0.5", "--icc", "1.2"], "icc must be in [0, 1)"),
    (["--tasks", "50", "--trials", "3", "--sd", "0.5", "--icc", "0.2", "--task-mode-sd", "0.4"], "task-mode sd"),
    (["--published", "nope"], "accepted: tau-airline"),
    (["--tasks", "50", "--trials", "3"], "give --sd and --icc"),
    (["--tasks", "50", "--trials", "3", "--sd", "0.5", "--icc", "0.4", "--alpha", "2"], "--alpha 2"),
    (["--from", "no/such/folder"], "no records.jsonl"),
    (["--tasks", "x"], "--tasks"),
])
def test_bad_input_is_one_line_and_exit_2(argv, named, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    try:
        code = power_command.main(argv)
    except SystemExit as exc:  # the parser's own one-line error
        code = exc.code
    assert code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and named in lines[0] and "Traceback" not in lines[0], lines
    assert not (tmp_path / "no").exists(), "--from must not create the folder it reads"


def test_bad_input_in_a_process_of_its_own_prints_no_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "runtime.power", "--tasks", "50", "--trials", "3",
                           "--sd", "-1", "--icc", "0.4"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={"PYTHONPATH": str(__import__("pathlib").Path(__file__).parent.parent),
                                             "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "sd must be a positive" in proc.stderr


# -- variance components of a synthetic folder -----------------------------------------------

TRUE = Components(between_task=0.08, task_mode=0.02, within_task=0.12)


def synthetic_scores(rng, tasks: int, trials: int, c: Components = TRUE, delta: float = 0.05):
    u = rng.normal(0, math.sqrt(c.between_task), (tasks, 1))
    arm = lambda shift: (0.5 + shift + u + rng.normal(0, math.sqrt(c.task_mode), (tasks, 1))  # noqa: E731
                         + rng.normal(0, math.sqrt(c.within_task), (tasks, trials)))
    return arm(delta), arm(0.0)


def synthetic_folder(out, tasks: int = 150, trials: int = 4, seed: int = 11, scores=None, errored=()):
    """A run folder of refine and plan-first records; ``errored``: (mode, task, trial) recorded
    as errors."""
    from runtime.folder.records import EpisodeKey, EpisodeRecord, StageError
    from runtime.folder.store import RunStore

    treatment, control = scores if scores is not None else synthetic_scores(np.random.default_rng(seed), tasks, trials)
    store = RunStore(out)
    now = datetime(2026, 1, 1, tzinfo=timezone.utc).isoformat()
    for mode, scores in (("refine", treatment), ("plan-first", control)):
        for i in range(tasks):
            for k in range(trials):
                key = EpisodeKey(env="tau2", domain="airline", task_id=str(i), mode=mode,
                                 model="synthetic", trial=k, strategy="anti-leak" if mode == "refine" else "")
                if (mode, i, k) in errored:
                    store.append(EpisodeRecord(run_id="synthetic", key=key, record_id=key.id(), status="error",
                                               seed=k, error=StageError(stage="execute", type="X", message="x"),
                                               started_at=now, finished_at=now))
                    continue
                store.append(EpisodeRecord(run_id="synthetic", key=key, record_id=key.id(), status="ok",
                                           seed=k, score=float(scores[i, k]), score_name="synthetic",
                                           started_at=now, finished_at=now))
    return out


def test_from_run_recovers_known_components_within_its_stated_uncertainty(tmp_path, capsys):
    folder = synthetic_folder(tmp_path / "run")
    assert power_command.main(["--from", str(folder), "--trials", "4"]) == 0
    out = capsys.readouterr().out
    for name, label in (("between_task", "between-task"), ("task_mode", "task × arm"), ("within_task", "within-task")):
        found = re.search(rf"  {label}: ([0-9.]+) \[([0-9.]+), ([0-9.]+)\]", out)
        assert found, out
        point, low, high = map(float, found.groups())
        assert low <= getattr(TRUE, name) <= high, (name, point, low, high)
    assert MDE_LINE.search(out)


def test_component_intervals_cover_the_truth_in_repeated_folders():
    """The stated uncertainty is honest: over 60 synthetic runs each component's 95 % interval
    holds the truth in most of them (binomial: ≥ 50 of 60 unless the intervals are too narrow)."""
    import pandas as pd

    rng = np.random.default_rng(3)
    hits = dict.fromkeys(("between_task", "task_mode", "within_task"), 0)
    for _ in range(60):
        t, c = synthetic_scores(rng, 60, 3)
        rows = [{"domain": "d", "task_id": str(i), "arm": arm, "score": s[i, k]}
                for arm, s in (("refine", t), ("plan-first", c)) for i in range(60) for k in range(3)]
        found = estimate(pd.DataFrame(rows), ("refine", "plan-first"), resamples=300)
        for name in hits:
            hits[name] += getattr(found.low, name) <= getattr(TRUE, name) <= getattr(found.high, name)
    assert all(n >= 50 for n in hits.values()), hits


def test_from_a_folder_with_no_variance_plans_more_than_one_trial(tmp_path, capsys):
    """Every episode 0 in both arms: no "±0.000", and the plan for +0.1 falls back on the
    published default (said so) instead of planning 1 trial."""
    zeros = np.zeros((30, 2))
    folder = synthetic_folder(tmp_path / "run", 30, 2, scores=(zeros, zeros))
    assert power_command.main(["--from", str(folder), "--target-mde", "0.1", "--tasks", "50"]) == 0
    out = capsys.readouterr().out
    assert "±0.000" not in out and "no variance observed" in out
    needed = [int(n) for n in re.findall(r"with 50 tasks: (\d+) trials", out)]
    assert needed and all(n > 1 for n in needed), out


def test_from_a_folder_gives_the_reports_detectable_figure(tmp_path, capsys):
    """One comparison, one figure: power --from at the folder's own design prints the
    detectable Δ the report's Δ row carries for the same records."""
    import pandas as pd

    from runtime.folder.store import RunStore
    from runtime.reports.stats import task_delta
    from runtime.reports.summary import frame

    folder = synthetic_folder(tmp_path / "run", 40, 3, errored={("refine", 2, 1), ("plan-first", 5, 0)})
    assert power_command.main(["--from", str(folder)]) == 0
    stated = float(MDE_LINE.search(capsys.readouterr().out).group(1))
    df = frame(RunStore(folder).records())
    d = task_delta(df[df["arm"] == "refine"], df[df["arm"] == "plan-first"])
    assert isinstance(df, pd.DataFrame) and d.n == 40 and d.pairs == 40 * 3 - 2
    assert stated == pytest.approx(d.mde, abs=5e-4)


def test_an_expected_error_rate_lowers_power(capsys):
    c = Components.from_sd_icc(0.5, 0.45, 0.1)
    from runtime.stats.design import plan

    clean, errored = plan(c, 50, 3), plan(c, 50, 3, error_rate=0.15)
    assert errored.power_at(clean.mde) < clean.power_at(clean.mde) - 0.1
    assert power_command.main(["--tasks", "50", "--trials", "3", "--sd", "0.5", "--icc", "0.45",
                               "--error-rate", "0.05"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"power at 0\.\d+ falls from 80% to 7\d%", out), out
    assert "sensitivity: task × arm sd 0 → " in out


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan"])
def test_a_bad_error_rate_is_one_line_and_exit_2(value, capsys):
    code = power_command.main(["--tasks", "50", "--trials", "3", "--sd", "0.5", "--icc", "0.45",
                               "--error-rate", value])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and f"--error-rate {value}" in err[0], err


def test_task_mode_sd_help_says_what_the_value_is():
    """The value is each arm's own term; a task's effect varies with √2 times it — and the
    design agrees: one task's difference has variance 2·sd² from it."""
    helps = {a.dest: a.help for a in power_command.parser()._actions}
    assert "each arm's own task × arm term" in helps["task_mode_sd"] and "√2 × this" in helps["task_mode_sd"]
    c = Components.from_sd_icc(0.5, 0.45, 0.1)
    assert c.task_difference_variance(10_000_000) == pytest.approx(2 * 0.1 ** 2, rel=1e-3)
