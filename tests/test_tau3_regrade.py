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


def test_each_refine_strategy_is_its_own_row_delta_and_flips(tmp_path, capsys):
    """A τ² run of Plan-first and Refine under two strategies (scripted roles replaying the wheel's
    reference) on a task τ³ changed (7) and one it did not (0): the re-grade keeps the strategies
    apart, in the table and in the JSON, and says no episode has NL assertions (airline has none)."""
    tau3_record()
    from envs.tau2 import Tau2Environment
    from runtime.batch.threads import run_in_threads
    from runtime.episode.services import Services, planner_factory
    from runtime.episode.spec import RunSpec
    from runtime.folder.store import RunStore
    from runtime.llm.layer import ModelLayer, ModelSpec
    from testkit.roles import ScriptedRoles

    folder = tmp_path / "run"
    spec = ModelSpec(model=ScriptedRoles().model_name("regrade-roles"))
    layer = ModelLayer({"model": spec, "critic_model": spec, "judge_model": spec, "user_model": spec})
    run_spec = RunSpec(run_id="regrade-arms", env="tau2", domain="airline", task_ids=["0", "7"],
                       modes=["plan-first", "refine"], strategies=["anti-leak", "self-metric"], models=layer.specs,
                       concurrency=2, auditor=False)
    records = run_in_threads(run_spec, Services(Tau2Environment(), layer, planner_factory("llm")), RunStore(folder))
    assert all(r.status == "ok" and r.score == 1.0 for r in records), [r.error for r in records][:1]
    out = tmp_path / "regraded.json"
    capsys.readouterr()
    assert report_cli.main([str(folder), "--regrade", "tau3", "--regrade-out", str(out)]) == 0
    text = capsys.readouterr().out
    result = json.loads(out.read_text())
    arms = {(f["task_id"], f["mode"], f["strategy"], f["arm"]) for f in result["flips"]}
    assert arms == {("7", "plan-first", "", "plan-first"), ("7", "refine", "anti-leak", "refine"),
                    ("7", "refine", "self-metric", "refine:self-metric")}, arms
    for name in ("tau2", "tau3"):
        assert set(result["deltas"][name]["deltas"]) == {"refine", "refine:self-metric"}
        assert set(result["deltas"][name]["means"]) == {"plan-first", "refine", "refine:self-metric"}
    assert "| Δ Refine − Plan-first |" in text and "| Δ refine:self-metric − Plan-first |" in text
    assert "| airline | 7 | refine:self-metric | 0 | 1.000 | 0.000 |" in text
    assert "NL assertions" not in text  # airline's tasks have none: nothing is said to be ungraded


def test_the_nl_assertion_count_is_the_episodes_whose_task_has_any(tmp_path, capsys):
    """Retail's reward includes NL assertions on nearly every τ³ task, but few tasks have any (21
    has; 0 has none): only task 21's episode is counted ungraded, and the line that says so
    also says what `tau2 evaluate-trajs --fresh-tasks` will need (a judge key) before it runs."""
    tau3_record()
    _replay(tmp_path, "retail", ["0", "21"], GoldReplay(), "regrade-retail")
    capsys.readouterr()
    assert report_cli.main([str(tmp_path / "regrade-retail"), "--regrade", "tau3"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "; 1 episode(s) whose task has NL assertions left them ungraded (no LLM judge)" in text, text[:600]
    assert "needs that judge's key (OPENAI_API_KEY) and exits 1 without it" in text
