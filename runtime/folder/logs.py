"""Where τ²'s loguru chatter goes: errors to the console, everything to the run folder's
``run.log``. loguru is one process-wide logger, so the sinks this module adds are tracked by
name and replaced, never removed wholesale (``table3`` builds many runs into one folder: every
cell must reach its ``run.log``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

_SINKS: dict[str, int] = {}
"""Name → id of each sink added here (``console``, or a ``run.log`` path)."""


def quiet_loguru() -> None:
    """τ² logs through loguru, verbosely from import on: only errors reach the console."""
    from loguru import logger

    from runtime.folder.scrub import scrub

    if not _SINKS:
        logger.remove()  # loguru's own console sink, once
    _replace("console", lambda: logger.add(lambda message: sys.stderr.write(scrub(str(message))),
                                           level="ERROR"))


def log_to(out: Path) -> None:
    """Keep τ²'s chatter in ``<out>/run.log`` (one sink per folder, however many runs use it)."""
    from loguru import logger

    from runtime.folder.scrub import ScrubbedFileSink

    path = (Path(out) / "run.log").resolve()
    _replace(str(path), lambda: logger.add(ScrubbedFileSink(path).write, level="INFO"))


def _replace(name: str, add: Callable[[], int]) -> None:
    from loguru import logger

    old = _SINKS.pop(name, None)
    if old is not None:
        try:
            logger.remove(old)
        except ValueError:
            pass  # already removed (e.g. by a test's fixture)
    _SINKS[name] = add()
