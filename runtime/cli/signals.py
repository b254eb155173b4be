"""SIGTERM ends a command the way Ctrl-C does: ``Terminated`` (a ``KeyboardInterrupt``) is
raised in the main thread, so every handler that closes environments, writes a summary true to
the records and prints one line serves both; the exit code tells them apart (130 for SIGINT,
143 for SIGTERM, the shell's 128 + signal number). While a command finishes up after one of
them, further SIGINT/SIGTERM are held off so the one line is not turned into a traceback.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

INTERRUPTED_EXIT = 130
TERMINATED_EXIT = 143


class Terminated(KeyboardInterrupt):
    """The process was sent SIGTERM."""


def _on_term(signum, frame) -> None:  # noqa: ARG001 - the signal module's signature
    raise Terminated()


def install() -> None:
    """SIGTERM → ``Terminated`` in the main thread (elsewhere: nothing to install)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_term)


def exit_code(exc: BaseException) -> int:
    return TERMINATED_EXIT if isinstance(exc, Terminated) else INTERRUPTED_EXIT


def word(exc: BaseException) -> str:
    return "terminated" if isinstance(exc, Terminated) else "interrupted"


@contextmanager
def held() -> Iterator[None]:
    """Ignore SIGINT and SIGTERM for the block (the main thread's finishing-up)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
