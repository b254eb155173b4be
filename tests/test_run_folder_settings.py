"""The settings a run folder's records were made with, not ``run.json`` alone: deleting
``run.json`` or giving another ``--run-id`` does not let a resume at other settings count them as
done; a ``run.json`` that is not JSON is one line and exit 2; ``summary.json`` and the report
are derived from the records, one group (row) per environment, domain and fingerprint."""

from __future__ import annotations

import json
from pathlib import Path

from runtime import report as report_cli
from testkit import run_scripted
from tests.conftest import read_records


def _run(out: Path, *extra: str, domain: str = "airline", tasks: str = "1") -> int:
    return run_scripted.main(["--", "--env", "tau2", "--domain", domain, "--mode", "direct",
                              "--task-ids", tasks, "--model", "scripted/roles", "--out", str(out),
                              "--no-cache", "--concurrency", "1", "--no-report", *extra])


def _error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_deleting_run_json_or_another_run_id_does_not_bypass_the_settings_check(tmp_path, capsys):
    out = tmp_path / "run"
    assert _run(out) == 0
    records = (out / "records.jsonl").read_bytes()
    (out / "run.json").unlink()
    capsys.readouterr()

    assert _run(out, "--temperature", "0.9") == 2
    line = _error_line(capsys)
    assert "made with other settings" in line and "run.json does not describe" in line, line
    assert (out / "records.jsonl").read_bytes() == records and not (out / "run.json").exists()

    assert _run(out) == 0  # the records' own settings resume (and run.json is written again)
    assert "1 episodes (1 already done)" in " ".join(capsys.readouterr().out.split())
    assert _run(out, "--temperature", "0.9", "--run-id", "another") == 2
    line = _error_line(capsys)
    assert "models.*.temperature 0.0 → 0.9" in line, line
    assert (out / "records.jsonl").read_bytes() == records


def test_a_run_json_that_is_not_json_is_one_line_and_exit_2(tmp_path, capsys):
    out = tmp_path / "run"
    assert _run(out) == 0
    (out / "run.json").write_text('{"invocations": [tru')
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != "writer.lock"}
    capsys.readouterr()
    assert _run(out) == 2
    line = _error_line(capsys)
    assert str(out / "run.json") in line and "is not JSON" in line and "move it aside" in line
    assert {p.name: p.read_bytes() for p in out.iterdir()
            if p.is_file() and p.name != "writer.lock"} == before


def test_a_folder_holding_two_domains_is_summarized_and_reported_per_domain(tmp_path, capsys):
    out = tmp_path / "run"
    assert _run(out) == 0
    assert _run(out, domain="retail", tasks="0") == 0  # another run id: accepted in one folder
    assert {r["key"]["domain"] for r in read_records(out)} == {"airline", "retail"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["domain"] == "retail"  # this run's records ...
    groups = {(g["env"], g["domain"]) for g in summary["folder"]}  # ... and the folder's, apart
    assert groups == {("tau2", "airline"), ("tau2", "retail")}
    assert all(g["settings"]["models"]["model"]["temperature"] == 0.0 for g in summary["folder"])

    assert report_cli.main([str(out)]) == 0
    md = (out / "report.md").read_text(encoding="utf-8")
    rows = [line for line in md.splitlines() if line.startswith("| tau2")]
    assert any(line.startswith("| tau2/airline | scripted/roles |") for line in rows), md
    assert any(line.startswith("| tau2/retail | scripted/roles |") for line in rows), md


def test_records_that_cannot_be_read_are_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    """A records file the process may not read (as root no file mode stops a read, so the
    refusal is injected at the open)."""
    import builtins

    out = tmp_path / "run"
    assert _run(out) == 0
    capsys.readouterr()
    real_open = builtins.open
    target = str(out / "records.jsonl")

    def refusing(file, mode="r", *args, **kwargs):
        if str(file) == target and "r" in mode:
            raise PermissionError(13, "Permission denied", target)
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refusing)
    assert _run(out) == 2
    line = _error_line(capsys)
    assert f"{target}: cannot be read (Permission denied)" in line, line
