"""APB fidelity: APB's own plan format through ``Plan`` and through ``--planner`` in all three
modes; E1–E6 and the is_correct rule as APB states them; the revise prompt naming who
critiqued; injected model failures counted per arm; the APB-shaped export read like APB's
scorer reads it; ``runtime.report --help``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from critique.critic import anti_leak_critic
from critique.judge import JudgeResult, PlanJudge
from critique.strategies import STRATEGIES
from envs.base import Supervision, TaskView
from evrcore.chat import ChatReply
from evrcore.critique import ERROR_CODES, Critique
from evrcore.plan import Plan
from planners.llm import LLMPlanner
from tests.apb_format_planner import REVISION_NOTE
from tests.conftest import read_records

FIXTURE = Path(__file__).parent / "fixtures" / "apb" / "holistic_judgement.json"
VIEW = TaskView(env="t", domain="d", task_id="1", policy="Be careful.", opening_request="help me",
                tools=[{"type": "function", "function": {"name": "lookup", "parameters": {}}}])
APB_PLAN = {"plan": "Find the order, then cancel it.", "tool_chain": [
    {"name": "lookup", "parameter_description": {"order_id": "the id the user gives",
                                                 "fields": {"status": "to check it is pending"}},
     "reason": "find the order"},
    {"name": "cancel_order", "parameter_description": {}, "reason": "the user asked", "confidence": 0.9},
    {"name": "lookup", "parameter_description": "free text is fine too — ünïcode", "reason": "re-check"}]}


class Replies:
    """A chat model that answers from a list and keeps every request (a test double)."""

    def __init__(self, *answers):
        self.answers = [a if isinstance(a, str) else json.dumps(a) for a in answers]
        self.requests: list[list[dict]] = []

    def complete(self, messages, *, tools=None, json_schema=None):
        self.requests.append(list(messages))
        return ChatReply(content=self.answers.pop(0))


def test_apb_plans_round_trip_unchanged_and_render_both_forms():
    text = json.dumps(APB_PLAN, ensure_ascii=False)
    plan = Plan.from_apb(text).checked_against(VIEW)
    assert plan.to_apb() == APB_PLAN
    assert json.dumps(plan.to_apb(), ensure_ascii=False) == text  # key order kept too
    assert Plan.model_validate(plan.model_dump()) == plan  # as stored in records and artifacts
    assert plan.unknown_tools == ["cancel_order"]
    rendered = plan.render()
    assert "order_id: the id the user gives" in rendered and '"status": "to check it is pending"' in rendered
    assert "free text is fine too" in rendered
    with pytest.raises(TypeError, match="tool_chain must be a list"):
        Plan.from_apb({"plan": "x", "tool_chain": {"name": "lookup"}})


NO_FLAGS = {c: False for c in ERROR_CODES}


def test_critic_and_judge_see_the_object_parameters():
    critic_model = Replies({"grade": 1.0, "errors": NO_FLAGS, "rationale": "ok"})
    anti_leak_critic(critic_model).critique(VIEW, Supervision(task_id="1"), Plan.from_apb(APB_PLAN))
    judge_model = Replies({"is_correct": True, "grade": 1.0, "errors": NO_FLAGS, "reasoning": "ok"})
    PlanJudge(judge_model).judge(VIEW, Supervision(task_id="1"), Plan.from_apb(APB_PLAN))
    for model in (critic_model, judge_model):
        assert '"order_id": "the id the user gives"' in model.requests[0][0]["content"]


def test_error_definitions_follow_apb_edge_cases_and_name_their_sources():
    from evrcore.taxonomy import DEFINITIONS

    assert [d.code for d in DEFINITIONS] == list(ERROR_CODES) == ["E1", "E2", "E3", "E4", "E5", "E6"]
    for d in DEFINITIONS:
        assert "arXiv:2606.04874" in d.source, d.code  # each follows the paper's category
    assert "not among the available tools" in ERROR_CODES["E6"]
    assert "final answer" in ERROR_CODES["E6"] and "answer" not in ERROR_CODES["E1"]
    assert "non-existent" not in ERROR_CODES["E5"] and "parameter syntax" in ERROR_CODES["E5"]
    assert "not E5" in ERROR_CODES["E5"] and "optimistic assumption" in ERROR_CODES["E4"]
    assert "valid alternative path to the goal is not E4" in ERROR_CODES["E4"]
    judge_model = Replies({"is_correct": True, "grade": 1.0, "errors": NO_FLAGS, "reasoning": "ok"})
    PlanJudge(judge_model).judge(VIEW, Supervision(task_id="1"), Plan(plan="x"))
    critic_model = Replies({"grade": 1.0, "errors": NO_FLAGS, "rationale": "ok"})
    anti_leak_critic(critic_model).critique(VIEW, Supervision(task_id="1"), Plan(plan="x"))
    for prompt in (judge_model.requests[0][0]["content"], critic_model.requests[0][0]["content"]):
        assert all(definition in prompt for definition in ERROR_CODES.values())
        assert "grade 1.0 if and only if no error flag is set" in prompt  # the one rule, in both


def _flags(*on):
    return {c: c in on for c in ERROR_CODES}


CONTRADICTORY = {"is_correct": True, "grade": 0.2, "errors": _flags(*ERROR_CODES), "reasoning": "bad"}
CONSISTENT = {"is_correct": False, "grade": 0.2, "errors": _flags(*ERROR_CODES), "reasoning": "bad"}


def test_a_contradictory_judgement_is_retried_then_normalised_with_a_note():
    model = Replies(CONTRADICTORY, CONSISTENT)
    fixed = PlanJudge(model).judge(VIEW, Supervision(task_id="1"), Plan(plan="x"))
    assert fixed.attempts == 2 and fixed.judgement.is_correct is False and fixed.note is None
    assert "contradicts itself" in model.requests[-1][-1]["content"]
    stubborn = PlanJudge(Replies(*[CONTRADICTORY] * 3)).judge(VIEW, Supervision(task_id="1"), Plan(plan="x"))
    assert stubborn.attempts == 3 and stubborn.judgement.is_correct is False
    assert "is_correct is true with E1, E2, E3, E4, E5, E6 set" in stubborn.note
    stored = {k: v for k, v in CONTRADICTORY.items() if k != "errors"} | {"error_list": [1] * 6}
    old = JudgeResult.model_validate({"judgement": stored, "attempts": 1})  # stored in the old shape
    assert old.judgement.is_correct is False and old.note
    assert JudgeResult.model_validate(stubborn.model_dump()) == stubborn


@pytest.mark.parametrize("answer, settled", [
    ({"is_correct": False, "grade": 1.0, "errors": _flags()}, (1.0, True)),          # retail 64's p0
    ({"is_correct": True, "grade": 0.0, "errors": _flags()}, (1.0, True)),
    ({"is_correct": True, "grade": 1.0, "errors": _flags("E1")}, (0.8, False)),     # 1.0 with a flag
    ({"is_correct": False, "grade": 1.0, "errors": _flags("E4", "E6")}, (0.8, False)),
    ({"is_correct": False, "grade": 0.6, "errors": _flags()}, (1.0, True)),
])
def test_every_contradiction_of_grade_flags_and_correctness_is_retried_then_settled(answer, settled):
    answer = {**answer, "reasoning": "r"}
    model = Replies(answer, answer, answer)
    result = PlanJudge(model).judge(VIEW, Supervision(task_id="1"), Plan(plan="x"))
    assert result.attempts == 3 and "The rule: grade 1.0 if and only if" in model.requests[-1][-1]["content"]
    j = result.judgement
    assert (j.grade, j.is_correct) == settled and j.errors.as_dict() == answer["errors"] and result.note
    assert j.consistent() and (j.grade == 1.0) == (not any(j.error_list())) == j.is_correct


def test_a_critique_whose_grade_contradicts_its_flags_is_retried_then_settled_with_a_note():
    bad = {"grade": 1.0, "errors": _flags("E1"), "rationale": "the goal is misread"}
    good = {**bad, "grade": 0.6}
    model = Replies(bad, good)
    result = anti_leak_critic(model).critique(VIEW, Supervision(task_id="1"), Plan(plan="x"))
    assert result.attempts == 2 and result.critique.grade == 0.6 and result.note is None
    assert "grade contradicts your error flags" in model.requests[-1][-1]["content"]
    stubborn = anti_leak_critic(Replies(bad, bad, bad)).critique(VIEW, Supervision(task_id="1"), Plan(plan="x"))
    assert stubborn.critique.grade == 0.8 and stubborn.critique.errors.E1 and "grade 1.0 → 0.8" in stubborn.note
    unflagged = {"grade": 0.4, "errors": _flags(), "rationale": "weak"}
    low = anti_leak_critic(Replies(*[unflagged] * 3)).critique(VIEW, Supervision(task_id="1"), Plan(plan="x"))
    assert low.critique.grade == 1.0 and low.note and low.critique.contradiction() is None


def test_judge_and_critic_get_apbs_inputs_full_schemas_and_a_reference_plan():
    from envs.tau2 import Tau2Environment

    view, supervision = Tau2Environment().load("airline", "1")  # a real τ² task and its tools
    view = view.model_copy(update={"opening_request": "I want to change my flight."})
    judge_model = Replies({"is_correct": True, "grade": 1.0, "errors": NO_FLAGS, "reasoning": "ok"})
    PlanJudge(judge_model).judge(view, supervision, Plan(plan="x"))
    critic_model = Replies({"grade": 1.0, "errors": NO_FLAGS, "rationale": "ok"})
    anti_leak_critic(critic_model).critique(view, supervision, Plan(plan="x"))
    blind = Replies({"grade": 1.0, "errors": NO_FLAGS, "rationale": "ok"})
    STRATEGIES["critic-metric"].critic(blind).critique(view, None, Plan(plan="x"))
    from critique.reference import reference_plan

    reference = reference_plan(supervision)
    agent_calls = [a for a in supervision.reference_actions if a.requestor == "assistant"]
    assert [s.name for s in reference.tool_chain] == [a.name for a in agent_calls] and agent_calls
    assert [s.parameter_description for s in reference.tool_chain] == [a.arguments for a in agent_calls]
    schemas = json.dumps(view.tools, indent=2, ensure_ascii=False)
    some_description = view.tools[0]["function"]["description"][:60]
    for model in (judge_model, critic_model):
        prompt = model.requests[0][0]["content"]
        assert schemas in prompt and some_description in prompt  # the full schemas, not names only
        assert json.dumps(reference.to_apb(), indent=2, ensure_ascii=False) in prompt
        assert supervision.render() in prompt  # the benchmark's own supervision beside it
    blind_prompt = blind.requests[0][0]["content"]
    assert schemas in blind_prompt and "<reference_plan>" not in blind_prompt  # sees no reference


def test_the_reference_plan_keeps_user_actions_out_of_the_agents_chain():
    from critique.reference import reference_plan
    from envs.base import ReferenceAction

    sup = Supervision(task_id="t", reference_actions=[
        ReferenceAction(name="get_customer", arguments={"id": "C1"}),
        ReferenceAction(name="toggle_airplane_mode", arguments={}, requestor="user"),
        ReferenceAction(name="refuel", arguments={"gb": 2.0})], expected_outcomes=["the line is active"])
    plan = reference_plan(sup)
    assert [s.name for s in plan.tool_chain] == ["get_customer", "refuel"]
    assert "The user performs toggle_airplane_mode" in plan.plan and "the line is active" in plan.plan
    assert Plan.from_apb(plan.to_apb()) == plan  # a valid APB plan
    empty = reference_plan(Supervision(task_id="t"))
    assert empty.tool_chain == [] and "no reference actions" in empty.plan


@pytest.mark.parametrize("strategy, says, never", [
    ("self-metric", "You reviewed the current plan yourself", "can see how this task is judged"),
    ("critic-metric", "it has not seen how the task is judged", "can see how this task is judged"),
    ("anti-leak", "can see how this task is judged", "yourself"),
])
def test_the_revise_prompt_says_who_critiqued(strategy, says, never):
    model = Replies(APB_PLAN)
    critique = Critique(grade=0.6, errors={c: c == "E2" for c in ERROR_CODES}, rationale="incomplete")
    LLMPlanner(model).revise(VIEW, Plan(plan="x"), critique, reviewer=STRATEGIES[strategy].reviewer)
    prompt = model.requests[0][0]["content"]
    assert says in prompt and never not in prompt


def test_report_help_prints_help_and_a_missing_folder_is_not_created(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "runtime.report", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "--apb-out" in proc.stdout and not Path("--help").exists()
    missing = tmp_path / "no-such-run"
    proc = subprocess.run([sys.executable, "-m", "runtime.report", str(missing)], capture_output=True, text=True)
    assert proc.returncode == 2 and "not a run folder" in proc.stderr and "Traceback" not in proc.stderr
    assert not missing.exists()


# --- a scripted run: the APB-format plug-in planner in all three modes, a critic endpoint
# that is down for one task, the summary, the report and the APB-shaped export --------------

TASKS = ["1", "2", "3"]
DOWN_FOR = "3"


def critic_endpoint(request, context):
    """The critic's endpoint is down for one task (a test double for an outage)."""
    if context.get("task_id") == DOWN_FOR:
        raise ConnectionError("critic endpoint unreachable")
    from testkit.roles import DEFAULT_CRITIQUE, fixed

    return fixed(DEFAULT_CRITIQUE)(request, context)


@pytest.fixture(scope="module")
def outage_run(tmp_path_factory):
    from runtime import validate
    from runtime.llm.layer import ModelLayer
    from testkit.roles import ScriptedRoles

    original = ModelLayer.__init__

    def fast_retries(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.backoff_s = self.max_backoff_s = 0.001

    ModelLayer.__init__ = fast_retries
    try:
        out = tmp_path_factory.mktemp("apb") / "run"
        model = ScriptedRoles(critic=critic_endpoint).model_name("apb-outage")
        code = validate.main(["--env", "tau2", "--domain", "airline", "--mode", "all",
                              "--task-ids", ",".join(TASKS), "--model", model,
                              "--planner", "tests.apb_format_planner:ApbFormatPlanner",
                              "--strategy", "critic-metric",
                              "--out", str(out), "--no-cache"])
    finally:
        ModelLayer.__init__ = original
    return code, out, read_records(out)


def test_an_apb_format_planner_runs_in_all_three_modes(outage_run):
    code, _, records = outage_run
    assert code == 0
    by = {(r["key"]["task_id"], r["key"]["mode"]): r for r in records}
    assert len(by) == len(TASKS) * 3
    for task in TASKS:
        assert by[(task, "direct")]["status"] == "ok"
        first = by[(task, "plan-first")]
        assert first["status"] == "ok"
        assert first["p0"]["tool_chain"][0]["parameter_description"]["filters"] == {"kind": "from the request"}
        assert "not_a_real_tool" in first["p0"]["unknown_tools"]
    for task in set(TASKS) - {DOWN_FOR}:
        refine = by[(task, "refine")]
        assert refine["status"] == "ok" and refine["p0"] == by[(task, "plan-first")]["p0"]
        assert refine["p1"]["plan"].endswith(REVISION_NOTE + " (reviewed by: critic)")


def test_injected_failures_show_per_arm_as_infrastructure(outage_run):
    _, out, records = outage_run
    (down,) = [r for r in records if r["status"] == "error"]
    assert down["key"]["task_id"] == DOWN_FOR and down["key"]["mode"] == "refine"
    assert down["error"]["stage"] == "critique" and down["error"]["kind"] == "infrastructure"
    summary = json.loads((out / "summary.json").read_text())
    refine, first = summary["by_arm"]["refine:critic-metric"], summary["by_arm"]["plan-first"]
    assert (refine["n"], refine["errors"], refine["infrastructure_errors"]) == (3, 1, 1)
    assert refine["error_rate"] == pytest.approx(1 / 3) and first["errors"] == 0
    assert any(w.startswith("refine:critic-metric: 1/3 episodes errored") for w in summary["error_warnings"])

    from runtime.report import main as report_main

    assert report_main([str(out)]) == 0
    md = (out / "report.md").read_text()
    assert "## Errors and Δ with errors counted" in md
    assert "| tau2 | scripted/apb-outage | critic-metric | refine | 3 | 1 | 33.3% | 1 |" in md
    assert "**warning**" in md and "refine: 1/3 episodes errored" in md
    import pandas as pd

    row = pd.read_csv(out / "report.csv").iloc[0]
    assert row["delta_tasks"] == 2 and row["delta0_tasks"] == 3


def test_apb_export_has_apb_shape_and_apb_scoring_reads_it(outage_run, tmp_path):
    _, out, records = outage_run
    report_before = (out / "report.md").read_bytes() if (out / "report.md").exists() else None
    proc = subprocess.run([sys.executable, "-m", "runtime.report", str(out), "--apb-out",
                           str(tmp_path / "no-such-folder" / "j.jsonl")], capture_output=True, text=True)
    assert proc.returncode == 2 and "does not exist" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not (tmp_path / "no-such-folder").exists()
    assert ((out / "report.md").read_bytes() if (out / "report.md").exists() else None) == report_before
    target = tmp_path / "judgements.jsonl"
    proc = subprocess.run([sys.executable, "-m", "runtime.report", str(out), "--apb-out", str(target)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    fixture = json.loads(FIXTURE.read_text())
    # p0 once per task (shared by plan-first and refine), p1 for each refine that got one.
    judged_p1 = [r for r in records if r.get("judge_p1") and r["judge_p1"].get("judgement")]
    assert len(lines) == len(TASKS) + len(judged_p1) == len({line["id"] for line in lines})
    for line in lines:
        for key, value in fixture.items():
            assert type(line[key]) is type(value), key
        assert set(line["judgement"]) == set(fixture["judgement"])
        assert [type(v) for v in line["judgement"].values()] == [type(v) for v in fixture["judgement"].values()]
        assert Plan.from_apb(line["model_response"])  # the plan as the model's text
    assert apb_accuracy([fixture]) == dict.fromkeys(["overall", "holistic_planning", "Holistic", "tool_use",
                                                     "travel"], 1.0)  # the scorer reads the documented shape
    expected = [j["judgement"]["is_correct"] for j in lines]
    assert apb_accuracy(lines)["overall"] == pytest.approx(sum(expected) / len(expected))
    assert set(apb_accuracy(lines)) == {"overall", "holistic_planning", "Holistic", "tau2", "airline"}


def apb_judge_payload(record: dict) -> dict:
    """What APB's judge stage sends its judge for a record, restated from its payload builder
    (``evaluation/apb_eval/prompts.py``, ``judge_payload``, Mikivishy/AgentPlanningBenchmark at
    6d0ff24): for a ``Holistic`` record, ``query``, ``tools_json`` as ``available_tools``, the
    reference ``plan`` and ``tool_chain_json``, ``model_response``; JSON-string fields parsed,
    a missing or unparsable one read as its default (so a record without them gives an empty
    payload, which is what the export used to produce)."""
    def field(key, default):
        value = record.get(key)
        if value in (None, ""):
            return default
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                return default
        return value

    assert record.get("planning_regime") == "Holistic"  # else APB builds a step-wise payload
    return {"id": record.get("id"), "task_category": record.get("task_category"), "query": record.get("query"),
            "available_tools": field("tools_json", []),
            "extraneous_tool_names": field("extraneous_tool_names_json", []),
            "trajectory_prefix": field("trajectory_prefix_json", []),
            "reference": {"plan": record.get("plan"), "tool_chain": field("tool_chain_json", []),
                          "unsolvable_type": record.get("unsolvable_type")},
            "model_response": record.get("model_response", "")}


def test_apb_export_gives_apbs_own_judge_a_complete_payload(outage_run, tmp_path):
    from critique.reference import reference_plan
    from envs.tau2 import Tau2Environment
    from runtime.reports import apb_export
    from runtime.folder.store import RunStore

    _, out, _ = outage_run
    rows = apb_export.apb_records(RunStore(out).records(), "scripted/judge", folder=out)
    assert rows and apb_export.without_inputs(rows) == 0
    env = Tau2Environment()
    for row in rows:
        assert row["split"] in APB_SPLITS  # APB's judge stage keeps only its splits
        view, supervision = env.load("airline", row["runtime"]["task_id"])
        payload = apb_judge_payload(row)
        assert payload["available_tools"] == view.tools and view.tools  # the full schemas
        reference = reference_plan(supervision).to_apb()
        assert payload["reference"]["plan"] == reference["plan"] and payload["reference"]["plan"]
        assert payload["reference"]["tool_chain"] == reference["tool_chain"] and reference["tool_chain"]
        assert payload["query"] and payload["query"] == row["query"]
        assert Plan.from_apb(payload["model_response"])
        assert payload["extraneous_tool_names"] == [] and payload["trajectory_prefix"] == []
        j = row["judgement"]
        assert set(j) == {"is_correct", "grade", "error_list", "reasoning"} and len(j["error_list"]) == 6
        assert (j["grade"] == 1.0) == (not any(j["error_list"])) == j["is_correct"]
    before = apb_export.apb_records(RunStore(out).records(), "scripted/judge")  # no folder: no inputs
    assert apb_export.without_inputs(before) == len(before)
    assert apb_judge_payload(before[0])["available_tools"] == [] and not apb_judge_payload(before[0])["reference"]["plan"]


APB_SPLITS = ["holistic_planning", "holistic_tool_extraneous", "holistic_unsolvable",
              "step_wise_planning", "step_wise_tool_extraneous", "step_wise_tool_broken"]


def apb_accuracy(lines: list[dict]) -> dict[str, float]:
    """APB's score stage as its documentation describes it: keep records whose split is one of
    its splits, group by overall / split / regime / family / category, mean of is_correct."""
    groups: dict[str, list[bool]] = {}
    for line in (r for r in lines if r.get("split") in APB_SPLITS):
        for key in ("overall", line.get("split"), line.get("planning_regime"), line.get("task_family"),
                    line.get("task_category")):
            if key and isinstance(line.get("judgement"), dict) and "is_correct" in line["judgement"]:
                groups.setdefault(key, []).append(bool(line["judgement"]["is_correct"]))
    return {k: sum(v) / len(v) for k, v in groups.items()}
