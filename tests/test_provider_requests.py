"""What the runtime sends is valid for every provider by construction, not by litellm's luck:
conversations open as the provider requires, tools without arguments are declared in the one
form every provider takes, and the JSON schemas of the schema-constrained roles (planner,
reviser, critic, judge, auditor) reach each provider inside its documented subset with every
constraint still in place. Each check is shown to bite: the same request sent straight through
litellm, without the runtime's rules, is refused.
"""

from __future__ import annotations

import importlib

import litellm
import pytest

from runtime.llm.layer import Meter, ModelLayer, ModelSpec
from runtime.llm.provider_rules import OPENING_USER_TURN, portable_messages, portable_tools
from tests.provider_fakes import FAKES, MODELS, Answer, schema_rules
from tests.provider_fakes.gold import instance
from tests.test_provider_answers import CONVERSATION, TOOLS

SCHEMA_MODULES = ("evrcore.plan", "evrcore.critique", "critique.judge", "critique.guard.auditor",
                  "critique.critic", "planners.llm")


def runtime_schemas() -> dict[str, dict]:
    """Every ``*_JSON_SCHEMA`` the roles send, read from the code as it is (not copied here)."""
    found = {}
    for name in SCHEMA_MODULES:
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if attr.endswith("_JSON_SCHEMA") and isinstance(value, dict):
                found.setdefault(attr, value)
    return found


SCHEMAS = runtime_schemas()


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    for name in ("GEMINI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DASHSCOPE_API_KEY"):
        monkeypatch.setenv(name, "test-key-000")


def role(fake, provider: str, purpose: str = "executor"):
    layer = ModelLayer({"model": ModelSpec(MODELS[provider], api_base=fake.api_base, max_tokens=256)},
                       retries=0)
    return layer.client("model", purpose, Meter())


def test_the_roles_schemas_are_found():
    assert {"PLAN_JSON_SCHEMA", "CRITIQUE_JSON_SCHEMA", "FREE_CRITIQUE_JSON_SCHEMA",
            "JUDGE_JSON_SCHEMA", "AUDIT_JSON_SCHEMA"} <= set(SCHEMAS)


@pytest.mark.parametrize("provider", sorted(FAKES))
def test_an_agent_first_conversation_with_an_argumentless_tool_is_accepted(provider):
    with FAKES[provider](lambda turn: Answer(text="ok")) as fake:
        reply = role(fake, provider).complete(CONVERSATION, tools=TOOLS)
    assert reply.content == "ok" and not fake.refusals
    assert set(fake.turns[0].tools) == {"get_order", "list_all_product_types"}


@pytest.mark.parametrize("provider,rule", [("anthropic", "user_first"), ("gemini", "user_first")])
def test_without_the_opening_turn_the_provider_refuses(provider, rule):
    with FAKES[provider](lambda turn: Answer(text="ok")) as fake:
        with pytest.raises(litellm.exceptions.BadRequestError):
            litellm.completion(model=MODELS[provider], api_base=fake.api_base, messages=CONVERSATION,
                               max_tokens=64, max_retries=0)
    assert [r.rule for r in fake.refusals] == [rule]


def test_without_portable_tools_gemini_refuses_an_argumentless_tool():
    with FAKES["gemini"](lambda turn: Answer(text="ok")) as fake:
        with pytest.raises(litellm.exceptions.BadRequestError):
            litellm.completion(model=MODELS["gemini"], api_base=fake.api_base,
                               messages=CONVERSATION[2:], tools=TOOLS, max_retries=0)
    assert [r.rule for r in fake.refusals] == ["object_properties"]


def test_the_opening_turn_is_added_only_where_required():
    assert portable_messages("openai/gpt-4o", CONVERSATION) == CONVERSATION
    fixed = portable_messages("anthropic/claude-sonnet-4-5", CONVERSATION)
    assert fixed[1] == {"role": "user", "content": OPENING_USER_TURN} and fixed[2:] == CONVERSATION[1:]
    user_first = [CONVERSATION[0], CONVERSATION[2]]
    assert portable_messages("gemini/gemini-2.5-pro", user_first) == user_first
    declared = portable_tools("gemini/gemini-2.5-pro", TOOLS)
    assert "parameters" not in declared[1]["function"] and declared[0] == TOOLS[0]
    # elsewhere the benchmark's own declaration goes out unchanged (what `tau2 run` sends)
    assert portable_tools("openai/gpt-4o", TOOLS) == TOOLS
    assert portable_tools("anthropic/claude-sonnet-4-5", TOOLS) == TOOLS


def _judge_loses_constraints_on(provider: str) -> bool:
    """Anthropic's structured outputs take no ``minItems`` above 1 nor ``maxItems``: litellm
    moves them into a description, so a fixed-length flag list is not enforced there. True while
    the judge's schema still has such a list."""
    judge = SCHEMAS["JUDGE_JSON_SCHEMA"]
    return provider == "anthropic" and any(
        "maxItems" in node or node.get("minItems", 0) > 1 for _, node in schema_rules.nodes(judge))


CASES = [(p, s) for p in sorted(FAKES) for s in sorted(SCHEMAS)]

ADVISORY = {"PLAN_JSON_SCHEMA": {"properties.tool_chain.maxItems"}}
"""Constraints a provider may drop because the runtime does not rely on them: ``Plan`` takes a
chain of any length (the cap keeps constrained decoding on the embedded model short)."""


def test_advisory_constraints_are_not_relied_on():
    from evrcore.plan import Plan

    long_chain = {"plan": "p", "tool_chain": [{"name": "t", "parameter_description": "", "reason": ""}] * 13}
    assert len(Plan.from_apb(long_chain).tool_chain) == 13


@pytest.mark.parametrize("provider,schema_name", [
    pytest.param(p, s, marks=pytest.mark.xfail(
        s == "JUDGE_JSON_SCHEMA" and _judge_loses_constraints_on(p), strict=True,
        reason="the judge's error_list length is not enforceable on Anthropic: a list of six "
               "flags must become an object of six booleans"))
    for p, s in CASES])
def test_each_roles_schema_reaches_the_provider_whole(provider, schema_name):
    schema = SCHEMAS[schema_name]
    with FAKES[provider](lambda turn: Answer(text="{}")) as fake:
        role(fake, provider, "critic").complete([{"role": "user", "content": "Answer in JSON."}],
                                                json_schema=schema)
    assert not fake.refusals, fake.refusals[0].message
    wire = fake.turns[0].schema
    lost = set(schema_rules.dropped(schema, wire)) - ADVISORY.get(schema_name, set())
    assert not lost, f"constraints the provider will not enforce: {sorted(lost)}"
    if provider == "gemini":
        assert schema_rules.gemini_ignored(wire) == []


@pytest.mark.parametrize("schema_name", sorted(SCHEMAS))
def test_a_perfect_answer_to_each_schema_passes_the_runtimes_own_parsing(schema_name):
    """The gold script's answers (``instance``) are valid for the runtime's parsers, so an
    end-to-end run that fails cannot blame the script."""
    from critique.guard.auditor import AuditAnswer
    from critique.judge import PlanJudgement
    from evrcore.critique import Critique, FreeCritique
    from evrcore.plan import Plan

    parsers = {"PLAN_JSON_SCHEMA": Plan.from_apb, "CRITIQUE_JSON_SCHEMA": Critique.model_validate,
               "FREE_CRITIQUE_JSON_SCHEMA": FreeCritique.model_validate,
               "JUDGE_JSON_SCHEMA": PlanJudgement.model_validate,
               "AUDIT_JSON_SCHEMA": AuditAnswer.model_validate}
    if schema_name not in parsers:
        pytest.skip(f"{schema_name} has no parser named here")
    assert parsers[schema_name](instance(SCHEMAS[schema_name])) is not None


def test_the_subset_check_sees_a_dropped_constraint():
    original = {"type": "object", "properties": {"a": {"type": "array", "minItems": 6, "maxItems": 6}}}
    moved = {"type": "object", "properties": {"a": {"type": "array", "description": "6 items"}}}
    assert schema_rules.dropped(original, moved) == ["properties.a.minItems", "properties.a.maxItems"]
