"""Per-provider caps on model calls in flight: a user's rate limit is per provider, not per thread.

A limiter hands out *slots* keyed by provider. :class:`LocalLimiter` holds them in this process
(the threads backend); the Ray backend plugs in a client of one limiter actor, so the cap holds
across every worker of a run. The model layer asks for a slot around each provider call (cache
hits take none).
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Iterator, Protocol

if TYPE_CHECKING:  # the model layer asks this module for slots; the spec is only its argument
    from runtime.llm.layer import ModelSpec


class Limiter(Protocol):
    def slot(self, provider: str) -> AbstractContextManager[None]: ...


def provider_of(spec: ModelSpec) -> str:
    """What a rate limit applies to: the endpoint when one is given, else litellm's provider."""
    if spec.api_base:
        return spec.api_base.rstrip("/")
    return spec.model.split("/", 1)[0] if "/" in spec.model else "openai"


class LocalLimiter:
    """At most ``limit`` calls per provider at once among this process's threads."""

    def __init__(self, limit: int):
        self.limit = limit
        self._sems: dict[str, threading.BoundedSemaphore] = {}
        self._guard = threading.Lock()

    @contextmanager
    def slot(self, provider: str) -> Iterator[None]:
        with self._guard:
            sem = self._sems.setdefault(provider, threading.BoundedSemaphore(self.limit))
        with sem:
            yield
