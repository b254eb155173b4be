"""What one episode costs before it runs: rough per-mode call counts and token sizes, priced by
``runtime.llm.prices``. For dry runs and power plans only; a run counts what it really spends."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from runtime.llm.prices import Price, price_of
from runtime.llm.roles import PURPOSES

CALLS = {"direct": {"executor": 12, "user": 8},
         "plan-first": {"planner": 1, "judge": 1, "executor": 12, "user": 8},
         "refine": {"planner": 0, "judge": 1, "critic": 1, "auditor": 1, "reviser": 1, "executor": 12, "user": 8}}
CALLS["plan-first-aa"] = CALLS["plan-first"]
"""Rough model calls per episode and purpose (Refine reuses Plan-first's p0; the A/A arm makes
its own)."""
# critic and judge read the full tool schemas and a reference plan beside the policy: about 30,000
# characters on airline and retail with an empty plan (the executor's policy and tools: 7,000 tokens)
TOKENS = {"planner": (5000, 500), "reviser": (6000, 500), "critic": (8500, 400), "judge": (8500, 300), "auditor": (2500, 60),
          "executor": (7000, 150), "user": (1500, 60), "nl_judge": (3000, 250),
          "sealed-critic": (8500, 150), "writer": (7500, 400)}
"""Rough (prompt, completion) tokens per call and purpose (the NL judge reads the conversation
and the task's assertions once, at scoring). The sealed critic reads what the critic reads but
answers only enums and bounded integers; its writer reads the task view, p0 and the findings (no
supervision, no reference plan) and writes the rationale."""


def refine_calls(strategy: str | None = None, sealed_writer: str = "rendered") -> dict[str, int]:
    """Refine's rough calls under a critique ``strategy`` (None: the default, ``anti-leak``):
    ``none`` makes no critique and no revision; a self-critique is the tested model's; only a
    guarded rationale is read by the leak auditor; ``sealed`` critiques in one call (its
    rationale rendered with no model), two with ``sealed_writer`` ``tested``."""
    from critique.strategies import DEFAULT_STRATEGY, STRATEGIES

    calls = dict(CALLS["refine"])
    chosen = STRATEGIES.get(strategy or DEFAULT_STRATEGY)
    if chosen is None:
        raise ValueError(f"unknown critique strategy {strategy!r}; accepted: {', '.join(STRATEGIES)}")
    if chosen.settings is None:  # p1 = p0
        return {k: v for k, v in calls.items() if k not in ("critic", "auditor", "reviser")}
    if not (chosen.settings.guarded and chosen.settings.sees_supervision):
        del calls["auditor"]
    if chosen.critic_role == "model":
        calls["self-critic"] = calls.pop("critic")
    if chosen.name == "sealed":  # the critic; a writer call only where the tested model words it
        calls["sealed-critic"] = calls.pop("critic")
        if sealed_writer == "tested":
            calls["writer"] = 1
    return calls


def environment_judge(env: str, named: str | None = None) -> str | None:
    """The model the environment's own LLM judge calls once an episode (τ³'s NL assertions: its
    release's model unless ``--nl-judge-model`` names one), for pricing; None where the
    environment has no judge or the run leaves its assertions ungraded (``none``)."""
    from envs.registry import ENVIRONMENTS

    spec = ENVIRONMENTS.get(env)
    if spec is None or spec.nl_judge is None or (named is not None and named.lower() == "none"):
        return None
    return named or spec.nl_judge


@dataclass
class EpisodeEstimate:
    calls: int = 0
    cost_usd: float = 0.0
    unpriced: dict[str, set[str]] = field(default_factory=dict)
    """role → models with no known price (their calls counted at $0)."""


def episode_estimate(mode: str, roles: Mapping[str, str], prices: Mapping[str, Price] | None = None, *,
                     judge: bool = True, auditor: bool = True, nl_judge: str | None = None,
                     strategy: str | None = None, sealed_writer: str = "rendered") -> EpisodeEstimate:
    """One episode of ``mode`` with ``roles`` (role → model) answering; ``nl_judge``: the model
    grading the environment's NL assertions (τ³), one call per episode, None where none does;
    ``strategy``: Refine's critique strategy (``refine_calls``)."""
    out = EpisodeEstimate()
    calls = refine_calls(strategy, sealed_writer) if mode == "refine" else dict(CALLS[mode])
    tokens = {**TOKENS, "self-critic": TOKENS["critic"]}
    if nl_judge is not None:
        calls["nl_judge"] = 1
        roles = {**roles, PURPOSES["nl_judge"].role: nl_judge}
    for purpose, count in calls.items():
        if (purpose == "judge" and not judge) or (purpose == "auditor" and not auditor):
            continue
        out.calls += count
        role = PURPOSES[purpose].role
        model = roles[role]
        price = price_of(model, prices)
        if price is None:
            out.unpriced.setdefault(role, set()).add(model)
            continue
        p_in, p_out = price.per_token()
        t_in, t_out = tokens[purpose]
        out.cost_usd += count * (t_in * p_in + t_out * p_out)
    return out


CHARS_PER_TOKEN = 4
"""A request's prompt tokens, roughly, from its size: English text and JSON run at about four
characters a token in the tokenizers of the hosted models."""


def call_estimate(model: str, price: tuple[float, float] | None, purpose: str,
                  request: Mapping[str, object]) -> float:
    """What one request costs, before its answer says: its messages and tools at
    ``CHARS_PER_TOKEN``, and its ``max_tokens`` (else the purpose's usual answer, ``TOKENS``)
    for the completion, at ``price`` (USD per million, the user's) or litellm's price of
    ``model``; $0 for a model nobody prices. A call in flight is counted at this until its
    answer is known (``runtime.backends.ray_ledger``), so ``--max-cost`` is not one call
    behind per request in flight."""
    import json

    per_million = Price(input=price[0], output=price[1]) if price is not None else price_of(model)
    if per_million is None:
        return 0.0
    sent = {k: request.get(k) for k in ("messages", "tools") if request.get(k)}
    prompt = len(json.dumps(sent, default=str)) // CHARS_PER_TOKEN
    answer = request.get("max_tokens") or TOKENS.get(purpose, (0, 500))[1]
    return per_million.cost(prompt, int(answer))  # type: ignore[call-overload]
