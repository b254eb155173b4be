"""``python -m runtime.report RUN --regrade tau3``: a τ² run re-scored against τ³'s corrected
tasks names the verdicts that flip, shows both task sets' means and Δ, and leaves the folder as
it was. The run is a gold replay of the wheel's (τ² 26.3) reference actions on airline tasks the
release changed, whose end state differs from τ³'s gold one on some of them (a known flip), and
on a task the release left alone (no flip). Needs τ³ set up (``TAU3_SOURCE``)."""

from __future__ import annotations

import json
from pathlib import Path

from runtime import report as report_cli
from tests.conftest import tau3_record
from tests.test_gold_replay import _replay
from tests.test_tau3 import WHEEL_ZERO
from testkit.gold import GoldReplay

TASKS = ["0", "7", "23", "27"]  # 0 unchanged in τ³; 7, 23, 27 changed


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_tau2_run_regraded_against_tau3_names_its_flips_and_writes_nothing(tmp_path, capsys):
    tau3_record()
    scores = _replay(tmp_path, "airline", TASKS, GoldReplay(), "regrade-gold")
    assert scores == {t: 1.0 for t in TASKS}  # the wheel's own gold: all pass on τ²
    folder = tmp_path / "regrade-gold"
    before = _snapshot(folder)
    out = tmp_path / "regraded.json"
    capsys.readouterr()
    assert report_cli.main([str(folder), "--regrade", "tau3", "--regrade-out", str(out)]) == 0
    text = capsys.readouterr().out
    assert _snapshot(folder) == before  # nothing in the run folder changed
    result = json.loads(out.read_text())
    flipped = {f["task_id"] for f in result["flips"]}
    assert flipped == WHEEL_ZERO & set(TASKS) and flipped, result["flips"]
    assert "0" not in flipped
    assert f"## Flipped verdicts ({len(flipped)})" in text
    for task in flipped:
        assert f"| airline | {task} | direct | 0 | 1.000 | 0.000 |" in text
    means = result["deltas"]
    assert means["tau2"]["means"]["direct"] == 1.0
    assert means["tau3"]["means"]["direct"] == (len(TASKS) - len(flipped)) / len(TASKS)


def test_regrade_refuses_a_run_that_is_not_tau2(tmp_path, capsys):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "records.jsonl").write_text("")
    assert report_cli.main([str(folder), "--regrade", "tau3"]) == 2
    assert "re-scores a τ² run" in capsys.readouterr().err
