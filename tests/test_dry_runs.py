"""Dry runs answer whether a run can see the effect: episodes, cost and the detectable Δ of each
comparison, the trials a target Δ takes, and nothing written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from runtime import table3, validate
from runtime.stats.design import Components, mde, trials_for
from runtime.stats.published import TASK_MODE_SD, figures

REPO = Path(__file__).resolve().parent.parent
DETECTABLE = re.compile(r"^(\w+) · (\S+) − (\S+): (\d+) tasks × (\d+) trials → detectable Δ (?:at most )?([0-9.]+)", re.M)


def _airline() -> Components:
    f = figures("tau-airline")
    return Components.from_sd_icc(f.sd, f.icc[0], TASK_MODE_SD)


def test_validate_dry_run_prints_the_plan_and_writes_nothing(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "runtime.validate", "--env", "tau2", "--domain", "airline",
                           "--mode", "all", "--trials", "3", "--model", "openai/gpt-4o", "--out", str(out),
                           "--dry-run"], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO), "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "450 episodes" in proc.stdout and re.search(r"~\$\d+\.\d\d", proc.stdout)
    found = {(m[2], m[3]): float(m[6]) for m in DETECTABLE.finditer(proc.stdout)}
    assert set(found) == {("refine", "plan-first"), ("plan-first", "direct")}, proc.stdout
    assert found["refine", "plan-first"] == pytest.approx(mde(_airline(), 50, 3), abs=5e-4)
    assert "cannot reach the paper's effect" in proc.stdout
    assert list(tmp_path.iterdir()) == [], "a dry run writes nothing, not even its --out folder"


def test_validate_dry_run_target_mde_chooses_the_trials(capsys):
    assert validate.main(["--env", "tau2", "--domain", "airline", "--mode", "all", "--model",
                          "openai/gpt-4o", "--dry-run", "--target-mde", "0.08"]) == 0
    out = capsys.readouterr().out
    need = trials_for(_airline(), 50, 0.08)
    assert need and f"takes {need} trials" in out and f"50 tasks × {need} trials × modes" in out
    # +0.05 is below the floor the assumed task × arm term puts under 50 tasks: said so
    assert validate.main(["--env", "tau2", "--domain", "airline", "--mode", "all", "--model",
                          "openai/gpt-4o", "--dry-run", "--target-mde", "0.05"]) == 0
    assert "cannot be detected with 50 tasks at any number of trials" in capsys.readouterr().out


def test_dry_run_sizes_the_aa_arm_the_sensitivity_and_the_errors(capsys):
    assert validate.main(["--env", "tau2", "--domain", "airline", "--mode", "plan-first,refine,plan-first-aa",
                          "--trials", "3", "--model", "openai/gpt-4o", "--dry-run"]) == 0
    out = capsys.readouterr().out
    found = {(m[2], m[3]): float(m[6]) for m in DETECTABLE.finditer(out)}
    aa = Components(_airline().between_task + _airline().task_mode, 0.0, _airline().within_task)
    assert found["plan-first-aa", "plan-first"] == pytest.approx(mde(aa, 50, 3), abs=5e-4)
    f = figures("tau-airline")
    at = [mde(Components.from_sd_icc(f.sd, f.icc[0], tm), 50, 3) for tm in (0.0, 0.2)]
    errored = mde(_airline(), 50, 3, error_rate=0.05)
    assert (f"sensitivity: task × arm sd 0 → {at[0]:.3g}, 0.2 → {at[1]:.3g}; with 5% of episodes "
            f"errored → {errored:.3g}") in out, out
    assert at[0] < found["refine", "plan-first"] < at[1] and errored > found["refine", "plan-first"]


def test_table3_dry_run_prints_a_detectable_delta_for_every_comparison(capsys):
    assert table3.main(["--config", str(REPO / "configs" / "table3.yaml"), "--dry-run"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich wraps to the terminal's width
    out = re.sub(r" (?=(tau2|toolsandbox) · )", "\n", out)
    found = {(m[1], m[2], m[3]): float(m[6]) for m in DETECTABLE.finditer(out) if m[4] == "200" and m[5] == "3"}
    assert set(found) == {(e, t, c) for e in ("tau2", "toolsandbox")
                          for t, c in (("refine", "plan-first"), ("plan-first", "direct"),
                                       ("refine(anti-leak)", "refine(sealed)"))}, out
    # the two Refine arms are paired on the same tasks as Refine and Plan-first are
    assert found["tau2", "refine(anti-leak)", "refine(sealed)"] == found["tau2", "refine", "plan-first"]
    assert found["tau2", "refine", "plan-first"] == pytest.approx(mde(_airline(), 200, 3), abs=5e-4)
    # ToolSandbox in similarity points: sd 0.5 (the most a [0, 1] score has) split as τ's is, and
    # the bound under the same model (all of it task × arm, which trials do not reduce)
    assert found["toolsandbox", "refine", "plan-first"] == pytest.approx(
        100 * mde(Components.from_sd_icc(0.5, 0.405, TASK_MODE_SD), 200, 3), abs=0.01)
    bound = 100 * mde(Components(0.0, 0.25, 0.0), 200, 3)
    assert f"bound: at most {bound:.3g} whatever the trials" in out and 13.5 < bound < 14.5
    assert "toolsandbox · refine − plan-first cannot reach the paper's effect" in out


def test_table3_target_mde_chooses_the_trials(capsys):
    assert table3.main(["--config", str(REPO / "configs" / "table3.yaml"), "--dry-run", "--target-mde", "0.05"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    need = trials_for(_airline(), 200, 0.05)
    assert f"tau2: --target-mde 0.05 takes {need} trials" in out


@pytest.mark.parametrize("command", [validate, table3])
def test_bad_target_mde_is_refused(command, capsys):
    argv = (["--env", "tau2", "--dry-run", "--target-mde", "-1"] if command is validate else
            ["--config", str(REPO / "configs" / "table3.yaml"), "--dry-run", "--target-mde", "-1"])
    assert command.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--target-mde -1" in err[0]


def test_modes_are_a_comma_separated_list_and_a_bad_one_is_named(capsys):
    assert validate.main(["--env", "tau2", "--domain", "airline", "--mode", "plan-first,plan-first-aa",
                          "--model", "openai/gpt-4o", "--dry-run"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "modes plan-first, plan-first-aa" in out
    for bad, named in (("plan-first,sideways", "invalid choice: 'sideways'"), ("all,refine", "invalid choice: 'all'"),
                       ("refine,refine", "give each mode once")):
        with pytest.raises(SystemExit) as exit_:  # the parser's one-line error
            validate.main(["--env", "tau2", "--mode", bad, "--dry-run"])
        assert exit_.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and named in err[0], err
