"""The dry run's cost estimate counts every model call an episode makes, the environment's own
LLM judge included (τ³ grades NL assertions with gpt-4.1 once an episode)."""

from __future__ import annotations

import pytest

from runtime.llm.estimate import environment_judge, episode_estimate
from runtime.llm.roles import ROLES


def test_tau3_prices_its_nl_judge_and_tau2_has_none():
    assert environment_judge("tau2") is None and environment_judge("toolsandbox") is None
    assert environment_judge("tau3") == "gpt-4.1-2025-04-14"
    assert environment_judge("tau3", "openai/gpt-4o-mini") == "openai/gpt-4o-mini"
    assert environment_judge("tau3", "none") is None and environment_judge("tau3", "None") is None


def test_an_episode_with_the_nl_judge_costs_one_call_more_at_the_judges_price():
    roles = dict.fromkeys(ROLES, "openai/gpt-4o-mini")
    for mode in ("direct", "plan-first", "refine"):
        plain = episode_estimate(mode, roles)
        judged = episode_estimate(mode, roles, nl_judge="gpt-4.1-2025-04-14")
        assert judged.calls == plain.calls + 1
        # gpt-4.1 reads ~3,000 tokens at $2/M: about a cent more an episode, priced, not $0
        assert 0.003 < judged.cost_usd - plain.cost_usd < 0.03 and not judged.unpriced
    unknown = episode_estimate("direct", roles, nl_judge="someone/unknown-judge")
    assert unknown.unpriced == {"nl_judge_model": {"someone/unknown-judge"}}


def test_refines_calls_follow_its_critique_strategy():
    from runtime.llm.estimate import CALLS, refine_calls

    base = refine_calls("anti-leak")
    assert refine_calls(None) == base == CALLS["refine"]
    sealed = refine_calls("sealed")  # the critic alone: the rationale is rendered, no model call
    assert sealed == {**{k: v for k, v in base.items() if k != "critic"}, "sealed-critic": 1}
    tested = refine_calls("sealed", sealed_writer="tested")  # the tested model words it
    assert tested == {**sealed, "writer": 1}
    none = refine_calls("none")  # p1 = p0: no critique, no revision
    assert not {"critic", "auditor", "reviser"} & set(none) and none["executor"] == base["executor"]
    for unguarded in ("leaky", "critic-metric"):
        assert "auditor" not in refine_calls(unguarded) and refine_calls(unguarded)["critic"] == 1
    assert refine_calls("self-metric")["self-critic"] == 1 and "critic" not in refine_calls("self-metric")
    with pytest.raises(ValueError, match="accepted: .*anti-leak"):
        refine_calls("sealde")


def test_a_sealed_critique_costs_one_closed_answer_and_a_tested_writer_the_tested_models_price():
    from runtime.llm.prices import Price

    roles = {**dict.fromkeys(ROLES, "tested/model"), "critic_model": "critic/model"}
    prices = {"tested/model": Price.parse("1/2"), "critic/model": Price.parse("3/15")}
    free = episode_estimate("refine", roles, prices, strategy="anti-leak")
    sealed = episode_estimate("refine", roles, prices, strategy="sealed")
    assert sealed.calls == free.calls and not sealed.unpriced
    # the sealed critic answers enums (150 out instead of 400), on the critic's price; no writer
    assert sealed.cost_usd - free.cost_usd == pytest.approx(-250 * 15 / 1e6)
    # the optional writer reads the task view, p0 and the findings (7,500 in, 400 out) on the
    # tested model's price, never the critic's
    tested = episode_estimate("refine", roles, prices, strategy="sealed", sealed_writer="tested")
    assert tested.calls == free.calls + 1
    assert tested.cost_usd - sealed.cost_usd == pytest.approx((7500 * 1 + 400 * 2) / 1e6)
    unpriced = episode_estimate("refine", {**roles, "critic_model": "someone/unknown"}, prices, strategy="sealed")
    assert unpriced.unpriced == {"critic_model": {"someone/unknown"}}
