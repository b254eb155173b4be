"""``--export tau3`` read by the release's own code (tau2-bench 1.0.1, in its venv, as a
subprocess): ``tau2 evaluate-trajs`` recomputes every reward equal to the records, of a τ² run
and of a τ³ run; with ``--fresh-tasks`` it flips exactly what ``--regrade tau3`` flips, and
``--regrade-out DIR`` writes those same rewards; ``tau2 submit prepare`` accepts a Plan-first
export of every airline task with its verification, and the runtime refuses a Refine
(anti-leak) submission in one line. Needs τ³ set up (``TAU3_SOURCE``); scripts/ci-tau3.sh runs
this file with ``EVR_REQUIRE_TAU3=1``.

The runs are scripted: gold replays of the reference (and sabotaged ones, which drop the last
write and score 0), through the runtime's executor and the environment's own evaluator.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from runtime import report as report_cli
from tests.conftest import tau3_record

TAU2_TASKS = ["0", "7", "23", "27"]  # 0 unchanged in τ³; 7, 23, 27 changed (tests/test_tau3_regrade.py)


def tau2_cli(*args: str, stdin: str | None = None, cwd: Path) -> subprocess.CompletedProcess:
    """The release's own ``tau2`` command, in its venv, on its data folder."""
    record = tau3_record()
    exe = str(Path(record["python"]).with_name("tau2"))
    env = {k: v for k, v in os.environ.items() if not any(s in k.upper() for s in ("API_KEY", "TOKEN", "SECRET"))}
    env["TAU2_DATA_DIR"] = record["data_dir"]
    return subprocess.run([exe, *args], input=stdin, capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=900)


def export(folder: Path, out: Path, *extra: str) -> list[Path]:
    out.parent.mkdir(parents=True, exist_ok=True)
    code = report_cli.main([str(folder), "--export", "tau3", str(out), *extra])
    assert code == 0
    return sorted(out.glob("*/results.json"))


def tau3_python(code: str, *args: str) -> subprocess.CompletedProcess:
    """``code`` run by the release's own interpreter (its venv), on its data folder."""
    record = tau3_record()
    env = {k: v for k, v in os.environ.items() if not any(s in k.upper() for s in ("API_KEY", "TOKEN", "SECRET"))}
    env["TAU2_DATA_DIR"] = record["data_dir"]
    return subprocess.run([record["python"], "-c", code, *args], capture_output=True, text=True, env=env, timeout=300)


def rewards_after(files: list[Path], work: Path, *flags: str) -> dict[str, float]:
    """record id → the reward ``tau2 evaluate-trajs [flags] -o`` recomputed, one arm's
    ``results.json`` at a time (the release names its output after the input file's name)."""
    got = {}
    for file in files:
        out = work / ("fresh" if flags else "same") / file.parent.name
        proc = tau2_cli("evaluate-trajs", str(file), "-o", str(out), *flags, cwd=work)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        for sim in json.loads((out / "updated_results.json").read_text())["simulations"]:
            got[sim["info"]["runtime"]["record_id"]] = sim["reward_info"]["reward"]
    return got


def records(folder: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines() if line.strip()]
    return {r["record_id"]: r for r in rows}


def digest(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def tau2_run(tmp_path_factory) -> Path:
    """A τ² run (the wheel's airline tasks): gold and sabotaged replays, two tested models."""
    tau3_record()
    from tests.test_gold_replay import _replay
    from testkit.gold import GoldReplay

    base = tmp_path_factory.mktemp("tau2-export")
    _replay(base, "airline", TAU2_TASKS, GoldReplay(), "gold")
    _replay(base, "airline", TAU2_TASKS, GoldReplay(drop_last_write=True), "sabotage")
    folder = base / "run"
    folder.mkdir()
    (folder / "records.jsonl").write_bytes((base / "gold" / "records.jsonl").read_bytes()
                                           + (base / "sabotage" / "records.jsonl").read_bytes())
    return folder


@pytest.mark.slow
def test_a_tau2_export_is_rescored_equal_and_its_fresh_flips_are_the_regrades(tau2_run, tmp_path, capsys):
    before = digest(tau2_run)
    files = export(tau2_run, tmp_path / "tau3")
    assert len(files) == 2  # one per tested model (gold, sabotage), one arm: direct
    mine = records(tau2_run)
    scores = {rid: r["score"] for rid, r in mine.items()}
    assert set(scores.values()) == {0.0, 1.0}
    assert rewards_after(files, tmp_path) == scores  # the release's evaluator, the run's tasks

    fresh = rewards_after(files, tmp_path, "--fresh-tasks")
    assert set(fresh) == set(scores)
    release_flips = {rid for rid in scores if (scores[rid] >= 1.0) != (fresh[rid] >= 1.0)}
    out = tmp_path / "regraded.json"
    capsys.readouterr()
    assert report_cli.main([str(tau2_run), "--regrade", "tau3", "--regrade-out", str(out)]) == 0
    ours = {(f["task_id"], f["tau2"], f["tau3"]) for f in json.loads(out.read_text())["flips"]}
    assert release_flips, "the gold replay flips on tasks the release changed"
    assert {(mine[rid]["key"]["task_id"], scores[rid], fresh[rid]) for rid in release_flips} == ours

    assert report_cli.main([str(tau2_run), "--regrade", "tau3", "--regrade-out", str(tmp_path / "regraded")]) == 0
    regraded = {}
    for path in (tmp_path / "regraded").glob("*.tau3-regraded/results.json"):
        for sim in json.loads(path.read_text())["simulations"]:
            regraded[sim["info"]["runtime"]["record_id"]] = sim["reward_info"]["reward"]
    assert regraded == fresh  # --regrade-out DIR writes what evaluate-trajs --fresh-tasks writes
    assert digest(tau2_run) == before  # nothing in the run folder changed


@pytest.mark.slow
def test_a_tau3_export_is_rescored_equal_by_the_release(tau3_env, tmp_path):
    from tests.test_tau3 import replay
    from testkit.tau3_gold import reference

    facts = reference(["airline"], ["0", "7", "23", "35"])
    replay(tmp_path, tau3_env, "airline", facts, name="gold")
    replay(tmp_path, tau3_env, "airline", {"airline": {t: facts["airline"][t] for t in ("7", "23")}},
           sabotage=True, name="sabotage")
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "records.jsonl").write_bytes((tmp_path / "gold" / "records.jsonl").read_bytes()
                                           + (tmp_path / "sabotage" / "records.jsonl").read_bytes())
    files = export(folder, tmp_path / "tau3")
    scores = {rid: r["score"] for rid, r in records(folder).items()}
    assert set(scores.values()) == {0.0, 1.0}
    assert rewards_after(files, tmp_path) == scores


@pytest.mark.slow
def test_submit_prepare_accepts_a_plan_first_export_and_the_runtime_refuses_refine(tau3_env, tmp_path, capsys):
    """Every airline task of the base split, Plan-first, one trial (the release's check asks that
    every task has ``num_trials`` simulations; the leaderboard's pass^k wants four); Refine on
    two of them, so the folder has an arm whose critic saw the supervision."""
    from runtime.batch.threads import run_in_threads
    from runtime.episode.services import Services, planner_factory
    from runtime.episode.spec import RunSpec
    from runtime.folder.store import RunStore
    from runtime.llm.layer import ModelLayer, ModelSpec
    from testkit.roles import ScriptedRoles
    from testkit.tau3_gold import Tau3GoldReplay, reference

    facts = reference(["airline"])
    spec = ModelSpec(model=ScriptedRoles(act=Tau3GoldReplay(facts)).model_name("submit-roles"))
    layer = ModelLayer({"model": spec, "critic_model": spec, "judge_model": spec, "user_model": spec})
    folder = tmp_path / "run"
    ids = list(facts["airline"])
    for modes, tasks in ((["plan-first"], ids), (["refine"], ids[:2])):
        run_spec = RunSpec(run_id="submit", env="tau3", domain="airline", task_ids=tasks, modes=modes,
                           models=layer.specs, concurrency=2, auditor=False)
        done = run_in_threads(run_spec, Services(tau3_env, layer, planner_factory("llm")), RunStore(folder))
        assert all(r.status == "ok" for r in done), [r.error for r in done if r.status != "ok"][:1]

    out = tmp_path / "refused"
    capsys.readouterr()
    assert report_cli.main([str(folder), "--export", "tau3", str(out), "--submission", "refine"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "forbids any access to reference actions or hidden goals" in err[0]
    assert not out.exists()

    # a plain export leaves the arm whose critic saw the supervision out; named, it says so inside
    plain = export(folder, tmp_path / "plain")
    assert [f.parent.name for f in plain] == ["tau3.airline.plan-first.scripted-submit-roles"]
    viewed = export(folder, tmp_path / "viewed", "--arm", "refine")
    kept = tau3_python("import sys; from tau2.data_model.simulation import Results; r = Results.load(sys.argv[1]); "
                       "print(r.info.agent_info.implementation); print(r.simulations[0].info['runtime']['leaderboard'])",
                       str(viewed[0]))
    assert kept.returncode == 0, kept.stderr[-2000:]
    assert "its critic saw the hidden supervision: for viewing only, not for the leaderboard" in kept.stdout
    assert "not eligible" in kept.stdout

    # τ³'s viewer lists the export's files by folder (``tau2 view --dir``)
    listed = tau2_cli("view", "--dir", str(tmp_path / "plain"), stdin="1\n1\n6\n", cwd=tmp_path)
    assert "No simulation files found" not in listed.stdout, listed.stdout[-2000:]
    assert "tau3.airline.plan-first.scripted-submit-roles" in listed.stdout, listed.stdout[-2000:]
    guidelines = tau3_python("from tau2.user.user_simulator import get_global_user_sim_guidelines as g; print(g(), end='')")
    data = json.loads(plain[0].read_text())
    assert data["info"]["user_info"]["global_simulation_guidelines"] == guidelines.stdout  # as τ³ writes it

    files = export(folder, tmp_path / "submission", "--submission", "plan-first")
    assert [f.parent.name for f in files] == ["tau3.airline.plan-first.scripted-submit-roles"]
    answers = "\n".join(["scripted-planner", "user-simulator", "Example Org", "Example Org", "team@example.com",
                         "", "", "n", "custom", "", "", "", "plan-first planner", "y", "n",
                         "the agent's system prompt holds its plan", "n", "", ""]) + "\n"
    proc = tau2_cli("submit", "prepare", str(tmp_path / "submission"), "-o", str(tmp_path / "prepared"), stdin=answers,
                    cwd=tmp_path)
    text = proc.stdout + proc.stderr
    assert "✅ Tasks validation" in text and "✅ Trial count validation" in text, text[-3000:]
    assert "Submission prepared successfully" in text, text[-3000:]
    submitted = next((tmp_path / "prepared").glob("*/submission.json"))
    data = json.loads(submitted.read_text())
    assert data["submission_type"] == "custom"
    mean = sum(r["score"] for r in records(folder).values() if r["key"]["mode"] == "plan-first") / len(ids)
    assert data["results"]["airline"]["pass_1"] == pytest.approx(100 * mean)
