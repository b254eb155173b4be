"""The dry run's cost estimate counts every model call an episode makes, the environment's own
LLM judge included (τ³ grades NL assertions with gpt-4.1 once an episode)."""

from __future__ import annotations

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
