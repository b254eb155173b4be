"""Per-episode limits on tokens, cost and wall time, enforced at the model call.

Before every model call of an episode (after its opening request, which fixes the task's start
for every mode) the episode's meter and clock are checked; once a limit is reached the call is
refused with :class:`LimitReached`, an ``envs.TurnRefused``: the environment ends its play there
and scores it as it scores any unfinished episode (τ²: like a run out of steps, reward 0;
ToolSandbox: its evaluation of the conversation so far). A limit reached while planning or
critiquing skips to execution, whose first turn is refused. The record's ``termination`` names
the limit (``limit:tokens``, ``limit:cost``, ``limit:time``); it is an outcome, not an error.
The call that crosses a limit finishes: an episode stops within one call of it.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict

from envs.base import TurnRefused
from evrcore.chat import ChatModel, ChatReply
from runtime.llm.layer import Meter

TERMINATIONS = ("limit:tokens", "limit:cost", "limit:time")


class LimitReached(TurnRefused):
    """The episode spent one of its limits; ``termination`` says which."""


class EpisodeLimits(BaseModel):
    """What one episode may use; ``None``: no limit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_tokens: int | None = None
    max_cost: float | None = None
    timeout_s: float | None = None

    def any(self) -> bool:
        return any(v is not None for v in (self.max_tokens, self.max_cost, self.timeout_s))

    def reached(self, meter: Meter, started: float) -> str | None:
        """The termination of the first limit reached, or None."""
        if self.timeout_s is not None and time.perf_counter() - started >= self.timeout_s:
            return "limit:time"
        if self.max_tokens is None and self.max_cost is None:
            return None
        total = meter.total()  # answers replayed from the cache count as their first calls did
        if self.max_tokens is not None and total.used_tokens() >= self.max_tokens:
            return "limit:tokens"
        if self.max_cost is not None and total.used_cost_usd() >= self.max_cost:
            return "limit:cost"
        return None

    def describe(self, termination: str) -> str:
        if termination == "limit:tokens":
            return f"the episode used its {self.max_tokens} tokens"
        if termination == "limit:cost":
            return f"the episode spent its ${self.max_cost:g}"
        if termination == "limit:time":
            return f"the episode ran its {self.timeout_s:g} s"
        return termination


class LimitedClient:
    """A ``ChatModel`` that refuses its call once the episode reached a limit."""

    def __init__(self, inner: ChatModel, limits: EpisodeLimits, meter: Meter, started: float):
        self.inner = inner
        self.limits = limits
        self.meter = meter
        self.started = started

    def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> ChatReply:
        termination = self.limits.reached(self.meter, self.started)
        if termination:
            raise LimitReached(termination, self.limits.describe(termination))
        return self.inner.complete(messages, **kwargs)

    def __getattr__(self, name: str) -> Any:  # spec, purpose, ...: the wrapped client's
        return getattr(self.inner, name)
