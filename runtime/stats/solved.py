"""The t-test sizes a plan needs, remembered between commands so a dry run answers at once.

Solving for the minimum detectable effect imports statsmodels and scipy (seconds) for numbers
that depend only on (units, α, power). Each answer is kept (``envs.facts``, keyed by the
installed statsmodels and scipy: another version makes it stale, never wrong), and the next
command with the same design reads it instead of importing them.
"""

from __future__ import annotations

from typing import Callable

from envs import facts

FACT = "t-test-sizes"
MOST = 4096
"""Answers kept; past it the oldest go (a plan asks for a few dozen)."""


def _key() -> str | None:
    from importlib import metadata

    try:
        return f"statsmodels {metadata.version('statsmodels')} scipy {metadata.version('scipy')}"
    except metadata.PackageNotFoundError:
        return None


def remembered(name: str, solve: Callable[[], float]) -> float:
    """``solve()``'s answer for the question ``name``, from an earlier command when it kept one."""
    key = _key()
    known = facts.read(FACT, key) or {}
    if isinstance(known.get(name), (int, float)):  # Python's JSON keeps inf as Infinity
        return float(known[name])
    value = float(solve())
    facts.write(FACT, key, {**dict(list(known.items())[-(MOST - 1):]), name: value})
    return value
