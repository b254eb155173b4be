"""The Table 3 command: config validation, dry run, kill-and-resume, and the report."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from runtime import table3
from runtime.reports.report import build
from tests.test_resume_and_cli import read_records_tolerant

CONFIG = """
name: t3-test
seed: 3
trials: 2
modes: [direct, plan-first, refine]
models: [scripted/plan-follower]
critic_model: scripted/plan-follower
judge_model: scripted/plan-follower
user_model: scripted/plan-follower
concurrency: 2
environments:
  - env: tau2
    domains: [airline, retail]
    tasks: 4
published:
  tau2: {low: 0.03, high: 0.07, unit: reward}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t3.yaml"
    path.write_text(text)
    return path


def test_unknown_key_and_bad_value_fail_with_the_key_path(tmp_path, capsys):
    bad_key = _write(tmp_path, CONFIG.replace("    tasks: 4", "    tasks: 4\n    task_count: 9"))
    assert table3.main(["--config", str(bad_key), "--dry-run"]) == 2
    assert "environments.0.task_count" in capsys.readouterr().err
    bad_value = _write(tmp_path, CONFIG.replace("trials: 2", "trials: zero"))
    assert table3.main(["--config", str(bad_value), "--dry-run"]) == 2
    assert "trials = 'zero'" in capsys.readouterr().err
    bad_env = _write(tmp_path, CONFIG.replace("env: tau2", "env: webshop"))
    assert table3.main(["--config", str(bad_env), "--dry-run"]) == 2
    assert "environments.0.env" in capsys.readouterr().err


def test_dry_run_prints_the_matrix_and_calls_no_model(tmp_path, capsys):
    config = _write(tmp_path, CONFIG + f"out: {tmp_path / 'out'}\n")
    assert table3.main(["--config", str(config), "--dry-run"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "total: 24 episodes" in out  # 4 tasks × 2 trials × 3 modes × 1 model
    assert not (tmp_path / "out" / "records.jsonl").exists()


def test_the_real_table3_config_is_valid_and_dry_runs(capsys):
    config = Path(__file__).resolve().parents[1] / "configs" / "table3.yaml"
    parsed = table3.load_config(config)
    assert len(parsed.models) == 3 and parsed.trials >= 1
    assert {c.env for c in parsed.environments} == {"toolsandbox", "tau2"}
    assert all(c.tasks == 200 for c in parsed.environments)
    assert parsed.refine_strategies == ["anti-leak", "sealed"]
    smoke = table3.load_config(config.with_name("table3-smoke.yaml"))  # the same pipeline, offline
    assert smoke.refine_strategies == parsed.refine_strategies and smoke.modes == parsed.modes
    assert table3.main(["--config", str(config), "--dry-run", "--out", "/nonexistent/never-written"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "total: 14400 episodes" in out  # 400 tasks × 3 trials × 4 arms × 3 models
    assert "arm refine (anti-leak): 3600 episodes" in out and "arm refine (sealed): 3600 episodes" in out


PRICED = """
name: t3-priced
trials: 2
modes: [direct, plan-first, refine]
models: [openai/gpt-4o]
critic_model: openai/gpt-4o-mini
environments:
  - env: tau2
    domains: [airline]
    tasks: 40
"""
ARM = re.compile(r"arm refine \((\S+)\): (\d+) episodes, ~(\d+) model calls, ~\$([0-9.]+)")


def _dry_run(tmp_path, capsys, text: str) -> tuple[str, dict[str, tuple[int, int, float]]]:
    assert table3.main(["--config", str(_write(tmp_path, text)), "--dry-run"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich wraps to the terminal's width
    return out, {m[1]: (int(m[2]), int(m[3]), float(m[4])) for m in ARM.finditer(out)}


def test_dry_run_prices_refine_under_anti_leak_and_sealed(tmp_path, capsys):
    from runtime.llm.estimate import episode_estimate
    from runtime.llm.roles import ROLES, resolve

    out, arms = _dry_run(tmp_path, capsys, PRICED + "strategies: [anti-leak, sealed]\n")
    assert set(arms) == {"anti-leak", "sealed"}, out
    (episodes, calls, cost), (s_episodes, s_calls, s_cost) = arms["anti-leak"], arms["sealed"]
    assert episodes == s_episodes == 80  # 40 tasks × 2 trials, the same p0 for both
    assert s_calls == calls, "a sealed critique is one call (its rationale is rendered), as a free one"
    roles = resolve({"critic_model": "openai/gpt-4o-mini"}, "openai/gpt-4o")
    assert set(roles) == set(ROLES)
    one = {s: episode_estimate("refine", roles, strategy=s) for s in ("anti-leak", "sealed")}
    extra = one["sealed"].cost_usd - one["anti-leak"].cost_usd
    assert extra < 0 and s_cost - cost == pytest.approx(80 * extra, abs=0.011)
    assert "total: 320 episodes" in out  # direct, plan-first, refine twice
    assert "tau2 · refine(anti-leak) − refine(sealed): 40 tasks × 2 trials → detectable Δ" in out


def test_a_config_may_drop_the_sealed_arm(tmp_path, capsys):
    out, arms = _dry_run(tmp_path, capsys, PRICED + "strategies: [anti-leak]\n")
    assert set(arms) == {"anti-leak"} and "total: 240 episodes" in out
    assert "refine(sealed)" not in out and "refine (sealed)" not in out
    plain, plain_arms = _dry_run(tmp_path, capsys, PRICED)  # no strategies: the config's strategy
    assert plain_arms == arms and "total: 240 episodes" in plain


@pytest.mark.parametrize("line, named", [
    ("strategies: [anti-leak, sealde]", "strategies.1 = 'sealde'"),
    ("strategies: []", "strategies"),
    ("strategies: anti-leak", "strategies = 'anti-leak'"),
    ("strategies: [sealed, sealed]", "sealed more than once"),
    ("strategy: leaky\nstrategies: [anti-leak, sealed]", "strategy 'leaky' is not among strategies"),
])
def test_a_bad_strategies_value_is_one_line_and_exit_2(tmp_path, capsys, line, named):
    assert table3.main(["--config", str(_write(tmp_path, PRICED + line + "\n")), "--dry-run"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and named in err[0] and "Traceback" not in captured.err, err
    if "sealde" in line:
        assert "accepted:" in err[0] and "anti-leak" in err[0]


def _run(config: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "testkit.run_scripted", "--latency", "0.02",
                             "--command", "table3", "--", "--config", str(config)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_killed_table3_run_finishes_with_no_duplicate_or_missing_records(tmp_path):
    out = tmp_path / "out"
    config = _write(tmp_path, CONFIG + f"out: {out}\n")
    proc = _run(config)
    deadline = time.time() + 300
    while time.time() < deadline and len(read_records_tolerant(out) if (out / "records.jsonl").exists() else []) < 5:
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = read_records_tolerant(out)
    assert 5 <= len(partial) < 24
    sample_before = (out / "sample.json").read_text()

    proc = _run(config)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    assert (out / "sample.json").read_text() == sample_before  # the same draw, read back
    records = read_records_tolerant(out)
    keys = Counter((r["key"]["domain"], r["key"]["task_id"], r["key"]["mode"], r["key"]["trial"]) for r in records)
    assert len(keys) == 24 and set(keys.values()) == {1}

    report = pd.read_csv(out / "report.csv")
    assert len(report) == 1 and report.loc[0, "tasks"] == 4 and report.loc[0, "trials"] == 2
    assert (out / "report.md").read_text().count("| tau2 | scripted/plan-follower |") >= 1
    assert "+0.03 to +0.07 reward" in (out / "report.md").read_text()
    assert (out / "modes.png").stat().st_size > 1000 and (out / "delta.png").exists()
    assert "<img src=\"modes.png\"" in (out / "report.html").read_text()


def test_report_rebuilds_from_records_alone(tmp_path):
    with pytest.raises(ValueError, match="no records"):
        build(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "runtime.report", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2 and "no records" in proc.stderr


def test_every_cell_writes_its_lines_to_run_log(tmp_path):
    """Every cell is built before the first runs, and loguru is one logger: building a cell must
    not take the ``run.log`` sink away from the others."""
    from testkit import run_scripted
    from tests.conftest import read_records

    run_scripted.register()
    out = tmp_path / "out"
    config = _write(tmp_path, f"""
name: t3-log
seed: 3
models: [scripted/roles]
modes: [direct]
concurrency: 1
environments:
  - env: tau2
    domains: [mock, airline]
    tasks: 2
out: {out}
""")
    assert table3.main(["--config", str(config)]) == 0
    records = read_records(out)
    assert {r["key"]["domain"] for r in records} == {"mock", "airline"}, "two cells, or the test proves nothing"
    log = (out / "run.log").read_text()
    missing = [r["record_id"] for r in records if r["opening_request"].split("\n")[0][:60] not in log]
    assert not missing, f"no run.log lines for {missing}"
    # run.json records what each cell ran: the table's modes, not the cell config's default "all"
    invocations = json.loads((out / "run.json").read_text())["invocations"]
    assert len(invocations) == 2
    assert [i["config"]["mode"] for i in invocations] == ["direct", "direct"]
    assert [i["modes"] for i in invocations] == [["direct"], ["direct"]]


def test_a_scripted_matrix_reports_refine_anti_leak_minus_sealed(tmp_path):
    """Both Refine arms revise Plan-first's p0; the report gives their difference under Table 3
    with its interval, detectable size and reading."""
    from testkit.plan_follower import PlanFollowingRoles
    from tests.conftest import read_records

    model = PlanFollowingRoles(noise=0.3, wrong_share=0.5).model_name("plan-follower-t3-sealed")
    out = tmp_path / "out"
    config = _write(tmp_path, f"""
name: t3-sealed
seed: 3
trials: 1
modes: [plan-first, refine]
strategies: [anti-leak, sealed]
models: [{model}]
concurrency: 2
no_judge: true
environments:
  - env: tau2
    domains: [airline]
    tasks: 4
out: {out}
""")
    assert table3.main(["--config", str(config)]) == 0
    records = read_records(out)
    by = Counter((r["key"]["mode"], r["key"]["strategy"]) for r in records)
    assert by == {("plan-first", ""): 4, ("refine", "anti-leak"): 4, ("refine", "sealed"): 4}
    p0 = {(r["key"]["task_id"], r["key"]["trial"], r["key"]["mode"], r["key"]["strategy"]): json.dumps(r["p0"])
          for r in records}
    assert all(p0[(t, k, "refine", s)] == p0[(t, k, "plan-first", "")] for (t, k, m, s) in p0 if m == "refine")
    md = (out / "report.md").read_text()
    assert "## Refine(anti-leak) − Refine(sealed): how much of the gain needs free text" in md
    (row,) = [line for line in md.splitlines() if line.startswith(f"| tau2 | {model} | 4 |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert re.fullmatch(r"[+-]\d\.\d{3} \[[+-]\d\.\d{3}, [+-]\d\.\d{3}\]", cells[5]), row  # Δ [95% CI]
    assert re.fullmatch(r"±\d\.\d{3}", cells[6]), row  # detectable
    (reading,) = [line for line in md.splitlines() if line.startswith(f"- tau2 · {model}: ")]
    assert any(words in reading for words in ("free text carried part", "sealed scores higher",
                                               "no evidence that the free text matters", "inconclusive"))
    assert pd.read_csv(out / "report.csv")["strategy"].tolist() == ["anti-leak", "sealed"]


def test_dry_run_until_decided_prices_the_sequential_matrix(capsys):
    """The shipped config: expected and worst-case episodes and dollars beside the fixed design."""
    config = Path(__file__).resolve().parents[1] / "configs" / "table3.yaml"
    assert table3.main(["--config", str(config), "--dry-run", "--until-decided", "--max-trials", "6",
                        "--out", "/nonexistent/never-written"]) == 0
    out = capsys.readouterr().out
    assert "--until-decided: 12 cells × 3 comparisons, α 0.05 split evenly" in out
    expected = re.search(r"every comparison at the paper's lower figure: ~([\d,]+) episodes, ~\$([\d,.]+)", out)
    worst = re.search(r"worst case, every cell to 6 waves: ~([\d,]+) episodes", out)
    fixed = re.search(r"fixed design \(3 trial\(s\)\): ([\d,]+) episodes", out)
    assert expected and worst and fixed, out
    assert int(expected[1].replace(",", "")) <= int(worst[1].replace(",", "")) == 2 * int(fixed[1].replace(",", ""))
    assert not Path("/nonexistent/never-written").exists()


@pytest.mark.slow  # 16 tasks × up to 5 waves × 3 arms through τ² (about a minute alone)
def test_a_scripted_matrix_until_decided_stops_its_decided_comparisons_early(tmp_path):
    """Refine − Plan-first is a large effect (+0.6), Plan-first − Direct none: Refine stops once
    its comparison is decided; Direct and Plan-first go on to max_trials; the report leads with
    the decision."""
    from testkit import stochastic
    from testkit.stochastic import StochasticBenchmark
    from tests.conftest import read_records

    from testkit.plan_follower import suitable_tasks

    model = stochastic.register(StochasticBenchmark(mean=0.3, effect=0.6, icc=0.3), "stochastic-t3")
    out = tmp_path / "out"
    out.mkdir()  # tasks whose failing replay fails (a drawn sample would dilute the effect)
    (out / "sample.json").write_text(json.dumps({"sample": {"tau2": {"airline": suitable_tasks("airline", 16)}}}))
    config = _write(tmp_path, f"""
name: t3-decided
seed: 3
modes: [direct, plan-first, refine]
models: [{model}]
concurrency: 4
no_judge: true
until_decided: true
max_trials: 5
environments:
  - env: tau2
    domains: [airline]
    tasks: 16
out: {out}
""")
    assert table3.main(["--config", str(config)]) == 0
    records = read_records(out)
    waves = {m: 1 + max(r["key"]["trial"] for r in records if r["key"]["mode"] == m) for m in ("direct", "plan-first", "refine")}
    assert waves["refine"] < 5 and waves["plan-first"] == waves["direct"] == 5, waves
    fixed = json.loads((out / "run.json").read_text())["decision_settings"]
    [(cell, settings)] = fixed.items()
    assert cell.startswith("tau2/airline/") and settings["alpha"] == 0.05 and settings["looks"] is None
    md = (out / "report.md").read_text()
    lead = md.split("\n\n")[1]
    assert lead.startswith("**Decision**") and "refine − plan-first: effect at wave" in md.split("\n\n")[2]
