"""The ToolSandbox adapter.

Without ToolSandbox: the conversion code (tool calls ↔ Python call strings, scrambled names,
milestone rendering, scenario selection), the per-category aggregation and the setup errors.

With ToolSandbox (``TOOLSANDBOX_SOURCE`` set and its venv set up): real scenarios driven through
the env server by a scripted executor — reference sequences score similarity 1.0 across
categories, wrong ones lower, invented information 0 — plus a crash of the real server and the
CLI end to end. Enable with::

    python -m runtime.envs setup toolsandbox --source <path or git URL of apple/ToolSandbox>
    TOOLSANDBOX_SOURCE=<same source> pytest tests/test_toolsandbox.py
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from envs.base import UnknownTaskError
from envs.toolsandbox import convert
from runtime.reports import categories
from tests.conftest import comparable

# ---- conversion, without ToolSandbox -----------------------------------------------------------


def test_tool_call_code_has_toolsandbox_format_and_round_trips():
    code = convert.tool_call_to_code("call_1", "set_cellular_service_status", {"on": False})
    assert code == ("call_1_parameters = {'on': False}\n"
                    "call_1_response = set_cellular_service_status(**call_1_parameters)\n"
                    "print(repr(call_1_response))")
    assert convert.code_to_tool_call(code) == ("call_1", "set_cellular_service_status", {"on": False})
    args = {"content": "How's it \"going\"\n", "n": None, "x": [1.5, True]}
    assert convert.code_to_tool_call(convert.tool_call_to_code("c", "f", args))[2] == args
    compile(convert.tool_call_to_code("c", "f", args), "<tool call>", "exec")
    with pytest.raises(ValueError, match="not a ToolSandbox tool-call snippet"):
        convert.code_to_tool_call("print(1)")


def test_call_ids_become_identifiers():
    assert convert.safe_call_id("call_abc") == "call_abc"
    assert convert.safe_call_id("chatcmpl-tool-1a") == "chatcmpl_tool_1a"
    assert convert.safe_call_id("7f3") == "call_7f3"
    assert convert.safe_call_id(None, 2) == "call_2"
    assert convert.safe_call_id("toolu_01").isidentifier()


def test_the_models_own_call_ids_go_back_to_it():
    """litellm keeps Gemini's thought signature in the call id (base64: ``=``, ``+``, ``/``);
    the identifier-safe id ToolSandbox needs must not be what the model sees next turn."""
    original = "call_1f2e__thought__c2lnMQ+/=="
    safe = convert.safe_call_id(original)
    assert safe != original and safe.isidentifier()
    ids = {safe: original}
    call = {"role": "assistant", "content": "", "tool_calls": [{"id": safe, "type": "function"}]}
    assert convert.restore_call_ids(call, ids)["tool_calls"][0]["id"] == original
    assert convert.restore_call_ids({"role": "tool", "tool_call_id": safe}, ids)["tool_call_id"] == original
    assert convert.restore_call_ids({"role": "user", "content": "hi"}, ids) == {"role": "user", "content": "hi"}


def test_arguments_parse_like_toolsandbox():
    assert convert.parse_arguments('{"on": true}') == {"on": True}
    assert convert.parse_arguments("") == {} and convert.parse_arguments({"a": 1}) == {"a": 1}
    with pytest.raises(ValueError):
        convert.parse_arguments("{not json")
    with pytest.raises(ValueError, match="JSON object"):
        convert.parse_arguments("[1]")


def test_scrambled_names_map_both_ways_and_unknown_tools_fail_like_toolsandbox():
    names = convert.NameMap({"setting_5": "set_cellular_service_status", "contact_3": "search_contacts"})
    assert names.to_execution("setting_5") == "set_cellular_service_status"
    assert names.to_agent("search_contacts") == "contact_3"
    assert names.to_agent("end_conversation") == "end_conversation"
    with pytest.raises(KeyError, match="is not a known allowed tool"):
        names.to_execution("set_cellular_service_status")  # the real name is hidden when scrambled


MILESTONES = {
    "milestones": [
        [{"namespace": "SETTING", "similarity": "snapshot_similarity", "options": {}, "reference": None,
          "target": [{"cellular": True}]}],
        [{"namespace": "SANDBOX", "similarity": "snapshot_similarity", "options": {}, "reference": None,
          "target": [{"sender": "EXECUTION_ENVIRONMENT", "recipient": "AGENT",
                      "tool_trace": json.dumps({"tool_name": "search_contacts",
                                                "arguments": {"name": "Fredrik Thordendal"}})}]}],
        [{"namespace": "MESSAGING", "similarity": "addition_similarity", "options": {}, "reference": 0,
          "target": [{"recipient_phone_number": "+12453344098", "content": "Hi"}]}],
        [{"namespace": "SANDBOX", "similarity": "snapshot_similarity", "options": {}, "reference": None,
          "target": [{"sender": "AGENT", "recipient": "USER", "content": "Sent."}]}],
    ],
    "edges": [[0, 2], [1, 2], [2, 3]],
}


def test_milestones_render_readably_with_agent_facing_names():
    names = convert.NameMap({"contact_3": "search_contacts"})
    lines = convert.describe(MILESTONES, names.to_agent)
    assert lines == [
        "Milestone 1: device settings: cellular=true",
        'Milestone 2: the agent calls contact_3(name="Fredrik Thordendal")',
        'Milestone 3 [after milestone 1, 2]: a messaging entry is added with '
        'recipient_phone_number="+12453344098", content="Hi" (relative to the state at milestone 1)',
        'Milestone 4 [after milestone 3]: the agent tells the user: "Sent."',
    ]
    assert convert.reference_actions(MILESTONES, names.to_agent) == [
        {"name": "contact_3", "arguments": {"name": "Fredrik Thordendal"}}]
    mines = {"milestones": [[{"namespace": "SANDBOX", "similarity": "snapshot_similarity", "options": {},
                              "reference": None, "target": [{"sender": "AGENT", "recipient": "EXECUTION_ENVIRONMENT",
                                                             "content": "search_contacts"}]}]], "edges": []}
    assert convert.describe(mines, names.to_agent, minefield=True) == [
        "Minefield 1 (must NOT happen; if it does the score is 0): the agent calls contact_3"]


def test_constraints_of_toolsandbox_objects_become_plain_data():
    def snapshot_similarity(**kw):
        return 1.0

    def guardrail_similarity(**kw):
        return 1.0

    def tool_trace_dependant_similarity(**kw):
        return 1.0

    def days_extractor(trace):
        return []

    frame = types.SimpleNamespace(to_dicts=lambda: [{"sender": "AGENT", "content": "It is {days} days"}])
    constraint = types.SimpleNamespace(
        snapshot_constraint=functools.partial(tool_trace_dependant_similarity, fill_to="content",
                                              extractor=days_extractor),
        database_namespace="SANDBOX", reference_milestone_node_index=2, target_dataframe=frame)
    assert convert.constraint_data(constraint) == {
        "namespace": "SANDBOX", "similarity": "tool_trace_dependant_similarity",
        "options": {"fill_to": "content", "extractor": "days_extractor"}, "reference": 2,
        "target": [{"sender": "AGENT", "content": "It is {days} days"}]}
    guard = types.SimpleNamespace(snapshot_constraint=guardrail_similarity, database_namespace="CONTACT",
                                  reference_milestone_node_index=0, target_dataframe=None)
    assert convert.constraint_data(guard) is None
    plain = types.SimpleNamespace(snapshot_constraint=snapshot_similarity, database_namespace="SETTING",
                                  reference_milestone_node_index=None, target_dataframe=None)
    assert convert.constraint_data(plain)["target"] == []


CATALOG = {
    "a": ["SINGLE_TOOL_CALL", "NO_DISTRACTION_TOOLS"],
    "b": ["MULTIPLE_TOOL_CALL", "MULTIPLE_USER_TURN", "NO_DISTRACTION_TOOLS"],
    "a_3_distraction_tools": ["SINGLE_TOOL_CALL", "THREE_DISTRACTION_TOOLS"],
    "b_3_distraction_tools_tool_name_scrambled": ["MULTIPLE_TOOL_CALL", "MULTIPLE_USER_TURN",
                                                  "THREE_DISTRACTION_TOOLS", "TOOL_NAME_SCRAMBLED"],
}


def test_scenarios_are_selected_by_name_category_or_seeded_sample():
    select = functools.partial(convert.select_scenarios, CATALOG, excluded={"web": "needs RapidAPI"})
    assert select() == list(CATALOG)
    assert select(ids=["b", "a"]) == ["b", "a"]
    assert select(split="single_tool_call") == ["a", "a_3_distraction_tools"]
    assert select(split="multiple_user_turn+TOOL_NAME_SCRAMBLED") == ["b_3_distraction_tools_tool_name_scrambled"]
    sample = select(count=2, seed=7)
    assert len(sample) == 2 and sample == select(count=2, seed=7)
    assert sample == [n for n in CATALOG if n in sample]  # the benchmark's order
    with pytest.raises(LookupError, match="cannot run here: needs RapidAPI"):
        select(ids=["web"])
    with pytest.raises(LookupError, match="unknown ToolSandbox scenario 'nope'"):
        select(ids=["nope"])
    with pytest.raises(LookupError, match="unknown ToolSandbox category 'canonicalisation'; accepted: "):
        select(split="canonicalisation")


def test_variant_names_lead_back_to_their_base_scenario():
    bases = ["cellular_off", "cellular_off_alt"]
    assert convert.base_name("cellular_off_3_distraction_tools_tool_name_scrambled", bases) == "cellular_off"
    assert convert.base_name("cellular_off_alt_all_tools", bases) == "cellular_off_alt"
    assert convert.base_name("cellular_off_alt", bases) == "cellular_off_alt"
    assert convert.user_task("... want User B to complete: Turn off wifi") == "Turn off wifi"


# ---- per-category aggregation, without ToolSandbox ------------------------------------------------

def _record(task, mode, score, turns, cats, status="ok"):
    return {"key": {"task_id": task, "mode": mode}, "status": status, "score": score, "turns": turns,
            "score_info": {"categories": cats, "turn_count": turns} if cats else {}}


def test_categories_aggregate_like_toolsandbox():
    records = [
        _record("a", "direct", 1.0, 3, CATALOG["a"]),
        _record("b", "direct", 0.5, 7, CATALOG["b"]),
        _record("a_3", "direct", 0.0, 5, CATALOG["a_3_distraction_tools"]),
        _record("b_s", "direct", 1.0, 9, CATALOG["b_3_distraction_tools_tool_name_scrambled"]),
        _record("x", "direct", None, None, None, status="error"),
        _record("a", "refine", 1.0, 3, CATALOG["a"]),
    ]
    out = categories.by_category(records)
    direct = out["direct"]
    assert list(direct)[0] == "ALL_CATEGORIES"
    assert direct["ALL_CATEGORIES"] == {"n": 4, "similarity": 0.625, "turn_count": 6.0}
    assert direct["THREE_DISTRACTION_TOOLS"] == {"n": 1, "similarity": 0.0, "turn_count": 5.0}  # scrambled skipped
    assert direct["TOOL_NAME_SCRAMBLED"]["n"] == 1
    assert direct["MULTIPLE_USER_TURN"] == {"n": 2, "similarity": 0.75, "turn_count": 8.0}
    assert out["refine"]["ALL_CATEGORIES"]["n"] == 1
    assert categories.by_category([_record("t", "direct", 1.0, 4, None)]) == {}  # τ²-style records
    table = categories.category_table(out)
    assert table.row_count == len(direct)


# ---- setup errors, without ToolSandbox -----------------------------------------------------------

def _envs_cli(*args, home):
    env = {**os.environ, "EVR_ENVS_HOME": str(home), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("TOOLSANDBOX_PYTHON", None)
    return subprocess.run([sys.executable, "-m", "runtime.envs", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def test_setup_with_a_bad_source_exits_2_naming_the_cause(tmp_path):
    missing = _envs_cli("setup", "toolsandbox", "--source", str(tmp_path / "nowhere"), home=tmp_path / "h")
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"error: ToolSandbox source {tmp_path / 'nowhere'} does not exist"
    (tmp_path / "empty").mkdir()
    empty = _envs_cli("setup", "toolsandbox", "--source", str(tmp_path / "empty"), home=tmp_path / "h")
    assert empty.returncode == 2 and "is not a ToolSandbox checkout" in empty.stderr
    assert len(empty.stderr.strip().splitlines()) == 1
    url = f"file://{tmp_path}/no-such-repo.git"
    clone = _envs_cli("setup", "toolsandbox", "--source", url, home=tmp_path / "h")
    assert clone.returncode == 2 and f"git clone {url} failed" in clone.stderr
    assert "does not appear to be a git repository" in clone.stderr


def test_the_fingerprint_follows_the_source_and_pins_not_leftovers(tmp_path):
    from envs.toolsandbox.setup import fingerprint

    src = tmp_path / "ToolSandbox"
    (src / "tool_sandbox").mkdir(parents=True)
    (src / "pyproject.toml").write_text('dependencies = ["openai==1.17.0"]\n')
    (src / "tool_sandbox" / "__init__.py").write_text("")
    first = fingerprint(src, "3.11.7")
    assert first == fingerprint(src, "3.11.7")
    for leftover in (".git/HEAD", "tool_sandbox/__pycache__/x.cpython-311.pyc", "build/lib/x.py",
                     "tool_sandbox.egg-info/PKG-INFO"):
        (src / leftover).parent.mkdir(parents=True, exist_ok=True)
        (src / leftover).write_text("noise")
    assert fingerprint(src, "3.11.7") == first
    assert fingerprint(src, "3.12.1") != first
    (src / "pyproject.toml").write_text('dependencies = ["openai==1.18.0"]\n')  # a pin changed
    assert fingerprint(src, "3.11.7") != first
    (src / "pyproject.toml").write_text('dependencies = ["openai==1.17.0"]\n')
    (src / "tool_sandbox" / "__init__.py").rename(src / "tool_sandbox" / "main.py")  # a file moved
    assert fingerprint(src, "3.11.7") != first


def test_an_env_server_that_fails_to_start_names_the_cause():
    from envs.toolsandbox.setup import SetupError, verify

    # Our own interpreter has no ToolSandbox: the server starts, then cannot build the benchmark.
    with pytest.raises(SetupError, match="did not start: startup failed: No module named 'tool_sandbox'"):
        verify(sys.executable, start_timeout=60)


def test_without_setup_the_environment_says_how_to_set_it_up(tmp_path, monkeypatch, validate):
    from envs import get_environment
    from envs.server_client import EnvUnavailableError

    monkeypatch.setenv("EVR_ENVS_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TOOLSANDBOX_PYTHON", raising=False)
    with pytest.raises(EnvUnavailableError, match=r"ToolSandbox is not set up .* `python -m runtime.envs setup toolsandbox --source"):
        get_environment("toolsandbox")
    status = _envs_cli("status", home=tmp_path / "home")
    assert status.returncode == 2 and "not set up" in status.stderr
    from testkit.scripted import register_script, text

    model = register_script("ts-unset", lambda request, context: text("hi"))
    code, records = validate("--env", "toolsandbox", "--model", model, "--tasks", "1")
    assert code == 2 and records == []


# ---- real scenarios, with ToolSandbox ------------------------------------------------------------

# ``ts_python`` and ``ts_env`` (tests/conftest.py) skip these without a set-up ToolSandbox.

VARIANTS = [
    "cellular_off_3_distraction_tools_tool_name_scrambled",
    "send_message_with_contact_content_cellular_off_3_distraction_tools_tool_name_scrambled",
    "remove_contact_by_phone_multiple_user_turn_3_distraction_tools_tool_name_scrambled",
    "update_contact_relationship_with_relationship_multiple_user_turn_3_distraction_tools_tool_name_scrambled",
    "wifi_off_10_distraction_tools",
    "turn_on_cellular_low_battery_mode_all_tools",
    "remove_contact_by_phone_3_distraction_tools_arg_type_scrambled",
    "add_contact_with_name_and_phone_number_3_distraction_tools_tool_description_scrambled",
]


def _name_maps(env, task_ids):
    maps = {t: env.task_info("default", t)["tool_name_map"] for t in task_ids}
    return maps.__getitem__


def _replay(tmp_path, env, task_ids, *, wrong=False, name="ts-gold"):
    from runtime.batch.threads import run_in_threads
    from runtime.episode.services import Services
    from runtime.episode.spec import RunSpec
    from runtime.llm.layer import ModelLayer, ModelSpec
    from runtime.folder.store import RunStore
    from testkit.toolsandbox_gold import ToolSandboxGold

    gold = ToolSandboxGold(_name_maps(env, task_ids), wrong=wrong)
    spec = ModelSpec(model=gold.model_name(name))
    layer = ModelLayer({"model": spec, "critic_model": spec, "judge_model": spec, "user_model": spec})
    run_spec = RunSpec(run_id=name, env=env.name, domain="default", task_ids=task_ids, modes=["direct"],
                       models=layer.specs, planner="none", concurrency=3)
    records = run_in_threads(run_spec, Services(env, layer, lambda m: None), RunStore(tmp_path / name))
    errors = [r for r in records if r.status == "error"]
    assert not errors, errors[0].error
    return {r.key.task_id: r for r in records}


@pytest.fixture(scope="module")
def gold_records(ts_env, tmp_path_factory):
    from testkit.toolsandbox_gold import GOLD

    return _replay(tmp_path_factory.mktemp("gold"), ts_env, list(GOLD) + VARIANTS)


def test_a_second_setup_of_the_same_source_keeps_the_venv(ts_python):
    from envs.toolsandbox import setup as ts

    record = ts.load_record()
    if not (record and record.get("fingerprint")) or os.environ.get(ts.PYTHON_VAR):
        pytest.skip("the ToolSandbox venv was not made by `runtime.envs setup` with a fingerprint")
    source = os.environ["TOOLSANDBOX_SOURCE"]
    lines: list[str] = []
    again = ts.setup(source, python=record.get("base_python", "python3"), home=Path(record["venv"]).parent,
                     say=lines.append)
    assert again["reused"] is True, lines
    assert again["python"] == record["python"] and again["fingerprint"] == record["fingerprint"]
    assert again["offline_scenarios"] == 728
    assert not any("installing" in line for line in lines), lines


def test_catalog_is_the_offline_scenarios_with_their_categories(ts_env):
    from envs.base import TaskSelection

    ids = ts_env.select(TaskSelection(domain="default"))
    assert len(ids) == 728
    base = ts_env.select(TaskSelection(domain="default", split="no_distraction_tools"))
    assert len(base) == 91
    assert ts_env.select(TaskSelection(domain="default", split="insufficient_information", count=3, seed=1)) == \
        ts_env.select(TaskSelection(domain="default", split="insufficient_information", count=3, seed=1))
    with pytest.raises(UnknownTaskError, match="needs RapidAPI"):
        ts_env.select(TaskSelection(domain="default", ids=["find_stock_symbol_with_company_name"]))
    with pytest.raises(UnknownTaskError, match="unknown ToolSandbox domain 'airline'"):
        ts_env.select(TaskSelection(domain="airline"))


def test_view_and_supervision_keep_the_boundary(ts_env):
    name = "send_message_with_contact_content_cellular_off_3_distraction_tools_tool_name_scrambled"
    view, supervision = ts_env.load("default", name)
    info = ts_env.task_info("default", name)
    assert view.opening_request is None and "Don't make assumptions" in view.policy
    assert set(view.tool_names) == set(info["tool_name_map"]) and "search_contacts" not in view.tool_names
    assert view.categories == info["categories"] and "TOOL_NAME_SCRAMBLED" in view.categories
    text = supervision.render()
    assert "Milestone 4 [after milestone 3]" in text and "+12453344098" in text
    assert "search_contacts" not in text  # the critic speaks in the agent's (scrambled) names
    assert "Fredrik Thordendal" in supervision.hidden_user_instructions
    assert ts_env.opening_request("default", name, None, 0).startswith("Send a message to Fredrik")


def test_reference_sequences_score_one_across_categories(gold_records):
    scores = {t: r.score for t, r in gold_records.items()}
    assert scores == {t: 1.0 for t in gold_records}, {t: s for t, s in scores.items() if s != 1.0}
    assert len(scores) >= 20
    covered = {c for r in gold_records.values() for c in r.score_info["categories"]}
    assert {"SINGLE_TOOL_CALL", "MULTIPLE_TOOL_CALL", "MULTIPLE_USER_TURN", "STATE_DEPENDENCY",
            "INSUFFICIENT_INFORMATION", "TOOL_NAME_SCRAMBLED", "CANONICALIZATION"} <= covered
    for record in gold_records.values():
        assert record.turns == record.score_info["turn_count"] and record.termination == "user_ended"


def test_wrong_sequences_score_lower_and_invented_information_scores_zero(ts_env, tmp_path):
    from testkit.toolsandbox_gold import WRONG

    records = _replay(tmp_path, ts_env, list(WRONG), wrong=True, name="ts-wrong")
    for task in ("cellular_off", "remove_contact_by_phone", "send_message_with_contact_content_cellular_off"):
        assert 0.0 < records[task].score < 1.0, (task, records[task].breakdown)
    for task in ("find_days_till_holiday_insufficient_information",
                 "send_message_with_contact_content_cellular_off_insufficient_information"):
        assert records[task].score == 0.0
        assert records[task].breakdown["minefield_similarity"] > 0  # a minefield went off


def test_per_category_summary_matches_toolsandbox_on_the_same_trajectories(gold_records, ts_python, tmp_path):
    from envs.toolsandbox import server_command

    results = [categories.result_of(r) for r in gold_records.values()]
    results[0] = {**results[0], "similarity": 0.25}  # make the means non-trivial
    results[-1] = {**results[-1], "turn_count": 30}
    ours = categories.aggregate(results)
    snippet = (
        "import json,sys\n"
        "from tool_sandbox.cli.utils import get_category_summary\n"
        "from tool_sandbox.common.execution_context import ScenarioCategories as C\n"
        "rs=json.load(sys.stdin)\n"
        "for r in rs: r['categories']=[C[c] for c in r['categories']]\n"
        "s=get_category_summary(rs)\n"
        "print(json.dumps({str(k):{m:sum(v)/len(v) for m,v in d.items()} for k,d in s.items()}))\n"
    )
    cmd = server_command(ts_python)
    out = subprocess.run([ts_python, "-c", snippet], input=json.dumps(results), capture_output=True,
                         text=True, env=cmd.environment(), timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    theirs = json.loads(out.stdout.strip().splitlines()[-1])
    assert set(theirs) == set(ours)
    for category, row in ours.items():
        assert row["similarity"] == pytest.approx(theirs[category]["similarity"])
        assert row["turn_count"] == pytest.approx(theirs[category]["turn_count"])


def test_our_call_strings_are_the_ones_toolsandbox_makes(ts_python):
    from envs.toolsandbox import server_command

    snippet = (
        "import json\n"
        "from openai.types.chat.chat_completion_message_tool_call import ChatCompletionMessageToolCall as T, Function\n"
        "from tool_sandbox.common.message_conversion import openai_tool_call_to_python_code as c2p, "
        "python_code_to_openai_tool_call as p2c\n"
        "from envs.toolsandbox import convert\n"
        "args={'content': \"How's it going\", 'year': None, 'on': True, 'ts': 1.5}\n"
        "call=T(id='call_1', type='function', function=Function(name='setting_5', arguments=json.dumps(args)))\n"
        "theirs=c2p(call, {'setting_5'}, execution_facing_tool_name='set_wifi_status')\n"
        "ours=convert.tool_call_to_code('call_1', 'set_wifi_status', convert.parse_arguments(json.dumps(args)))\n"
        "assert ours == theirs, (ours, theirs)\n"
        "back=p2c(ours, 'setting_5')\n"
        "assert json.loads(back.function.arguments) == args and back.id == 'call_1'\n"
        "print('same')\n"
    )
    cmd = server_command(ts_python)
    out = subprocess.run([ts_python, "-c", snippet], capture_output=True, text=True, env=cmd.environment(),
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip().endswith("same"), out.stderr[-2000:]


def test_a_killed_real_server_is_reported_not_hung(ts_python):
    import signal

    from envs import protocol as p
    from envs.server_client import EnvServer, ServerCrashed
    from envs.toolsandbox import server_command

    server = EnvServer(server_command(ts_python), start_timeout=300, reply_timeout=60)
    server.start()

    def agent(messages, tools):
        os.kill(server.pid, signal.SIGKILL)
        return {"role": "assistant", "content": "ok"}

    try:
        with pytest.raises(ServerCrashed, match="exited with code -9 during play"):
            server.request("play", p.PlayArgs(domain="default", task_id="wifi_off", opening_request="Turn off wifi"),
                           agent=agent, user=lambda *a: {"role": "assistant", "content": "bye"})
    finally:
        server.close()


def test_cli_refine_runs_toolsandbox_with_scripted_models(ts_env, validate, tmp_path, monkeypatch):
    from testkit.roles import ScriptedRoles
    from testkit.toolsandbox_gold import ToolSandboxGold

    tasks = ["cellular_off", "remove_contact_by_phone_multiple_user_turn_3_distraction_tools_tool_name_scrambled"]
    gold = ToolSandboxGold(_name_maps(ts_env, tasks))
    model = ScriptedRoles(act=gold).model_name("ts-cli-roles")
    monkeypatch.setenv("TOOLSANDBOX_SERVERS", "2")
    code, records = validate("--env", "toolsandbox", "--mode", "refine", "--model", model,
                             "--tasks", ",".join(tasks), "--concurrency", "2")
    assert code == 0
    assert sorted(r["key"]["task_id"] for r in records) == sorted(tasks)
    for r in records:
        assert r["status"] == "ok", r["error"]
        assert r["score"] == 1.0 and r["score_name"] == "similarity"
        assert r["p0"] and r["p1"] and r["critique"]
        assert r["score_info"]["categories"] and r["turns"] == r["score_info"]["turn_count"]
    summary = categories.by_category(records)["refine"]
    assert summary["ALL_CATEGORIES"] == {"n": 2, "similarity": 1.0, "turn_count": 5.0}


@pytest.mark.ray
def test_the_ray_backend_gives_the_threads_records_on_toolsandbox(ts_env, validate, tmp_path, monkeypatch):
    """ToolSandbox under ``--backend ray`` (a local instance, 2 workers, each starting its own
    env servers): the same records and scores as with threads, all three modes."""
    pytest.importorskip("ray", reason="the Ray backend needs Ray: pip install -e '.[ray]'")
    from runtime.backends import WORKER_SETUP, add_worker_setup, ray_backend
    from testkit.toolsandbox_gold import register_roles

    tasks = ["cellular_off", "wifi_off_10_distraction_tools",
             "remove_contact_by_phone_multiple_user_turn_3_distraction_tools_tool_name_scrambled"]
    setup = functools.partial(register_roles, "ts-ray-roles",
                              {t: ts_env.task_info("default", t)["tool_name_map"] for t in tasks})
    model = setup()
    monkeypatch.setenv("TOOLSANDBOX_SERVERS", "1")
    args = ["--env", "toolsandbox", "--mode", "all", "--model", model, "--tasks", ",".join(tasks),
            "--concurrency", "2", "--no-cache"]
    code_t, threads = validate(*args, out=tmp_path / "threads")
    add_worker_setup(setup)
    try:
        ray_backend.start_local(2)
        code_r, on_ray = validate(*args, "--backend", "ray", "--ray-workers", "2", out=tmp_path / "ray")
    finally:
        ray_backend.stop_local()
        WORKER_SETUP.remove(setup)
    assert code_t == code_r == 0
    assert len(threads) == len(on_ray) == 3 * len(tasks)

    assert comparable(on_ray) == comparable(threads)
    assert {r["score"] for r in on_ray} == {1.0}
