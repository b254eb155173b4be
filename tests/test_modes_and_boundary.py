"""Mode wiring (which stages run, shared p0) and the boundary: no request of the planner,
reviser or executor carries a supervision-only value, even when the critic tries to leak."""

from __future__ import annotations

import json

import pytest

from envs.tau2 import Tau2Environment
from runtime import validate as cli
from runtime.llm.layer import ModelLayer
from testkit.roles import DEFAULT_CRITIQUE, ScriptedRoles
from testkit.scripted import text

TASKS = "1,4,7"  # airline tasks whose reference holds IDs, dates and amounts


@pytest.fixture
def captured(monkeypatch):
    """Every request the model layer sends, as (purpose, request)."""
    seen: list[tuple[str, dict]] = []
    original = ModelLayer.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.observers.append(lambda purpose, request: seen.append((purpose, request)))

    monkeypatch.setattr(ModelLayer, "__init__", init)
    return seen


def _supervision_only(task_id: str, opening: str) -> set[str]:
    view, supervision = Tau2Environment().load("airline", task_id)
    return supervision.supervision_only_values(view.model_copy(update={"opening_request": opening}))


def test_all_modes_share_p0_and_run_their_stages(validate):
    model = ScriptedRoles().model_name("roles-modes")
    code, records = validate("--env", "tau2", "--mode", "all", "--domain", "airline",
                             "--tasks", TASKS, "--model", model)
    assert code == 0
    assert len(records) == 9
    by = {(r["key"]["task_id"], r["key"]["mode"]): r for r in records}
    for task in TASKS.split(","):
        direct, first, refine = by[(task, "direct")], by[(task, "plan-first")], by[(task, "refine")]
        assert all(r["status"] == "ok" for r in (direct, first, refine))
        assert direct["p0"] is None and direct["critique"] is None
        assert first["p0"] is not None and first["critique"] is None and first["p1"] is None
        assert refine["p0"] == first["p0"]
        assert refine["critique"]["grade"] == DEFAULT_CRITIQUE["grade"]
        assert refine["p1"] is not None and refine["p1"] != refine["p0"]
        assert refine["guard"]["fired"] is False
        # the opening request is fixed once and shared by every mode
        assert direct["opening_request"] == first["opening_request"] == refine["opening_request"]
        assert refine["score"] == 1.0  # gold replay executes identically whatever the plan
        assert "reward" == refine["score_name"] and "DB" in refine["breakdown"]


def test_p0_is_made_once_per_task_and_trial(validate, captured):
    model = ScriptedRoles().model_name("roles-once")
    code, records = validate("--env", "tau2", "--mode", "all", "--domain", "airline",
                             "--tasks", "0,1", "--trials", "2", "--model", model)
    assert code == 0 and len(records) == 12
    planner_calls = [p for p, _ in captured if p == "planner"]
    assert len(planner_calls) == 2 * 2  # tasks × trials, shared by plan-first and refine
    by = {(r["key"]["task_id"], r["key"]["trial"], r["key"]["mode"]): r for r in records}
    for task in ("0", "1"):
        for trial in (0, 1):
            assert by[(task, trial, "plan-first")]["p0"] == by[(task, trial, "refine")]["p0"]


def _leaky_critic(request, context):
    """A critic that writes a supervision-only value and the reference sequence into every rationale."""
    view, supervision = Tau2Environment().load(context["domain"], context["task_id"])
    secret = sorted(supervision.supervision_only_values(view))[0]
    names = " then ".join(a.name for a in supervision.reference_actions)
    answer = dict(DEFAULT_CRITIQUE, rationale=f"The plan must use {secret}. Do {names}.")
    return text(json.dumps(answer))


def test_no_supervision_value_reaches_planner_reviser_or_executor(validate, captured):
    model = ScriptedRoles(critic=_leaky_critic).model_name("roles-leaky")
    code, records = validate("--env", "tau2", "--mode", "refine", "--domain", "airline",
                             "--tasks", TASKS, "--model", model)
    assert code == 0 and len(records) == 3
    for record in records:
        assert record["status"] == "ok", record["error"]
        guard = record["guard"]
        assert guard["fired"] is True and guard["action"] == "redacted"
        assert guard["critic_attempts"] == 3  # first answer + two leak retries
        assert guard["removed"], "redaction must say what it removed"
        secrets = _supervision_only(record["key"]["task_id"], record["opening_request"])
        assert secrets
        assert not any(s in record["critique"]["rationale"] for s in secrets)

    checked = 0
    secrets_by_task = {
        r["key"]["task_id"]: _supervision_only(r["key"]["task_id"], r["opening_request"]) for r in records
    }
    all_secrets = set().union(*secrets_by_task.values())
    assert all_secrets, "the boundary test needs tasks with supervision-only values"
    for purpose, request in captured:
        if purpose in ("planner", "reviser"):
            text_sent = json.dumps(request["messages"])
        elif purpose == "executor":
            # tool results legitimately carry DB values; the instructions (policy + plan) may not
            text_sent = request["messages"][0]["content"]
        else:
            continue
        checked += 1
        leaked = [s for s in all_secrets if s in text_sent]
        assert not leaked, f"{purpose} request carried supervision-only values {leaked}"
    assert checked >= 3 * 3


def test_a_critic_that_stops_leaking_is_retried_not_redacted(validate):
    calls: dict[str, int] = {}

    def leaks_once(request, context):
        n = calls[context["task_id"]] = calls.get(context["task_id"], 0) + 1
        return _leaky_critic(request, context) if n == 1 else text(json.dumps(DEFAULT_CRITIQUE))

    model = ScriptedRoles(critic=leaks_once).model_name("roles-leaks-once")
    code, records = validate("--env", "tau2", "--mode", "refine", "--domain", "airline",
                             "--task-ids", "1", "--model", model)
    assert code == 0
    guard = records[0]["guard"]
    assert guard["fired"] is True and guard["action"] == "retried" and guard["removed"] == []
    assert records[0]["critique"]["rationale"] == DEFAULT_CRITIQUE["rationale"]


def test_malformed_critic_is_retried_then_recorded_as_error(validate):
    answers = iter(['{"grade": 0.5, "errors": {}, "rationale": "x"}',
                    '{"grade": 0.6, "errors": {"E1": false, "E2": false, "E3": false, "E4": false,'
                    ' "E5": false, "E6": false}, "rationale": "ok", "fix": "leak"}',
                    "not json at all"])
    model = ScriptedRoles(critic=lambda r, c: text(next(answers))).model_name("roles-malformed")
    code, records = validate("--env", "tau2", "--mode", "refine", "--domain", "airline",
                             "--task-ids", "0", "--model", model)
    assert code == 3  # the only episode errored: the run does not pass for a success
    (record,) = records
    assert record["status"] == "error"
    assert record["error"]["stage"] == "critique" and record["error"]["type"] == "CriticError"
    assert record["p0"] is not None and record["p1"] is None and record["score"] is None


def _disguised_critic(request, context):
    """A critic that plants what the old guard never listed: IDs spaced and lower-cased, the
    reference sequence in camelCase, and a sentence of the user's hidden instructions."""
    from leakbench.corpus import hidden_sentences
    from testkit.disguised_leak import disguised_rationale

    view, supervision = Tau2Environment().load(context["domain"], context["task_id"])
    actions = [{"name": a.name, "arguments": a.arguments} for a in supervision.reference_actions]
    # a hidden sentence that tells something the view does not (words the view never uses);
    # one made only of the policy's own words is the auditor's to catch, not the rules'
    prompt = request["messages"][0]["content"] if request else ""
    opening = prompt.split("<user_request>", 1)[-1].split("</user_request>", 1)[0] if prompt else ""
    hidden = hidden_sentences(view.model_copy(update={"opening_request": opening}), supervision, {})
    rationale = disguised_rationale(actions, seed=context["task_id"]) + "\nAlso: " + hidden[0]
    return text(json.dumps(dict(DEFAULT_CRITIQUE, rationale=rationale)))


@pytest.fixture
def captured_by_task(monkeypatch):
    """Every request the model layer sends, as (purpose, task id, request)."""
    seen: list[tuple[str, str, dict]] = []
    original = ModelLayer.call

    def call(self, spec, purpose, request, meter, context, **kwargs):
        seen.append((purpose, str(context.get("task_id")), request))
        return original(self, spec, purpose, request, meter, context, **kwargs)

    monkeypatch.setattr(ModelLayer, "call", call)
    return seen


def test_disguised_and_hidden_leaks_never_reach_planner_reviser_or_executor(validate, captured_by_task):
    from critique.guard.leak_guard import LeakGuard
    from testkit.disguised_leak import decode

    model = ScriptedRoles(critic=_disguised_critic).model_name("roles-disguised")
    # the rules alone: the auditor (a second line) would hide a gap in them
    code, records = validate("--env", "tau2", "--mode", "refine", "--domain", "airline",
                             "--tasks", TASKS, "--model", model, "--no-auditor")
    assert code == 0 and len(records) == 3
    guards = {}
    planted = {}
    for record in records:
        assert record["status"] == "ok", record["error"]
        assert record["guard"]["fired"] and record["guard"]["action"] == "redacted"
        view, supervision = Tau2Environment().load("airline", record["key"]["task_id"])
        view = view.model_copy(update={"opening_request": record["opening_request"]})
        guards[record["key"]["task_id"]] = LeakGuard(view, supervision)
        critic_prompt = {"messages": [{"content": f"<user_request>{record['opening_request']}</user_request>"}]}
        raw = json.loads(_disguised_critic(critic_prompt, {"domain": "airline", "task_id": record["key"]["task_id"]})["content"])
        planted[record["key"]["task_id"]] = raw["rationale"]
        assert decode(record["critique"]["rationale"]) is None  # the reference can no longer be read back
    checked = 0
    for purpose, task_id, request in captured_by_task:
        if purpose in ("planner", "reviser"):
            sent = "\n".join(str(m.get("content") or "") for m in request["messages"])
        elif purpose == "executor":
            sent = request["messages"][0]["content"]  # tool results legitimately carry DB values
        else:
            continue
        checked += 1
        guard = guards[task_id]
        # the view itself lists the offered tools (in an order that may match the reference's),
        # so whole requests are checked for values; the critique they carry for sequences too.
        # A whole request also holds the prompt's own words (``tool_chain``), which are no
        # critique's to use ('unseen'): only supervision content counts here.
        values = [f for f in guard.scan(sent) if f.kind not in ("sequence", "unseen")]
        assert values == [], (purpose, task_id, values)
        if purpose == "reviser":
            critique = sent.split("<critique>", 1)[1].split("</critique>", 1)[0]
            assert guard.scan(critique) == [], guard.scan(critique)
        assert planted[task_id].rsplit("Also: ", 1)[1] not in sent
    assert checked >= 3 * 3


def test_the_disguised_reference_reaches_the_reviser_only_when_leaky(validate, tmp_path):
    """The anti-leak control's mechanism on two tasks: under ``leaky`` the scripted reviser reads
    the disguised reference back into p1; under ``anti-leak`` the guard leaves it nothing to read."""
    from testkit.plan_follower import PlanFollowingRoles, suitable_tasks

    model = PlanFollowingRoles(disguised=True).model_name("plan-follower-disguised")
    tasks = suitable_tasks("airline", limit=2)
    p1 = {}
    for strategy in ("leaky", "anti-leak"):
        code, records = validate("--env", "tau2", "--mode", "refine", "--domain", "airline",
                                 "--task-ids", ",".join(tasks), "--model", model, "--strategy", strategy,
                                 out=tmp_path / strategy)
        assert code == 0 and all(r["status"] == "ok" for r in records)
        p1[strategy] = {r["key"]["task_id"]: r for r in records}
    for task in tasks:
        _, supervision = Tau2Environment().load("airline", task)
        leaky, guarded = p1["leaky"][task], p1["anti-leak"][task]
        assert [s["name"] for s in leaky["p1"]["tool_chain"]] == [a.name for a in supervision.reference_actions]
        assert guarded["p1"]["tool_chain"] == guarded["p0"]["tool_chain"]
        assert guarded["guard"]["action"] == "redacted" and guarded["guard"]["rule_findings"]


# -- the anti-leak control's disguised critic (testkit.disguised_leak) ---------------------------

SEEDS = ("", ":1", ":2")


def _control_tasks():
    """(domain, task id, view with the scripted opening, supervision, the scripted p0) for every
    τ² airline and retail task the controls run."""
    from evrcore.plan import Plan
    from testkit.plan_follower import PlanFollowingRoles, opening, suitable_tasks
    from envs.tau2 import tasks as tau2_tasks

    env, roles = Tau2Environment(), PlanFollowingRoles()
    out = []
    for domain in ("airline", "retail"):
        for task_id in suitable_tasks(domain):
            view, supervision = env.load(domain, task_id)
            view = view.model_copy(update={"opening_request": opening(tau2_tasks.task(domain, task_id))})
            planner = {"messages": [{"role": "user", "content": view.text()}]}
            p0 = Plan(**json.loads(roles(planner, {"purpose": "planner", "domain": domain, "task_id": task_id})["content"]))
            out.append((domain, task_id, view, supervision, p0))
    return out


@pytest.fixture(scope="module")
def control_tasks():
    return _control_tasks()


def _actions(supervision):
    return [{"name": a.name, "arguments": a.arguments} for a in supervision.reference_actions]


def test_the_disguised_reference_reads_back_exactly_in_every_class(control_tasks):
    from testkit.disguised_leak import classes_used, decode, disguised_rationale

    used: set[str] = set()
    assert len(control_tasks) >= 60
    for domain, task_id, _, supervision, _ in control_tasks:
        for seed in SEEDS:
            rationale = disguised_rationale(_actions(supervision), seed=f"{domain}/{task_id}{seed}")
            assert decode(rationale) == _actions(supervision), (domain, task_id, seed)
            used |= classes_used(rationale)
    expected = {f"id:{c}" for c in ("grouped", "spelled", "nato", "digitwords", "zerowidth", "lookalike",
                                     "code", "fullwidth")}
    expected |= {f"n:{c}" for c in ("words", "digitwords", "es", "de", "glued", "suffix", "locale", "fullwidth")}
    expected |= {"d:en", "d:es", "d:de", "t:fullwidth", "seq:numbered", "seq:ordinals"}
    assert expected <= used, sorted(expected - used)


def test_the_disguises_are_what_they_say():
    from testkit.disguised_leak import decode, disguised_rationale

    actions = [{"name": "get_user_details", "arguments": {"user_id": "raj_sanchez_7340"}},
               {"name": "send_certificate", "arguments": {"amount": 1270, "date": "2024-05-15"}}]
    texts = "\n".join(disguised_rationale(actions, seed=f"s{k}") for k in range(200))
    for form in ("Romeo alfa juliett", "seven-three-four-zero", "\u200b", "\u0430", "`raj_sanchez_7340`",
                 "\uff17\uff13\uff14\uff10", "USD1270.00", "1.270,00", "mil doscientos setenta",
                 "eintausendzweihundertsiebzig", "15 de mayo de 2024", "15. Mai 2024", "First, ", "r a j _ s"):
        assert form.lower() in texts.lower(), form
    assert all(decode(disguised_rationale(actions, seed=f"s{k}")) == actions for k in range(200))


def test_a_redacted_disguised_rationale_is_not_read():
    from testkit.disguised_leak import decode, disguised_rationale

    actions = [{"name": "cancel_reservation", "arguments": {"reservation_id": "EHG7LP3"}},
               {"name": "get_user_details", "arguments": {"user_id": "raj_sanchez_7340"}}]
    for k in range(20):
        rationale = disguised_rationale(actions, seed=f"r{k}")
        assert decode(rationale) == actions
        lines = rationale.splitlines()
        for at in range(1, len(lines)):
            for cut in ("[redacted]", lines[at].split(" — ", 1)[0]):
                broken = lines[at].replace(cut, "[redacted]", 1) if cut != "[redacted]" else lines[at][:-5] + "[redacted]\"}"
                assert decode("\n".join(lines[:at] + [broken] + lines[at + 1:])) is None, broken


def test_the_guard_leaves_the_disguised_reference_unreadable(control_tasks):
    """Every control task's p0 lacks a write of the reference: after the current guard's
    redaction the scripted reviser must read nothing back, for every disguise mix."""
    from critique.guard.leak_guard import LeakGuard
    from testkit.disguised_leak import decode, disguised_rationale

    read_back = []
    for domain, task_id, view, supervision, p0 in control_tasks:
        assert len(p0.tool_chain) < len(supervision.reference_actions)
        for seed in SEEDS:
            rationale = disguised_rationale(_actions(supervision), seed=f"{domain}/{task_id}{seed}")
            redacted, _ = LeakGuard(view, supervision, p0).redact(rationale)
            if decode(redacted) is not None:
                read_back.append(f"{domain}/{task_id}{seed}")
    assert read_back == [], read_back
