"""Which API keys a model needs, asked of litellm once and remembered for the next command.

``check_credentials`` (``runtime.llm.layer``) asks litellm whether a model's keys are in the
environment; litellm takes seconds to import. The names it reported missing (never a value)
are remembered (``envs.facts``, keyed by litellm's version), so the next command with the
same model and the same keys still absent refuses at once with the same line, before the
heavy imports. Only a refusal is taken early: when any remembered key is now set, or nothing
is remembered, the full check decides.
"""

from __future__ import annotations

import os
from typing import Mapping

from envs import facts

FACT = "missing-keys"
NO_KEY_NEEDED = ("local/", "scripted/", "ollama", "hosted_vllm/")
"""Model prefixes that never need a provider key (an embedded, scripted or self-hosted model)."""


def needs_check(model: str, api_base: str | None) -> bool:
    """Whether a model's provider key is checked at all (an ``api_base`` endpoint brings its own)."""
    return not api_base and not model.startswith(NO_KEY_NEEDED)


def missing_message(model: str, missing: list[str]) -> str:
    return (f"model {model!r} needs {', '.join(missing)} in the environment "
            "(or pass --api-base for an OpenAI-compatible server)")


def _key() -> str | None:
    from importlib import metadata

    try:
        return f"litellm {metadata.version('litellm')}"
    except metadata.PackageNotFoundError:
        return None


def remember_missing(model: str, missing: list[str]) -> None:
    """Keep the names litellm reported missing for ``model`` (an empty list: none missing)."""
    key = _key()
    known = facts.read(FACT, key) or {}
    if known.get(model) != missing:
        facts.write(FACT, key, {**known, model: list(missing)})


def still_missing(model: str, environ: Mapping[str, str] | None = None) -> list[str] | None:
    """The keys remembered missing for ``model`` when every one of them is still unset (the
    full check would refuse the same way), else None (nothing remembered, or a key was set)."""
    env = os.environ if environ is None else environ
    missing = (facts.read(FACT, _key()) or {}).get(model)
    if not missing or any(env.get(name) for name in missing):
        return None
    return list(missing)
