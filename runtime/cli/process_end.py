"""End a command's process at once when it is done, without the interpreter's teardown.

Once a command has finished (records, summary and report written), the interpreter would still
free every object of litellm, LangGraph, τ² and the parsed databases one by one: 1–2 s on an
idle 2-core machine, 5–8 s under load, often longer than the rest of a small run's end. ``end``
does what that teardown does that anyone can observe — it waits for the threads, runs the exit
handlers (loguru's and logging's sinks, litellm's log flush, Ray's shutdown) and flushes stdout
and stderr — then ends the process with the command's exit code. The env server ends the same
way (``envs.protocol.main``). In-process callers of ``main()`` (the tests) never reach it.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def end(code: int | None) -> NoReturn:
    # The interpreter's own order at exit: threads (concurrent.futures' idle workers are woken
    # by the hooks this runs), then the exit handlers, then the standard streams. Both calls are
    # CPython's, the ones its finalisation makes; there is no public spelling of either.
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)
