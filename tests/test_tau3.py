"""τ³-bench (tau2-bench 1.0.1) as ``--env tau3``: set-up refusals, retrieval choices, and gold
replays through the runtime's executor on the release's own orchestrator and evaluator.

The replays need the release set up (``TAU3_SOURCE``, see tests/conftest.py); without it they
skip with the set-up line. Airline tasks are graded on DB + COMMUNICATE; retail's reward also
includes NL assertions, which an LLM judge grades (the env server cannot call one), so retail
replays check the graded part (DB) and that NL_ASSERTION is reported as ungraded.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from envs.base import UnknownTaskError
from tests.conftest import tau3_record

REPO = Path(__file__).resolve().parents[1]
CHANGED_AIRLINE = ["2", "7", "9", "23", "27", "29", "33", "35", "37", "38", "44"]
"""Airline tasks whose reference actions the release changed (its CHANGELOG, 'Airline task fixes')."""


def _envs_cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(REPO), "EVR_ENVS_HOME": str(home), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "runtime.envs", *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=120)


# ---- without the release ----------------------------------------------------------------------

def test_setup_refuses_a_bad_source_or_interpreter_in_one_line(tmp_path):
    missing = _envs_cli("setup", "tau3", "--source", str(tmp_path / "nowhere"), home=tmp_path / "h")
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"error: τ³ source {tmp_path / 'nowhere'} does not exist"
    (tmp_path / "empty").mkdir()
    empty = _envs_cli("setup", "tau3", "--source", str(tmp_path / "empty"), home=tmp_path / "h")
    assert empty.returncode == 2 and "is not a tau2-bench checkout" in empty.stderr
    assert len(empty.stderr.strip().splitlines()) == 1
    fake = tmp_path / "tau2-bench"
    (fake / "src" / "tau2").mkdir(parents=True)
    (fake / "src" / "tau2" / "__init__.py").write_text("")
    (fake / "pyproject.toml").write_text("")
    (fake / "data" / "tau2" / "domains").mkdir(parents=True)
    old = _envs_cli("setup", "tau3", "--source", str(fake), "--python", sys.executable, home=tmp_path / "h")
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert old.returncode == 2, old.stderr
    assert old.stderr.strip() == f"error: --python {sys.executable} is Python {version}; τ³ needs 3.12"
    assert not (tmp_path / "h" / "tau3" / "venv").exists()


def test_the_interpreter_is_found_without_a_machine_path(monkeypatch, tmp_path):
    """A ``python3.12`` on PATH that does not run (a pyenv shim for a version not selected) is
    passed over; an interpreter that does is taken."""
    from envs.tau3 import setup

    shim = tmp_path / "bin" / "python3.12"
    shim.parent.mkdir()
    shim.write_text("#!/bin/sh\necho 'pyenv: python3.12: command not found' >&2; exit 127\n")
    shim.chmod(0o755)
    good = tmp_path / "bin" / "python3"
    good.write_text("#!/bin/sh\necho 3 12\n")
    good.chmod(0o755)
    monkeypatch.setenv("PATH", str(shim.parent))
    monkeypatch.setattr(setup, "_managed", lambda: [])
    assert setup.find_python() == str(good)
    good.write_text("#!/bin/sh\necho 3 11\n")
    with pytest.raises(setup.SetupError, match=r"^no Python 3.12 found \(tried python3.12, python3 on PATH"):
        setup.find_python()


def test_without_setup_tau3_says_how_to_set_it_up(tmp_path, monkeypatch, validate):
    from envs import get_environment
    from envs.server_client import EnvUnavailableError
    from testkit.scripted import register_script, text

    monkeypatch.setenv("EVR_ENVS_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TAU3_PYTHON", raising=False)
    with pytest.raises(EnvUnavailableError, match=r"τ³ is not set up .* `python -m runtime.envs setup tau3 --source"):
        get_environment("tau3")
    model = register_script("tau3-unset", lambda request, context: text("hi"))
    code, records = validate("--env", "tau3", "--model", model, "--tasks", "1")
    assert code == 2 and records == []


@pytest.mark.parametrize("name, says", [
    ("openai_embeddings", "needs an embeddings endpoint"),
    ("alltools", "needs an embeddings endpoint"),
    ("bm25_reranker", "needs a reranker model"),
    ("terminal_use", "sandbox-runtime"),
    ("bm26", "unknown --retrieval 'bm26'"),
])
def test_retrieval_configurations_that_cannot_run_here_are_refused_in_one_line(name, says, validate, capsys):
    from testkit.scripted import register_script, text

    model = register_script(f"tau3-retrieval-{name}", lambda request, context: text("hi"))
    code, records = validate("--env", "tau3", "--domain", "banking_knowledge", "--retrieval", name,
                             "--model", model, "--tasks", "1")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and records == []
    assert says in err[-1] and "offline configurations: bm25, bm25_grep, full_kb, golden_retrieval" in err[-1]


def test_retrieval_belongs_to_tau3_banking(validate, capsys):
    from envs.tau3.retrieval import check

    assert check(None, "banking_knowledge") == "bm25" and check(None, "airline") is None
    assert check("golden_retrieval", "banking_knowledge") == "golden_retrieval"
    with pytest.raises(UnknownTaskError, match="apply to --domain banking_knowledge only"):
        check("bm25", "airline")
    from testkit.scripted import register_script, text

    model = register_script("tau2-retrieval", lambda request, context: text("hi"))
    code, _ = validate("--env", "tau2", "--domain", "mock", "--retrieval", "bm25", "--model", model)
    assert code == 2 and "retrieval configurations apply to --domain banking_knowledge only" in capsys.readouterr().err


def test_the_current_release_has_a_config_and_table3_keeps_the_papers_tau2():
    from runtime import validate as cli

    args = cli.parser().parse_args(["--config", str(REPO / "configs" / "tau3.yaml"),
                                    "--domain", "banking_knowledge", "--retrieval", "golden_retrieval"])
    config = cli.load_config(args)
    assert config.env == "tau3" and config.modes == ["direct", "plan-first", "refine"]
    assert config.domain == "banking_knowledge" and config.retrieval == "golden_retrieval"
    table3 = (REPO / "configs" / "table3.yaml").read_text(encoding="utf-8")
    assert "env: tau2" in table3 and "env: tau3" not in table3


# ---- with the release: gold and sabotaged replays --------------------------------------------------

def replay(tmp_path: Path, env, domain: str, facts: dict, *, sabotage: bool = False, actions=None,
           name: str = "tau3-gold") -> dict[str, object]:
    """Run ``direct`` with the gold script on ``facts``' tasks; their records by task id."""
    from runtime.batch.threads import run_in_threads
    from runtime.episode.services import Services
    from runtime.episode.spec import RunSpec
    from runtime.folder.store import RunStore
    from runtime.llm.layer import ModelLayer, ModelSpec
    from testkit.tau3_gold import Tau3GoldReplay

    if actions:
        facts = {domain: {t: {**f, "actions": actions[t]} for t, f in facts[domain].items()}}
    gold = Tau3GoldReplay(facts, drop_last_write=sabotage)
    spec = ModelSpec(model=gold.model_name(name))
    layer = ModelLayer({"model": spec, "critic_model": spec, "judge_model": spec, "user_model": spec})
    ids = list(facts[domain])
    run_spec = RunSpec(run_id=name, env="tau3", domain=domain, task_ids=ids, modes=["direct"],
                       models=layer.specs, planner="none", concurrency=2)
    records = run_in_threads(run_spec, Services(env, layer, lambda m: None), RunStore(tmp_path / name))
    errors = [r for r in records if r.status == "error"]
    assert not errors, errors[0].error
    return {r.key.task_id: r for r in records}


def scores(records: dict) -> dict[str, float]:
    return {t: r.score for t, r in records.items()}


def test_gold_replay_sample_scores_one_and_sabotage_zero(tmp_path, tau3_env):
    from testkit.tau3_gold import reference

    facts = reference(["airline"], ["0", "7", "23", "35"])
    assert scores(replay(tmp_path, tau3_env, "airline", facts)) == {t: 1.0 for t in facts["airline"]}
    broken = {"airline": {t: f for t, f in facts["airline"].items() if f["last_write"] is not None}}
    assert set(broken["airline"]) == {"7", "23", "35"}
    assert scores(replay(tmp_path, tau3_env, "airline", broken, sabotage=True, name="tau3-sabotage")) == \
        {t: 0.0 for t in broken["airline"]}


def test_retail_replays_grade_the_db_and_name_nl_assertions_ungraded(tmp_path, tau3_env):
    from testkit.tau3_gold import reference

    facts = reference(["retail"], ["0", "12", "21"])
    records = replay(tmp_path, tau3_env, "retail", facts, name="tau3-retail")
    for record in records.values():
        assert record.score == 1.0
        assert record.breakdown["DB"] == 1.0
    # only a task that has NL assertions leaves them ungraded (21 has; 0 and 12 have none)
    assert {t for t, r in records.items() if r.score_info.get("ungraded") == ["NL_ASSERTION"]} == {"21"}
    assert records["21"].breakdown["NL_ASSERTION"] is None
    assert facts["retail"]["0"]["last_write"] is not None and facts["retail"]["12"]["last_write"] is None
    broken = {"retail": {"0": facts["retail"]["0"]}}
    assert scores(replay(tmp_path, tau3_env, "retail", broken, sabotage=True, name="tau3-retail-sab")) == {"0": 0.0}


def test_banking_gold_replay_sample_with_golden_retrieval(tmp_path, tau3_golden_env):
    from testkit.tau3_gold import reference

    facts = reference(["banking_knowledge"], ["task_001", "task_046"], retrieval="golden_retrieval")
    assert scores(replay(tmp_path, tau3_golden_env, "banking_knowledge", facts, name="tau3-bank")) == \
        {"task_001": 1.0, "task_046": 1.0}
    view, supervision = tau3_golden_env.load("banking_knowledge", "task_001")
    assert "doc_credit_cards_gold_rewards_card_001" in supervision.render()
    assert "Gold Rewards Card" in view.policy  # golden_retrieval: the required documents in the policy


def test_the_run_records_the_task_set_and_retrieval(tau3_golden_env):
    from runtime.compose.fingerprint import settings, task_set_of

    task_set = task_set_of(tau3_golden_env, "banking_knowledge")
    assert task_set["package"] == "tau2" and task_set["version"] == "1.0.1" and task_set["tasks"] == 97
    assert len(task_set["tasks_sha256"]) == 16
    assert tau3_golden_env.retrieval_for("banking_knowledge") == "golden_retrieval"
    assert tau3_golden_env.retrieval_for("airline") is None
    assert settings  # imported for the fingerprint test in test_tau3_task_sets.py


@pytest.mark.slow
@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_gold_replay_every_task_with_actions_scores_one(tmp_path, tau3_env, domain):
    from testkit.tau3_gold import reference

    facts = reference([domain])
    playable = {t: f for t, f in facts[domain].items() if f["actions"]}
    records = replay(tmp_path, tau3_env, domain, {domain: playable}, name=f"tau3-all-{domain}")
    failing = {t: r.score for t, r in records.items() if r.score != 1.0}
    assert not failing, f"{len(failing)} of {len(playable)} {domain} tasks did not score 1.0: {failing}"
    broken = {t: f for t, f in playable.items() if f["last_write"] is not None}
    records = replay(tmp_path, tau3_env, domain, {domain: broken}, sabotage=True, name=f"tau3-sab-{domain}")
    kept = {t: r.score for t, r in records.items() if r.score != 0.0}
    assert not kept, f"{len(kept)} of {len(broken)} sabotaged {domain} replays did not score 0.0: {kept}"


@pytest.mark.slow
def test_banking_gold_replay_scores_one_on_at_least_95_of_97(tmp_path, tau3_golden_env):
    from testkit.tau3_gold import reference

    facts = reference(["banking_knowledge"], retrieval="golden_retrieval")
    assert len(facts["banking_knowledge"]) == 97
    records = replay(tmp_path, tau3_golden_env, "banking_knowledge", facts, name="tau3-bank-all")
    failing = {t: r.score for t, r in records.items() if r.score != 1.0}
    print(f"banking golden_retrieval gold replay: {97 - len(failing)} of 97 score 1.0; not: {failing}")
    assert len(failing) <= 2, f"{len(failing)} of 97 banking tasks did not score 1.0: {failing}"


@pytest.mark.slow
def test_changed_airline_tasks_score_one_with_the_release_actions_and_the_table_holds(tmp_path, tau3_env):
    """τ³'s own reference actions score 1.0 on the 11 changed tasks; the wheel's (τ² 26.3) score
    0.0 exactly on the tasks docs/tau3.md's table names."""
    from envs.tau2 import tasks as tau2_tasks
    from testkit.tau3_gold import reference

    facts = reference(["airline"], CHANGED_AIRLINE, sabotage=False)
    assert scores(replay(tmp_path, tau3_env, "airline", facts, name="tau3-changed")) == \
        {t: 1.0 for t in CHANGED_AIRLINE}
    wheel = {t: [{"name": a.name, "arguments": a.arguments, "requestor": a.requestor}
                 for a in tau2_tasks.task("airline", t).evaluation_criteria.actions or []]
             for t in CHANGED_AIRLINE}
    with_wheel = scores(replay(tmp_path, tau3_env, "airline", facts, actions=wheel, name="tau3-wheel"))
    print(f"changed airline tasks, the wheel's actions on τ³: {dict(sorted(with_wheel.items(), key=lambda kv: int(kv[0])))}")
    assert {t for t, s in with_wheel.items() if s == 0.0} == WHEEL_ZERO, with_wheel


WHEEL_ZERO: set[str] = set(CHANGED_AIRLINE)
"""Changed airline tasks on which the wheel's reference actions score 0.0 on τ³ (docs/tau3.md):
all eleven, each on the DB component (measured; the table is in docs/tau3.md)."""


def test_what_the_agent_can_retrieve_is_public_for_the_guard_and_nothing_else():
    """τ³ banking under a search configuration: a fee the knowledge base states may pass in a
    critique (the agent can look it up); the same fee is removed when it is not retrievable."""
    from critique.guard.leak_guard import LeakGuard
    from envs.base import ReferenceAction, Supervision, TaskView

    base = dict(env="tau3", domain="banking_knowledge", task_id="t", policy="Help customers choose cards.",
                tools=[{"type": "function", "function": {"name": "KB_search", "parameters": {}}}],
                opening_request="Which card suits me?")
    supervision = Supervision(task_id="t", reference_actions=[ReferenceAction(
        name="apply_for_credit_card", arguments={"card_type": "Gold Rewards Card", "annual_fee": 395})])
    text = "The plan ignores the 395 dollar annual fee the card carries (E3)."
    hidden = LeakGuard(TaskView(**base), supervision).scan(text)
    assert [f.text for f in hidden if f.kind == "value"] == ["395"]
    public = TaskView(**base, retrievable="doc_gold_001 Gold Rewards Card: annual fee $395, 3% cash back.")
    assert LeakGuard(public, supervision).scan(text) == []
    assert "395" not in public.text()  # retrievable text is the guard's, never a prompt's


def test_a_second_setup_of_the_same_source_keeps_the_venv():
    import os

    from envs.tau3 import setup

    record = tau3_record()
    if os.environ.get(setup.PYTHON_VAR) or not record.get("fingerprint"):
        pytest.skip("the τ³ venv was not made by `runtime.envs setup` with a fingerprint")
    lines: list[str] = []
    started = __import__("time").monotonic()
    again = setup.setup(os.environ["TAU3_SOURCE"], python=record["base_python"],
                        home=Path(record["venv"]).parent, say=lines.append)
    assert again["reused"] is True, lines
    assert again["python"] == record["python"] and again["fingerprint"] == record["fingerprint"]
    assert again["task_sets"]["airline"]["tasks"] == 50 and again["task_sets"]["banking_knowledge"]["tasks"] == 97
    assert not any("installing" in line for line in lines), lines
    assert __import__("time").monotonic() - started < 120


@pytest.mark.parametrize("name, says", [("openai_embeddings", "needs an embeddings endpoint"),
                                        ("bm26", "unknown --retrieval 'bm26'")])
def test_a_dry_run_checks_the_retrieval_configuration_too(name, says, capsys, tmp_path, monkeypatch):
    """A dry run prices only a run that would start: a configuration the run would refuse is
    refused here too, in the same line, before anything else is looked at (here τ³ is not even
    set up, which would be the next refusal)."""
    from runtime import validate as cli

    monkeypatch.setenv("EVR_ENVS_HOME", str(tmp_path / "home"))
    got = cli.main(["--env", "tau3", "--domain", "banking_knowledge", "--retrieval", name,
                    "--model", "openai/gpt-4o", "--tasks", "3", "--dry-run"])
    out, err = capsys.readouterr()
    assert got == 2 and "dry run:" not in out
    assert says in err and "not set up" not in err
