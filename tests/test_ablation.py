"""Critique strategies with plan-dependent scripted roles, the plan judge's parser, the
ablation table. Known answers: p0 is wrong (reward 0); only the leaky critic can fix it."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from critique.judge import PlanJudge
from envs.base import Supervision, TaskView
from envs.tau2 import Tau2Environment
from evrcore.chat import ChatReply
from evrcore.plan import Plan
from runtime import ablate
from runtime.llm.layer import ModelLayer
from testkit.plan_follower import PlanFollowingRoles, suitable_tasks
from tests.conftest import read_records


@pytest.fixture(scope="module")
def ablation_run(tmp_path_factory):
    seen: list[tuple[str, dict]] = []
    original = ModelLayer.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.observers.append(lambda purpose, request: seen.append((purpose, request)))

    ModelLayer.__init__ = init
    try:
        out = tmp_path_factory.mktemp("ablation") / "run"
        tasks = suitable_tasks("airline", limit=3)
        model = PlanFollowingRoles().model_name("plan-follower-ablation")
        code = ablate.main(["--env", "tau2", "--domain", "airline", "--task-ids", ",".join(tasks),
                            "--strategies", "none,anti-leak,leaky", "--model", model,
                            "--out", str(out), "--no-cache"])
    finally:
        ModelLayer.__init__ = original
    return code, out, tasks, read_records(out), seen


def test_strategies_execute_from_the_same_p0(ablation_run):
    code, out, tasks, records, _ = ablation_run
    assert code == 0 and len(tasks) == 3
    assert len(records) == 3 * 4 and all(r["status"] == "ok" for r in records)
    by = {(r["key"]["task_id"], r["key"]["mode"], r["key"]["strategy"]): r for r in records}
    for task in tasks:
        first = by[(task, "plan-first", "")]
        none, guarded, leaky = (by[(task, "refine", s)] for s in ("none", "anti-leak", "leaky"))
        assert first["score"] == 0.0, "the scripted p0 leaves out a write: it must fail"
        assert none["p0"] == guarded["p0"] == leaky["p0"] == first["p0"]
        assert none["p1"] == none["p0"] and none["critique"] is None
        assert none["score"] == first["score"]
        assert leaky["score"] == 1.0, "the revealed reference must fix the plan"
        assert leaky["guard"]["fired"] is False
        assert guarded["guard"]["fired"] is True and guarded["guard"]["action"] == "redacted"
        # What survives the guard is what the agent could know (an ID the user stated, a value
        # its own p0 already wrote), so anti-leak may fix some plans — but never with a value
        # only the reference holds.
        view, supervision = Tau2Environment().load("airline", task)
        view = view.model_copy(update={"opening_request": guarded["opening_request"]})
        p0_text = json.dumps(guarded["p0"])
        leaked = [v for v in supervision.supervision_only_values(view)
                  if v in json.dumps(guarded["p1"]) and v not in p0_text]
        assert not leaked
        assert guarded["score"] <= leaky["score"]


def test_run_json_records_both_modes_that_ran(ablation_run):
    code, out, _, records, _ = ablation_run
    assert code == 0 and {r["key"]["mode"] for r in records} == {"plan-first", "refine"}
    (invocation,) = json.loads((out / "run.json").read_text())["invocations"]
    assert invocation["config"]["mode"] == ["plan-first", "refine"]
    assert invocation["modes"] == ["plan-first", "refine"]


def test_anti_leak_critique_reaches_the_reviser_without_supervision_values(ablation_run):
    _, _, tasks, records, seen = ablation_run
    env = Tau2Environment()
    secrets = set()
    for r in records:
        view, supervision = env.load("airline", r["key"]["task_id"])
        secrets |= supervision.supervision_only_values(view.model_copy(update={"opening_request": r["opening_request"]}))
    revisions = [req for purpose, req in seen if purpose == "reviser"]
    assert len(revisions) == 6  # anti-leak and leaky, three tasks each; none revises nothing
    guarded_revisions = [req for req in revisions if "[redacted]" in req["messages"][-1]["content"]]
    assert len(guarded_revisions) == 3
    for request in guarded_revisions:
        prompt = request["messages"][-1]["content"]
        critique = prompt.split("<critique>")[1].split("</critique>")[0]
        p0 = prompt.split("<current_plan>")[1].split("</current_plan>")[0]  # the model's own words: public
        assert not [s for s in secrets if s in critique and s not in p0]


def test_ablation_table_reports_each_strategy_with_a_paired_ci(ablation_run):
    _, out, _, _, _ = ablation_run
    table = pd.read_csv(out / "ablation.csv")
    rows = table.set_index("strategy")
    assert list(rows.index) == ["none", "anti-leak", "leaky (upper bound)"]
    # no variance in either Δ: the interval is the floor's, never zero-wide
    assert rows.loc["none", "delta"] == 0.0 and rows.loc["none", "ci_low"] < 0 < rows.loc["none", "ci_high"]
    assert rows.loc["leaky (upper bound)", "delta"] == 1.0
    assert 0 < rows.loc["leaky (upper bound)", "ci_low"] < 1.0 < rows.loc["leaky (upper bound)", "ci_high"]
    assert rows.loc["anti-leak", "guard_fired"] == 3 and rows.loc["leaky (upper bound)", "guard_fired"] == 0
    assert rows.loc["anti-leak", "judge_cr_p0"] == 0.0 and rows.loc["anti-leak", "E2_p0"] == 1.0
    md = (out / "ablation.md").read_text()
    assert "leaky (upper bound)" in md and "upper bound, not a method" in md


VIEW = TaskView(env="tau2", domain="d", task_id="t", policy="p", tools=[])
FLAGS = {"E1": False, "E2": False, "E3": False, "E4": False, "E5": True, "E6": False}
GOOD = {"is_correct": False, "grade": 0.8, "errors": FLAGS, "reasoning": "fine"}


class Answers:
    def __init__(self, *answers):
        self.answers = [a if isinstance(a, str) else json.dumps(a) for a in answers]

    def complete(self, messages, *, tools=None, json_schema=None):
        return ChatReply(content=self.answers.pop(0))


def test_judge_accepts_six_named_flags_and_apbs_error_list():
    result = PlanJudge(Answers(GOOD)).judge(VIEW, Supervision(task_id="t"), Plan(plan="x"))
    assert result.judgement.error_list() == [0, 0, 0, 0, 1, 0] and result.attempts == 1
    assert result.judgement.errors.E5 is True and result.judgement.to_apb()["error_list"] == [0, 0, 0, 0, 1, 0]
    legacy = {k: v for k, v in GOOD.items() if k != "errors"} | {"error_list": [0, 0, 0, 0, 1, 0]}
    assert PlanJudge(Answers(legacy)).judge(VIEW, Supervision(task_id="t"), Plan(plan="x")).judgement == result.judgement


@pytest.mark.parametrize("bad", [
    {**GOOD, "grade": 0.7},
    {**GOOD, "errors": {k: v for k, v in FLAGS.items() if k != "E6"}},
    {**GOOD, "errors": {**FLAGS, "E6": 2}},
    {**GOOD, "errors": {**FLAGS, "E7": True}},
    {k: v for k, v in GOOD.items() if k != "reasoning"},
    {**GOOD, "extra": "field"},
    {k: v for k, v in GOOD.items() if k != "errors"} | {"error_list": [0, 0, 0, 0, 1]},
], ids=["grade-off-set", "five-flags", "flag-not-binary", "seventh-flag", "missing-field", "extra-field",
        "five-item-error-list"])
def test_judge_retries_bad_answers_then_records_the_failure(bad):
    ok = PlanJudge(Answers(bad, GOOD)).judge(VIEW, Supervision(task_id="t"), Plan(plan="x"))
    assert ok.judgement is not None and ok.attempts == 2
    failed = PlanJudge(Answers(bad, bad, bad)).judge(VIEW, Supervision(task_id="t"), Plan(plan="x"))
    assert failed.judgement is None and failed.attempts == 3 and failed.failure


@pytest.mark.slow  # 10 tasks × up to 3 waves × 3 arms through τ²
def test_ablate_until_decided_stops_each_strategy_when_its_comparison_is_decided(tmp_path):
    """Known answers: only the leaky critic fixes the wrong p0, so Refine(leaky) − Plan-first is
    decided within the waves and its arm stops; Refine(none) − Plan-first (all ties) is not and
    runs to --max-trials."""
    out = tmp_path / "run"
    tasks = suitable_tasks("airline", limit=10)
    model = PlanFollowingRoles().model_name("plan-follower-ablation-decided")
    assert ablate.main(["--env", "tau2", "--domain", "airline", "--task-ids", ",".join(tasks),
                        "--strategies", "none,leaky", "--model", model, "--out", str(out), "--no-cache",
                        "--until-decided", "--max-trials", "3", "--no-report"]) == 0
    records = read_records(out)
    waves = {}
    for r in records:
        arm = r["key"]["strategy"] or r["key"]["mode"]
        waves[arm] = max(waves.get(arm, 0), r["key"]["trial"] + 1)
    assert waves["leaky"] < 3 and waves["none"] == waves["plan-first"] == 3, waves
    decision = json.loads((out / "summary.json").read_text())["decision"]
    rows = {r["treatment"].split(" ")[0]: r for r in decision["comparisons"]}
    assert rows["refine:leaky"]["decision"] == "effect" and rows["refine:none"]["decision"] == "undecided"
    assert decision["correction"] == "Bonferroni"
