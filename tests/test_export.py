"""``python -m runtime.report RUN --export FORMAT DIR``: a run folder as inspect_ai eval logs (read
back by inspect's own reader: one log per arm, one scored sample per episode, the runtime's
fields as metadata) and as τ-bench results files (their shape here; the release's own code reads
them in tests/test_tau3_export.py); the leaderboard refusal of an arm whose critic saw the
supervision; a malformed folder exports what is whole and names the rest; nothing in the folder
changes; a bad format or folder is one line and exit 2.

The run: scripted roles (``testkit.roles``) replaying τ²'s reference in
Direct, Plan-first and Refine under two strategies, on airline task 0,: anti-leak (its critic saw the supervision)
and self-metric (the tested model critiques itself, without it).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from runtime import report as report_cli

TASKS = ["0"]
STRATEGIES = ["anti-leak", "self-metric"]


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    from envs.tau2 import Tau2Environment
    from runtime.batch.threads import run_in_threads
    from runtime.episode.services import Services, planner_factory
    from runtime.episode.spec import RunSpec
    from runtime.folder.store import RunStore
    from runtime.llm.layer import ModelLayer, ModelSpec
    from testkit.roles import ScriptedRoles

    folder = tmp_path_factory.mktemp("export") / "run"
    spec = ModelSpec(model=ScriptedRoles().model_name("export-roles"))
    layer = ModelLayer({"model": spec, "critic_model": spec, "judge_model": spec, "user_model": spec})
    run_spec = RunSpec(run_id="export", env="tau2", domain="airline", task_ids=TASKS,
                       modes=["direct", "plan-first", "refine"], strategies=STRATEGIES, models=layer.specs,
                       concurrency=2, auditor=False)
    records = run_in_threads(run_spec, Services(Tau2Environment(), layer, planner_factory("llm")), RunStore(folder))
    errors = [r.error for r in records if r.status != "ok"]
    assert len(records) == len(TASKS) * 4 and not errors, errors
    return folder


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def records_of(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines() if line.strip()]


def test_inspect_logs_read_back_with_one_scored_sample_per_episode(run_folder, tmp_path, capsys):
    from inspect_ai.log import read_eval_log

    before = digest(run_folder)
    assert report_cli.main([str(run_folder), "--export", "inspect", str(tmp_path / "logs")]) == 0
    assert digest(run_folder) == before  # the export only read the folder
    captured = capsys.readouterr()
    written = captured.out.split()
    assert sorted(Path(p).name for p in written) == sorted([
        "tau2.airline.direct.scripted-export-roles.eval", "tau2.airline.plan-first.scripted-export-roles.eval",
        "tau2.airline.refine.scripted-export-roles.saw-supervision.eval",
        "tau2.airline.refine-self-metric.scripted-export-roles.eval"])
    records = {r["record_id"]: r for r in records_of(run_folder)}
    seen = set()
    for path in written:
        log = read_eval_log(path)
        assert log.status == "success" and len(log.samples) == len(TASKS)
        for sample in log.samples:
            record = records[sample.metadata["record_id"]]
            seen.add(record["record_id"])
            assert sample.scores["benchmark"].value == record["score"]
            assert str(sample.id) == record["key"]["task_id"] and sample.epoch == record["key"]["trial"] + 1
            assert sample.input == record["opening_request"]
            said = [m for m in sample.messages if m.role == "assistant"]
            assert len(said) == sum(m["role"] == "assistant" for m in record["messages"])
            calls = [c.function for m in said for c in m.tool_calls or []]
            assert calls == [c["function"]["name"] for m in record["messages"] if m["role"] == "assistant"
                             for c in m.get("tool_calls") or []]
            meta = sample.metadata
            assert meta["p0"] == record["p0"] and meta["p1"] == record["p1"]
            assert meta["tokens"]["total"] > 0 and "cost_usd" in meta
            if record["key"]["mode"] == "refine":
                assert set(meta["critique"]) >= {"grade", "rationale", "E1", "E6"}
                assert meta["judge_p1"] is not None
            assert meta["saw_supervision"] == (record["key"]["mode"] == "refine"
                                               and record["key"]["strategy"] == "anti-leak")
            # the transcript: a model event per agent turn, its output that turn; a tool event per result
            turns = [e for e in sample.events if e.event == "model"]
            assert [e.output.message.text for e in turns] == [m.text for m in said]
            assert [c.function for e in turns for c in e.output.message.tool_calls or []] == calls
            tools = [e for e in sample.events if e.event == "tool"]
            assert [e.result for e in tools] == [m["content"] for m in record["messages"] if m["role"] == "tool"]
            assert [e.event for e in sample.events][-1] == "score"
    assert seen == set(records)  # every episode, once
    assert "run.json does not exist" in captured.err  # the folder has none: said, not silent


def test_inspect_samples_sort_by_task_id_as_numbers(run_folder, tmp_path, capsys):
    from inspect_ai.log import read_eval_log

    folder = tmp_path / "relabelled"
    folder.mkdir()
    direct = next(r for r in records_of(run_folder) if r["key"]["mode"] == "direct")
    rows = []
    for task in ("10", "2", "0"):
        row = json.loads(json.dumps(direct))
        row["key"]["task_id"] = task
        row["record_id"] = row["record_id"].replace("|0|", f"|{task}|", 1)
        row.pop("digest")  # a folder written before digests: read as it is
        rows.append(json.dumps(row))
    (folder / "records.jsonl").write_text("\n".join(rows) + "\n")
    assert report_cli.main([str(folder), "--export", "inspect", str(tmp_path / "logs")]) == 0
    (path,) = capsys.readouterr().out.split()
    assert [s.id for s in read_eval_log(path).samples] == [0, 2, 10]


def test_tau3_files_hold_every_episode_in_the_releases_shape(run_folder, tmp_path, capsys):
    before = digest(run_folder)
    assert report_cli.main([str(run_folder), "--export", "tau3", str(tmp_path / "tau3")]) == 0
    assert digest(run_folder) == before
    captured = capsys.readouterr()
    files = captured.out.split()
    assert len(files) == 3  # the arm whose critic saw the supervision is left out, and said so
    assert "left out: tau2/airline/refine: its critic saw the hidden supervision" in captured.err
    assert "--arm refine" in captured.err
    assert all(Path(p).name == "results.json" and Path(p).parent.parent == tmp_path / "tau3" for p in files)
    records = {r["record_id"]: r for r in records_of(run_folder)}
    for path in files:
        data = json.loads(Path(path).read_text())
        assert {t["id"] for t in data["tasks"]} == set(TASKS)
        assert data["info"]["environment_info"]["domain_name"] == "airline"
        assert "Airline" in data["info"]["environment_info"]["policy"]
        from tau2.user.user_simulator import get_global_user_sim_guidelines

        assert data["info"]["user_info"]["global_simulation_guidelines"] == get_global_user_sim_guidelines()
        for sim in data["simulations"]:
            record = records[sim["info"]["runtime"]["record_id"]]
            assert sim["reward_info"]["reward"] == record["score"]
            assert sim["trial"] == record["key"]["trial"] and sim["seed"] == record["seed"]
            assert [m["role"] for m in sim["messages"]] == [m["role"] for m in record["messages"]]
        assert data["exec_validation_runtime"]["saw_supervision"] is False

    assert report_cli.main([str(run_folder), "--export", "tau3", str(tmp_path / "view"), "--arm", "refine"]) == 0
    (path,) = capsys.readouterr().out.split()
    assert Path(path).parent.name == "tau2.airline.refine.scripted-export-roles.saw-supervision"
    data = json.loads(Path(path).read_text())
    assert "saw the hidden supervision" in data["info"]["agent_info"]["implementation"]  # a field τ³ keeps
    assert all(s["info"]["runtime"]["leaderboard"].startswith("not eligible") for s in data["simulations"])


def _as_tau3(run_folder: Path, folder: Path) -> Path:
    """The run's records relabelled as a τ³ run's (without digests: read as pre-digest lines)."""
    folder.mkdir()
    rows = []
    for row in records_of(run_folder):
        row["key"]["env"] = "tau3"
        row["record_id"] = row["record_id"].replace("tau2|", "tau3|", 1)
        row.pop("digest", None)
        rows.append(json.dumps(row))
    (folder / "records.jsonl").write_text("\n".join(rows) + "\n")
    return folder


def test_a_submission_of_an_arm_whose_critic_saw_the_supervision_is_refused_in_one_line(run_folder, tmp_path,
                                                                                      capsys, monkeypatch):
    out = tmp_path / "submit"
    assert report_cli.main([str(run_folder), "--export", "tau3", str(out), "--submission", "refine"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "refused" in err[0] and "forbids any access to reference actions or hidden goals" in err[0]
    assert not out.exists()
    monkeypatch.setenv("EVR_ENVS_HOME", str(tmp_path / "no-envs"))  # τ³'s tasks: named as missing
    monkeypatch.delenv("TAU3_PYTHON", raising=False)
    tau3 = _as_tau3(run_folder, tmp_path / "tau3-run")
    assert report_cli.main([str(tau3), "--export", "tau3", str(out), "--submission", "refine:self-metric"]) == 0
    captured = capsys.readouterr()
    assert [Path(p).parent.name for p in captured.out.split()] == ["tau3.airline.refine-self-metric.scripted-export-roles"]
    assert "1 trial(s); the leaderboard's pass^k needs 4" in captured.err


@pytest.mark.parametrize("arm", ["plan-first", "direct", "refine:self-metric"])
def test_a_submission_of_a_tau2_run_is_refused_in_one_line(run_folder, tmp_path, capsys, arm):
    out = tmp_path / "submit"
    assert report_cli.main([str(run_folder), "--export", "tau3", str(out), "--submission", arm]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: --submission {arm}: refused: the run's tasks are tau2's")
    assert "the leaderboard's tasks are τ³-bench's" in line and "--env tau3" in line
    assert not out.exists()


def test_exporting_into_a_folder_that_holds_files_is_refused_unless_forced(run_folder, tmp_path, capsys):
    out = tmp_path / "out"
    (out / "old").mkdir(parents=True)
    (out / "old" / "results.json").write_text("{}")
    (out / "stale.json").write_text("{}")
    for fmt in ("tau3", "inspect"):
        assert report_cli.main([str(run_folder), "--export", fmt, str(out)]) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert f"--export {fmt} {out}: it already holds 2 file(s)" in line and "--force" in line, line
    assert (out / "stale.json").exists()
    assert report_cli.main([str(run_folder), "--export", "tau3", str(out), "--force"]) == 0
    captured = capsys.readouterr()
    assert f"note: --force: removed 2 old file(s) from {out}" in captured.err
    assert sorted(str(p) for p in out.rglob("*.json")) == sorted(captured.out.split())  # the new files only


def test_a_malformed_folder_exports_what_is_whole_and_names_the_rest(run_folder, tmp_path, capsys):
    from runtime.folder.records import EpisodeKey, EpisodeRecord, StageError

    broken = tmp_path / "broken"
    broken.mkdir()
    lines = (run_folder / "records.jsonl").read_text().splitlines()
    key = EpisodeKey(env="tau2", domain="airline", task_id="0", mode="direct", model="scripted/export-roles", trial=1)
    bad = EpisodeRecord(run_id="x", key=key, record_id=key.id(), status="error", seed=1,
                        error=StageError(stage="execute", type="Timeout", message="no answer"),
                        started_at="2026-01-01T00:00:00+00:00", finished_at="2026-01-01T00:00:01+00:00")
    edited = json.loads(lines[1])
    edited["score"] = 0.5  # fails its digest
    from runtime.folder.integrity import sealed_line

    sealed_bad = sealed_line(bad.model_dump_json(), 1)  # as the runtime writes it: with its digest
    (broken / "records.jsonl").write_text("\n".join([lines[0], json.dumps(edited), "{not json", sealed_bad,
                                                     lines[2][:40]]) + "\n")
    (broken / "run.json").write_text("[]")
    before = digest(broken)
    assert report_cli.main([str(broken), "--export", "tau3", str(tmp_path / "out")]) == 0
    assert digest(broken) == before
    captured = capsys.readouterr()
    left = [line for line in captured.err.splitlines() if line.startswith("left out: ")]
    assert any("unreadable line(s)" in line and re.search(r"lines 3\b.*\b5\b", line) for line in left), left
    assert any("fail their integrity check" in line for line in left), left
    assert any("is not a run.json" in line for line in left), left
    assert any("1 errored episode(s)" in line and "task 0 trial 1" in line for line in left), left
    assert len(captured.out.split()) == 1  # the one whole record's arm
    data = json.loads(Path(captured.out.split()[0]).read_text())
    assert len(data["simulations"]) == 1
    assert report_cli.main([str(broken), "--export", "inspect", str(tmp_path / "logs")]) == 0  # the errored one too
    from inspect_ai.log import read_eval_log

    errors = [s for p in capsys.readouterr().out.split() for s in read_eval_log(p).samples if s.error]
    assert len(errors) == 1 and "no answer" in errors[0].error.message


def test_nothing_whole_exits_one(tmp_path, capsys):
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "records.jsonl").write_text("{torn\n")
    assert report_cli.main([str(folder), "--export", "tau3", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "left out: 1 unreadable line(s)" in err and "no readable records to export" in err


@pytest.mark.parametrize("argv, says", [
    (["--export", "csv", "{out}"], "--export 'csv' is not a format; accepted: tau3, inspect"),
    (["--export", "tau3", "{file}"], "it is a file; give a folder"),
    (["--export", "tau3", "{run}/exported"], "it is inside the run folder"),
    (["--export", "tau3", "{out}/a/b"], "does not exist"),
    (["--export", "inspect", "{out}", "--submission", "plan-first"], "--submission goes with --export tau3"),
    (["--submission", "plan-first"], "--submission goes with --export FORMAT DIR"),
    (["--arm", "plan-first"], "--arm goes with --export FORMAT DIR"),
    (["--force"], "--force goes with --export FORMAT DIR or --regrade-out DIR"),
])
def test_a_bad_format_or_folder_is_one_line_and_exit_2(run_folder, tmp_path, capsys, argv, says):
    (tmp_path / "file").write_text("")
    argv = [a.format(out=tmp_path / "out", file=tmp_path / "file", run=run_folder) for a in argv]
    before = digest(run_folder)
    assert report_cli.main([str(run_folder), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
    assert digest(run_folder) == before and not (tmp_path / "out").exists()


def test_an_unknown_arm_is_named_with_the_runs_arms(run_folder, tmp_path, capsys):
    assert report_cli.main([str(run_folder), "--export", "tau3", str(tmp_path / "o"), "--submission", "plan"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: --submission 'plan': the run has no such arm; its arms: direct, plan-first, "
                   "refine, refine:self-metric")


def test_which_arms_saw_the_supervision_follows_the_strategy_settings():
    from critique.strategies import STRATEGIES
    from runtime.reports.export_common import saw_supervision

    for name, strategy in STRATEGIES.items():
        assert saw_supervision("refine", name) == bool(strategy.settings and strategy.settings.sees_supervision)
    assert saw_supervision("refine", "anti-leak") and saw_supervision("refine", "leaky")
    assert not saw_supervision("refine", "self-metric") and not saw_supervision("refine", "none")
    assert not saw_supervision("plan-first", "") and not saw_supervision("direct", "")
    assert saw_supervision("refine", "a-strategy-from-elsewhere")  # unknown: not vouched for


def test_a_tau3_folder_without_tau3_here_exports_its_conversations_and_names_the_tasks(run_folder, tmp_path,
                                                                                      monkeypatch, capsys):
    monkeypatch.setenv("EVR_ENVS_HOME", str(tmp_path / "no-envs"))
    monkeypatch.delenv("TAU3_PYTHON", raising=False)
    folder = tmp_path / "tau3-run"
    folder.mkdir()
    rows = []
    for row in records_of(run_folder):
        if row["key"]["mode"] != "direct":
            continue
        row["key"]["env"] = "tau3"
        row["record_id"] = row["record_id"].replace("tau2|", "tau3|", 1)
        row.pop("digest", None)  # a record written before digests
        rows.append(json.dumps(row))
    (folder / "records.jsonl").write_text("\n".join(rows) + "\n")
    assert report_cli.main([str(folder), "--export", "tau3", str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    assert "left out: tau3/airline: the task definitions (τ³ is not set up" in captured.err
    data = json.loads(Path(captured.out.split()[0]).read_text())
    assert data["tasks"] == [] and len(data["simulations"]) == len(TASKS)
