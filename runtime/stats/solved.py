"""The t-test sizes a plan needs, remembered between commands so a dry run answers at once.

Solving for the minimum detectable effect imports statsmodels and scipy (seconds) for numbers
that depend only on (units, α, power). The answers are kept (``envs.facts``, keyed by the
installed statsmodels and scipy: another version makes them stale, never wrong): read once a
process, and the new ones written once, when the process exits, so a caller that solves
thousands of designs (a calibration, a power search) pays no file write per answer.
"""

from __future__ import annotations

import atexit
import threading
from typing import Callable

from envs import facts

FACT = "t-test-sizes"
MOST = 4096
"""Answers kept; past it the oldest go (a plan asks for a few dozen)."""

_known: dict[str, float] | None = None
_new = False
_lock = threading.Lock()


def _key() -> str | None:
    from importlib import metadata

    try:
        return f"statsmodels {metadata.version('statsmodels')} scipy {metadata.version('scipy')}"
    except metadata.PackageNotFoundError:
        return None


def remembered(name: str, solve: Callable[[], float]) -> float:
    """``solve()``'s answer for the question ``name``, from an earlier command when it kept one."""
    global _known, _new
    with _lock:
        if _known is None:
            _known = dict(facts.read(FACT, _key()) or {})
        found = _known.get(name)
    if isinstance(found, (int, float)):  # Python's JSON keeps inf as Infinity
        return float(found)
    value = float(solve())
    with _lock:
        _known[name] = value
        if not _new:
            _new = True
            atexit.register(_write)
    return value


def _write() -> None:
    with _lock:
        kept = dict(list(_known.items())[-MOST:]) if _known else {}
    facts.write(FACT, _key(), kept)
