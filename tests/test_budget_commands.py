"""The budget across table3's cells, its dry run against the budget, and the end of a run: the
report and the episode explorer, named on the last line."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from runtime import table3
from tests.conftest import read_records


def _config(tmp_path: Path, out: Path, extra: str = "") -> Path:
    path = tmp_path / "t3.yaml"
    path.write_text(f"""
name: t3-budget
seed: 3
models: [scripted/roles]
modes: [direct, plan-first]
concurrency: 2
no_report: true
environments:
  - env: tau2
    domains: [mock, airline]
    tasks: 4
out: {out}
{extra}""")
    return path


def test_table3_budget_spans_its_cells_and_resumes(tmp_path, capsys):
    from testkit import run_scripted

    run_scripted.register()
    out = tmp_path / "out"
    config = _config(tmp_path, out, "prices: {scripted/roles: 100/100}\nmax_cost: 2\n")
    assert table3.main(["--config", str(config)]) == 4
    first = read_records(out)
    costs = [r["usage"]["total"]["cost_usd"] for r in first]
    assert 0 < len(first) < 8 and sum(costs) <= 2 + max(costs)
    err = capsys.readouterr().err
    assert "cost limit $2 reached" in err
    # The budget is the folder's: a higher one on the command line finishes every cell.
    assert table3.main(["--config", str(config), "--max-cost", "1000"]) == 0
    records = read_records(out)
    counts = Counter(r["record_id"] for r in records)
    assert len(counts) == 8 and set(counts.values()) == {1}
    assert {r["key"]["domain"] for r in records} == {"mock", "airline"}


def test_dry_run_shows_the_budget_and_refuses_one_it_cannot_price(tmp_path, capsys):
    config = _config(tmp_path, tmp_path / "out")
    assert table3.main(["--config", str(config), "--dry-run", "--max-cost", "5"]) == 2
    captured = capsys.readouterr()
    assert "UNPRICED model: scripted/roles" in " ".join(captured.out.split())
    assert "--max-cost 5: no price known for scripted/roles" in captured.err
    assert table3.main(["--config", str(config), "--dry-run", "--max-cost", "5",
                        "--price", "scripted/roles=0.5/2"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "budget: $5 against an estimate of $" in out and "UNPRICED" not in out


def test_validate_ends_with_the_report_and_explorer(validate, tmp_path, capsys):
    from testkit.roles import ScriptedRoles

    model = ScriptedRoles().model_name("report-roles")
    code, _ = validate("--env", "tau2", "--domain", "mock", "--tasks", "1", "--mode", "direct",
                       "--model", model)
    assert code == 0
    last = [line for line in capsys.readouterr().out.splitlines() if line.strip()][-1]
    run = tmp_path / "run"
    assert last == f"report: {run / 'report.md'}  explorer: {run / 'explorer' / 'index.html'}"
    assert (tmp_path / "run" / "explorer" / "index.html").is_file()
    assert (tmp_path / "run" / "report.md").is_file()


def test_no_report_skips_it(validate, tmp_path, capsys):
    from testkit.roles import ScriptedRoles

    model = ScriptedRoles().model_name("report-roles")
    code, _ = validate("--env", "tau2", "--domain", "mock", "--tasks", "1", "--mode", "direct",
                       "--model", model, "--no-report")
    assert code == 0
    assert "explorer" not in capsys.readouterr().out
    assert not (tmp_path / "run" / "explorer").exists()
