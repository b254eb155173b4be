"""Per-call timing trace of the embedded model (``LOCAL_LLM_TRACE=<file>``), for profiling.

Why: a run's wall time on a small local model splits into prompt reading, generation and
sampling (grammar) overhead, and which of them dominates decides what to cut. llama.cpp's own
performance counters give the first two exactly; the rest of a call's wall time is sampling,
grammar and Python. One JSON line per call, appended; ``bench/embedded_run.py`` sums them by
stage. Nothing of the prompt or the answer is written, only counts and times.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any

import llama_cpp

TRACE_ENV = "LOCAL_LLM_TRACE"
_write_lock = threading.Lock()


@dataclass
class CallTrace:
    purpose: str
    prompt_tokens: int
    reused_tokens: int
    prompt_eval_tokens: int
    prompt_eval_s: float
    completion_tokens: int
    generation_s: float
    total_s: float
    grammar: bool
    max_tokens: int


class CallTimer:
    """Reads llama.cpp's counters around one completion (a no-op when tracing is off)."""

    def __init__(self, llm: llama_cpp.Llama) -> None:
        self.path = os.environ.get(TRACE_ENV)
        self.llm = llm

    def __enter__(self) -> CallTimer:
        if self.path:
            llama_cpp.llama_perf_context_reset(self.llm._ctx.ctx)
            self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def write(self, purpose: str, usage: dict[str, int], grammar: bool, max_tokens: int) -> None:
        if not self.path:
            return
        total = time.perf_counter() - self.start
        perf = llama_cpp.llama_perf_context(self.llm._ctx.ctx)
        prompt = int(usage["prompt_tokens"])
        # Prompt batches of more than one token count as prompt eval, single tokens as eval;
        # the generated tokens are all single-token decodes.
        trace = CallTrace(
            purpose=purpose,
            prompt_tokens=prompt,
            reused_tokens=max(0, prompt - int(perf.n_p_eval)),
            prompt_eval_tokens=int(perf.n_p_eval),
            prompt_eval_s=round(perf.t_p_eval_ms / 1000, 4),
            completion_tokens=int(usage["completion_tokens"]),
            generation_s=round(perf.t_eval_ms / 1000, 4),
            total_s=round(total, 4),
            grammar=grammar,
            max_tokens=max_tokens,
        )
        with _write_lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(asdict(trace)) + "\n")
