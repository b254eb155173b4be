"""The model layer: every model call of every role goes through here, and through litellm.

One place adds what a long benchmark run needs around a chat completion:

* roles (``model``, ``critic_model``, ``judge_model``, ``user_model``) each with its own
  litellm model name, endpoint and sampling settings;
* retries with exponential backoff on rate limits, 5xx, connection errors and timeouts;
* an on-disk response cache keyed on the whole request (so a re-run costs nothing);
* token and cost totals per episode (a :class:`Meter`);
* observers that see every request (tests use them to prove no supervision leaks).

API keys come from the environment through litellm and are never part of a request we store,
a cache key, a record or a log line.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
import random
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402

from evrcore.chat import ChatReply  # noqa: E402

litellm.suppress_debug_info = True
litellm.drop_params = True

ROLES = ("model", "critic_model", "judge_model", "user_model")
"""``model`` is the tested model: planner, reviser and executor."""

CALL_CONTEXT: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar(
    "runtime_call_context", default={}
)
"""Who is calling (role, purpose, task, trial). Never sent to a provider; in-process test
doubles read it to know which script to replay."""

UNCACHED_PROVIDERS = ("scripted/",)
"""Test doubles answer from a script, not from the request alone: caching them would be wrong."""


class ModelError(RuntimeError):
    """A model call failed for good (after retries, or with an error retrying cannot fix)."""


class ModelConfigError(ValueError):
    """A model cannot be used as configured (e.g. its provider's API key is missing)."""


@dataclass(frozen=True)
class ModelSpec:
    """How one role reaches its model."""

    model: str
    api_base: str | None = None
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout: float = 300.0
    stage_max_tokens: tuple[tuple[str, int], ...] = ()
    """Answer budgets by purpose (``("user", 64), ...``) that replace ``max_tokens`` for those
    purposes: a slow local model spends most of its time generating, and a user turn needs far
    fewer tokens than a plan."""

    def max_tokens_for(self, purpose: str) -> int | None:
        return dict(self.stage_max_tokens).get(purpose, self.max_tokens)

    def public(self) -> dict[str, Any]:
        out = {
            "model": self.model,
            "api_base": self.api_base,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.stage_max_tokens:
            out["stage_max_tokens"] = dict(self.stage_max_tokens)
        return out


@dataclass
class RoleUsage:
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0


@dataclass
class Meter:
    """Token, cost and time totals for one episode, by purpose (planner, critic, executor, ...)."""

    by_purpose: dict[str, RoleUsage] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, purpose: str, usage: RoleUsage) -> None:
        with self._lock:
            total = self.by_purpose.setdefault(purpose, RoleUsage())
            for name in ("calls", "cached_calls", "prompt_tokens", "completion_tokens"):
                setattr(total, name, getattr(total, name) + getattr(usage, name))
            total.cost_usd += usage.cost_usd
            total.seconds += usage.seconds

    def as_dict(self) -> dict[str, Any]:
        purposes = {k: vars(v).copy() for k, v in self.by_purpose.items()}
        totals = RoleUsage()
        for v in self.by_purpose.values():
            totals.calls += v.calls
            totals.cached_calls += v.cached_calls
            totals.prompt_tokens += v.prompt_tokens
            totals.completion_tokens += v.completion_tokens
            totals.cost_usd += v.cost_usd
            totals.seconds += v.seconds
        return {"total": vars(totals).copy(), "by_purpose": purposes}


class ResponseCache:
    """A SQLite file mapping a request's hash to the reply. Safe across threads."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, reply TEXT)")
        self._db.commit()
        self._lock = threading.Lock()

    @staticmethod
    def key(request: dict[str, Any]) -> str:
        return hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode()).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT reply FROM replies WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, reply: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO replies VALUES (?, ?)", (key, json.dumps(reply)))
            self._db.commit()


Observer = Callable[[str, dict[str, Any]], None]
"""Called with (purpose, request) before every model call."""

_RETRYABLE = (
    litellm.exceptions.RateLimitError,
    litellm.exceptions.InternalServerError,
    litellm.exceptions.ServiceUnavailableError,
    litellm.exceptions.APIConnectionError,
    litellm.exceptions.Timeout,
    litellm.exceptions.BadGatewayError,
)


class ModelLayer:
    """Holds the role → model table, the cache and the retry policy."""

    def __init__(
        self,
        specs: dict[str, ModelSpec],
        cache: ResponseCache | None = None,
        retries: int = 5,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
    ):
        unknown = set(specs) - set(ROLES)
        if unknown:
            raise ModelConfigError(f"unknown model roles {sorted(unknown)}; accepted: {list(ROLES)}")
        self.specs = specs
        self.cache = cache
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.observers: list[Observer] = []
        self.uncached_prefixes: tuple[str, ...] = UNCACHED_PROVIDERS

    def client(self, role: str, purpose: str, meter: Meter, seed: int | None = None,
               context: dict[str, Any] | None = None) -> "RoleClient":
        if role not in self.specs:
            raise ModelConfigError(f"no model configured for role {role!r}")
        return RoleClient(self, self.specs[role], purpose, meter, seed, context or {})

    def call(self, spec: ModelSpec, purpose: str, request: dict[str, Any], meter: Meter,
             context: dict[str, Any]) -> ChatReply:
        for observer in self.observers:
            observer(purpose, request)
        use_cache = self.cache is not None and not spec.model.startswith(self.uncached_prefixes)
        key = ResponseCache.key(request) if use_cache else ""
        if use_cache and (hit := self.cache.get(key)) is not None:
            meter.add(purpose, RoleUsage(calls=1, cached_calls=1))
            return ChatReply(**hit)
        started = time.perf_counter()
        token = CALL_CONTEXT.set({**context, "purpose": purpose})
        try:
            response = self._complete_with_retries(spec, request)
        finally:
            CALL_CONTEXT.reset(token)
        reply = _reply(response)
        usage = getattr(response, "usage", None)
        meter.add(
            purpose,
            RoleUsage(
                calls=1,
                prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                cost_usd=_cost(response),
                seconds=time.perf_counter() - started,
            ),
        )
        if use_cache:
            self.cache.put(key, reply.model_dump())
        return reply

    def _complete_with_retries(self, spec: ModelSpec, request: dict[str, Any]) -> Any:
        kwargs = {k: v for k, v in request.items() if v is not None}
        kwargs["timeout"] = spec.timeout
        delay = self.backoff_s
        for attempt in range(self.retries + 1):
            try:
                return litellm.completion(**kwargs)
            except _RETRYABLE as exc:
                if attempt == self.retries:
                    raise ModelError(f"{spec.model}: gave up after {attempt + 1} tries: {_short(exc)}") from exc
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, self.max_backoff_s)
            except litellm.exceptions.AuthenticationError as exc:
                raise ModelConfigError(f"{spec.model}: authentication failed: {_short(exc)}") from exc
            except Exception as exc:  # noqa: BLE001 - surface the provider's message, not a stack
                raise ModelError(f"{spec.model}: {_short(exc)}") from exc
        raise AssertionError("unreachable")


class RoleClient:
    """One role's model, bound to an episode's meter and seed. Implements ``planners.ChatModel``."""

    def __init__(self, layer: ModelLayer, spec: ModelSpec, purpose: str, meter: Meter,
                 seed: int | None, context: dict[str, Any]):
        self.layer = layer
        self.spec = spec
        self.purpose = purpose
        self.meter = meter
        self.seed = seed
        self.context = context

    def complete(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
                 json_schema: dict[str, Any] | None = None) -> ChatReply:
        request: dict[str, Any] = {
            "model": self.spec.model,
            "api_base": self.spec.api_base,
            "messages": messages,
            "temperature": self.spec.temperature,
            "max_tokens": self.spec.max_tokens_for(self.purpose),
            "seed": self.seed,
        }
        if tools:
            request["tools"] = tools
            request["tool_choice"] = "auto"
        if json_schema is not None:
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": json_schema},
            }
        return self.layer.call(self.spec, self.purpose, request, self.meter, self.context)


def _reply(response: Any) -> ChatReply:
    message = response.choices[0].message
    tool_calls = []
    for i, tc in enumerate(getattr(message, "tool_calls", None) or []):
        fn = tc.function if hasattr(tc, "function") else tc["function"]
        name = fn.name if hasattr(fn, "name") else fn["name"]
        arguments = fn.arguments if hasattr(fn, "arguments") else fn.get("arguments")
        tool_calls.append({
            "id": (tc.id if hasattr(tc, "id") else tc.get("id")) or f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments or {})},
        })
    return ChatReply(content=message.content, tool_calls=tool_calls)


def _cost(response: Any) -> float:
    try:
        return float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # noqa: BLE001 - unmapped and local models have no price
        return 0.0


def _short(exc: Exception) -> str:
    return " ".join(str(exc).split())[:300]


def check_credentials(spec: ModelSpec) -> None:
    """Fail early, in one line, when the provider's API key is not in the environment."""
    if spec.api_base or spec.model.startswith(("local/", "scripted/", "ollama", "hosted_vllm/")):
        return
    try:
        report = litellm.validate_environment(model=spec.model)
    except Exception:  # noqa: BLE001 - unknown providers are litellm's to reject at call time
        return
    missing = report.get("missing_keys") or []
    if not report.get("keys_in_environment", True) and missing:
        raise ModelConfigError(
            f"model {spec.model!r} needs {', '.join(missing)} in the environment "
            "(or pass --api-base for an OpenAI-compatible server)"
        )
