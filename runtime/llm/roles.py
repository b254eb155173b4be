"""Who calls a model: the one vocabulary of roles and purposes.

A *role* is a configured model (``--model``, ``--critic-model``, ...): the model layer holds one
spec per role. A *purpose* is why a call is made (the planner writing ``p0``, the simulated user
answering, ...): meters, the response cache, the progress bar and budgets are kept by purpose.
Every purpose belongs to one role. A role nobody configured falls back along :data:`FALLBACK`
(critic → tested model, judge → critic, auditor → judge, user → tested model).

Everything else (the composition root's model specs, the dry-run's cost estimate, the progress
bar's words, the embedded model's answer budgets) derives from the tables here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

ROLES = ("model", "critic_model", "judge_model", "auditor_model", "user_model")
"""The configured models, in the order they fall back (each falls back to an earlier one)."""

BENCHMARK_ROLES = ("nl_judge_model",)
"""Models a benchmark's own evaluator asks for (τ³'s NL-assertion judge), answered by the
model layer like any role but outside the run's fallbacks: the composition root configures one
only for an environment whose evaluator has such a judge, defaulting to the benchmark's model."""

FALLBACK = {"critic_model": "model", "judge_model": "critic_model", "auditor_model": "judge_model",
            "user_model": "model"}
"""The role a role nobody configured takes its model from (``model`` has none: the caller's
default, the embedded model)."""


@dataclass(frozen=True)
class Purpose:
    """One reason to call a model: the role whose model answers, what it means to a person
    watching the progress bar, and its answer budget on the embedded model (``None``: the
    embedded default)."""

    role: str
    words: str
    embedded_max_tokens: int | None


PURPOSES = {
    "user": Purpose("user_model", "simulated user", 64),
    "executor": Purpose("model", "executing the plan", 128),
    "judge": Purpose("judge_model", "judging a plan", 128),
    "critic": Purpose("critic_model", "critiquing p0", 160),
    "self-critic": Purpose("model", "critiquing p0", 160),
    "sealed-critic": Purpose("critic_model", "critiquing p0 (sealed)", 320),
    "writer": Purpose("model", "wording a sealed critique", 160),  # never the critic's: it could share a code
    "planner": Purpose("model", "writing plan p0", 256),
    "reviser": Purpose("model", "revising p0 into p1", 256),
    "auditor": Purpose("auditor_model", "checking a critique for leaks", None),
    "nl_judge": Purpose("nl_judge_model", "grading NL assertions", None),
}

EMBEDDED_STAGE_MAX_TOKENS = {name: p.embedded_max_tokens for name, p in PURPOSES.items()
                             if p.embedded_max_tokens is not None}
"""Answer budgets per purpose on the embedded model (unless ``--max-tokens`` is given). Generating
is where its time goes (about 20 tokens a second), and SmolLM2 rarely stops on its own: it
fills whatever budget it gets. A user turn or a tool call needs a sentence; a plan, a few; a
sealed critic's closed answer with six findings about 230 tokens, whitespace included."""


def critique_purpose(critic_role: str) -> str:
    """The purpose of a critique made by ``critic_role``: the critic's, or the tested model's
    own (``self-critic``)."""
    return next(name for name in ("critic", "self-critic") if PURPOSES[name].role == critic_role)


def resolve(configured: Mapping[str, str | None], default: str) -> dict[str, str]:
    """The model of every role: as configured, else its :data:`FALLBACK`'s, with ``default``
    for an unconfigured ``model``."""
    unknown = set(configured) - set(ROLES)
    if unknown:
        raise ValueError(f"unknown model roles {sorted(unknown)}; accepted: {list(ROLES)}")
    models: dict[str, str] = {}
    for role in ROLES:  # in fallback order: a role's fallback is resolved before it
        models[role] = configured.get(role) or (models[FALLBACK[role]] if role in FALLBACK else default)
    return models


def any_configured(configured: Mapping[str, str | None]) -> bool:
    """Whether any role has a model of its own (else every role uses the default)."""
    return any(configured.get(role) for role in ROLES)


def endpoint(role: str, api_base: str | None, critic_api_base: str | None,
             user_api_base: str | None) -> str | None:
    """The endpoint a role's calls go to: ``--api-base`` for the tested model, ``--user-api-base``
    (else ``--api-base``) for the user, ``--critic-api-base`` (else ``--api-base``) for the
    critic, judge and auditor."""
    if role == "model":
        return api_base
    if role == "user_model":
        return user_api_base or api_base
    return critic_api_base or api_base

