"""The model layer: every model call of every role goes through here, and through litellm.

One place adds what a long benchmark run needs around a chat completion:

* roles (``runtime.llm.roles``: ``model``, ``critic_model``, ``judge_model``, ``auditor_model``,
  ``user_model``) each with its own litellm model name, endpoint and sampling settings;
* retries with exponential backoff on rate limits, 5xx, connection errors, timeouts and
  malformed responses (HTTP 200 with no choices), which are never cached;
* failing fast: bad credentials stop the run at once, and a circuit breaker
  (``runtime.llm.breaker``) stops it when an endpoint stays unreachable; an OpenAI-compatible
  server reached with ``api_base`` and no key in the environment gets a placeholder key;
* counts of malformed model output per episode (unparsable tool-call arguments, empty or
  truncated replies), so a record can flag them;
* an on-disk response cache keyed on the whole request (so a re-run costs nothing);
* token and cost totals per episode (a :class:`Meter`);
* observers that see every request (tests use them to prove no supervision leaks).

API keys come from the environment through litellm and are never part of a request we store,
a cache key, a record or a log line; provider messages pass ``runtime.folder.scrub`` before they are
kept anywhere.
"""

from __future__ import annotations

import contextvars
import json
import random
import re
import threading
import time
from dataclasses import dataclass, field, fields
from typing import Any, Callable

import litellm

from evrcore.chat import ChatReply, extract_json
from runtime.llm import credentials
from runtime.llm.body_order import laid_out
from runtime.llm.breaker import CircuitBreaker
from runtime.llm.estimate import call_estimate
from runtime.llm.limits import provider_of
from runtime.llm.response_cache import ResponseCache
from runtime.llm.provider_rules import (ORDINARY_FINISH, Fault, fault_of, native_finish,
                                        portable_messages, portable_tools, retry_hint)
from runtime.llm.roles import BENCHMARK_ROLES, ROLES
from runtime.folder.records import BAD_ANSWER
from runtime.folder.scrub import scrub

litellm.suppress_debug_info = True
litellm.drop_params = True

CALL_CONTEXT: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar(
    "runtime_call_context", default={}
)
"""Who is calling (role, purpose, task, mode, strategy, trial). Never sent to a provider; in-process test
doubles read it to know which script to replay."""

UNCACHED_PROVIDERS = ("scripted/",)
"""Test doubles answer from a script, not from the request alone: caching them would be wrong."""


class ModelError(RuntimeError):
    """A model call failed for good (after retries, or with an error retrying cannot fix)."""


class ModelConfigError(ValueError):
    """A model cannot be used as configured (e.g. its provider's API key is missing)."""


class RunAborted(ModelError):
    """A failure every later call would repeat (rejected credentials, an endpoint that stays
    down): the layer refuses further calls and the runner stops the run."""

    def __init__(self, reason: str, credentials: bool = False):
        super().__init__(reason)
        self.credentials = credentials
        """True when the credentials were rejected (a configuration error, like a missing key)."""


class ProviderFault(ModelError):
    """The provider answered with no usable turn (Gemini's ``MALFORMED_FUNCTION_CALL``, a
    safety block) on every try: the episode errors with ``error_kind`` instead of an empty turn
    being scored as the model's."""

    def __init__(self, message: str, fault: Fault):
        super().__init__(message)
        self.reason = fault.reason
        self.error_kind = fault.kind


class MalformedResponse(RuntimeError):
    """HTTP 200 whose body is not a usable completion (no choices, no message): retried, never
    cached."""


PLACEHOLDER_KEY = "no-key-set"
"""Sent to an ``api_base`` server when the provider's key is not in the environment: keyless
local servers accept it; a server that wants a real key answers 401, which stops the run."""


@dataclass(frozen=True)
class ModelSpec:
    """How one role reaches its model."""

    model: str
    api_base: str | None = None
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout: float = 300.0
    """Seconds one request may take (``--request-timeout``)."""
    stage_max_tokens: tuple[tuple[str, int], ...] = ()
    """Answer budgets by purpose (``("user", 64), ...``) that replace ``max_tokens`` for those
    purposes: a slow local model spends most of its time generating, and a user turn needs far
    fewer tokens than a plan."""
    price: tuple[float, float] | None = None
    """USD per million prompt and completion tokens, when the user priced the model
    (``--price``, ``prices:``); None: litellm's price on the response."""

    bare_purposes: tuple[str, ...] = ()
    """Purposes whose requests carry no temperature, seed or tool_choice beyond ``user_set``:
    the executor and user of a benchmark whose own roles send none (ToolSandbox)."""
    user_set: tuple[str, ...] = ()
    """Which of ``temperature``/``seed`` the user set: sent for bare purposes too."""
    body_order: str | None = None
    """How the request body's top-level members are laid out: None, litellm's own; ``openai-sdk``
    as the OpenAI SDK's ``create`` writes them (``runtime.llm.body_order``), the bytes a
    benchmark's runner on an older litellm sends (τ³). Values are the same either way."""

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
        if self.price is not None:
            out["price_usd_per_mtok"] = list(self.price)
        return out


@dataclass
class RoleUsage:
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    replayed_tokens: int = 0
    """Tokens of the answers taken from the response cache, as their original calls used them:
    spent by an earlier run, not by this one (``prompt_tokens``, ``cost_usd`` count only what
    this run paid), but part of the conversation, so an episode's token limit counts them and a
    resumed episode stops where the first one did."""
    replayed_cost_usd: float = 0.0
    """The same for cost (the episode's cost limit, not the run's budget)."""

    def used_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens + self.replayed_tokens

    def used_cost_usd(self) -> float:
        return self.cost_usd + self.replayed_cost_usd


_SUMMED = tuple(f.name for f in fields(RoleUsage))


@dataclass
class Meter:
    """Token, cost and time totals for one episode, by purpose (planner, critic, executor, ...)."""

    by_purpose: dict[str, RoleUsage] = field(default_factory=dict)
    malformed: dict[str, dict[str, int]] = field(default_factory=dict)
    """purpose → kind of malformed model output → count (see :func:`malformed_kinds`)."""
    finish_reasons: dict[str, dict[str, int]] = field(default_factory=dict)
    """purpose → the provider's own finish reason, where it was not an ordinary one
    (``MALFORMED_FUNCTION_CALL``, ``SAFETY``, ``length``, ...) → count, retried answers included."""
    sink: Any = None
    """Told of each call as it happens (``begin(purpose, estimated cost)`` → ticket, before the
    request leaves, and may raise to keep it from leaving; ``end(ticket, purpose, usage or
    None)``): a Ray worker's ledger, which outlives it (``runtime.backends.ray_ledger``)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def begin(self, purpose: str, estimate: Callable[[], float] = lambda: 0.0) -> Any:
        """``estimate``: the call's cost before its answer says (counted while it is in flight)."""
        return self.sink.begin(purpose, estimate()) if self.sink is not None else None

    def end_failed(self, purpose: str, ticket: Any) -> None:
        if self.sink is not None:
            self.sink.end(ticket, purpose, None)

    def note_finish(self, purpose: str, reason: str) -> None:
        with self._lock:
            counts = self.finish_reasons.setdefault(purpose, {})
            counts[reason] = counts.get(reason, 0) + 1

    def note_malformed(self, purpose: str, kinds: list[str]) -> None:
        with self._lock:
            counts = self.malformed.setdefault(purpose, {})
            for kind in kinds:
                counts[kind] = counts.get(kind, 0) + 1

    def add(self, purpose: str, usage: RoleUsage, ticket: Any = None) -> None:
        with self._lock:
            _accumulate(self.by_purpose.setdefault(purpose, RoleUsage()), usage)
        if self.sink is not None:
            self.sink.end(ticket, purpose, usage)

    def total(self) -> RoleUsage:
        with self._lock:
            totals = RoleUsage()
            for v in self.by_purpose.values():
                _accumulate(totals, v)
            return totals

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            purposes = {k: vars(v).copy() for k, v in self.by_purpose.items()}
        return {"total": vars(self.total()).copy(), "by_purpose": purposes}


def _accumulate(total: RoleUsage, usage: RoleUsage) -> None:
    for name in _SUMMED:
        setattr(total, name, getattr(total, name) + getattr(usage, name))


Observer = Callable[[str, dict[str, Any]], None]
"""Called with (purpose, request) before every model call."""

_CONNECTION = (litellm.exceptions.APIConnectionError, litellm.exceptions.Timeout, ConnectionError,
               TimeoutError)
"""The endpoint did not answer: counted by the circuit breaker."""

_CONNECTION_WORDS = re.compile(r"Connection (error|refused|reset)|Server disconnected|timed out",
                               re.IGNORECASE)


def is_connection_failure(exc: BaseException) -> bool:
    """litellm reports a refused or reset connection as an ``InternalServerError`` for some
    providers; the cause chain (or, failing that, the message) tells it from a real 5xx."""
    import httpx
    import openai

    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            break
        if isinstance(seen, (*_CONNECTION, openai.APIConnectionError, httpx.TransportError)):
            return True
        seen = seen.__cause__ or seen.__context__
    return bool(_CONNECTION_WORDS.search(str(exc)))

_RETRYABLE = (
    litellm.exceptions.RateLimitError,
    litellm.exceptions.InternalServerError,
    litellm.exceptions.ServiceUnavailableError,
    litellm.exceptions.BadGatewayError,
    MalformedResponse,
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
        breaker: CircuitBreaker | None = None,
    ):
        unknown = set(specs) - set(ROLES) - set(BENCHMARK_ROLES)
        if unknown:
            raise ModelConfigError(f"unknown model roles {sorted(unknown)}; accepted: "
                                   f"{list(ROLES + BENCHMARK_ROLES)}")
        self.specs = specs
        self.cache = cache
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.observers: list[Observer] = []
        self.uncached_prefixes: tuple[str, ...] = UNCACHED_PROVIDERS
        self.breaker = breaker or CircuitBreaker()
        self.aborted: RunAborted | None = None
        """Why the run must stop (set once, by the first fatal failure); None while it may go on."""
        self._abort_lock = threading.Lock()
        self._needs_placeholder: dict[ModelSpec, bool] = {}
        self.limiter: Any = None
        """Optional per-provider cap on calls in flight (``runtime.llm.limits``)."""
        self.fault_retries = 2
        """Further tries for an answer the provider withheld (:class:`ProviderFault`)."""

    def client(self, role: str, purpose: str, meter: Meter, seed: int | None = None,
               context: dict[str, Any] | None = None, refresh: bool = False) -> "RoleClient":
        """``refresh``: ignore cached replies (they are still written), e.g. for an episode
        re-run because it errored, whose cached answers may be what went wrong."""
        if role not in self.specs:
            raise ModelConfigError(f"no model configured for role {role!r}")
        return RoleClient(self, self.specs[role], purpose, meter, seed, context or {}, refresh)

    def abort(self, reason: str, credentials: bool = False) -> RunAborted:
        """Record the first fatal failure; every later call raises it at once."""
        with self._abort_lock:
            if self.aborted is None:
                self.aborted = RunAborted(scrub(reason), credentials)
            return RunAborted(str(self.aborted), self.aborted.credentials)

    def call(self, spec: ModelSpec, purpose: str, request: dict[str, Any], meter: Meter,
             context: dict[str, Any], refresh: bool = False) -> ChatReply:
        if self.aborted:
            raise self.abort("")
        for observer in self.observers:
            observer(purpose, request)
        use_cache = self.cache is not None and not spec.model.startswith(self.uncached_prefixes)
        key = ResponseCache.key(request) if use_cache else ""
        hit = self.cache.get(key) if use_cache and not refresh else None
        if hit is not None and not rejected(reply := ChatReply(**hit), request):
            used = hit.get("usage") or {}  # entries cached before usage was kept: none
            meter.add(purpose, RoleUsage(calls=1, cached_calls=1,
                                         replayed_tokens=int(used.get("tokens", 0)),
                                         replayed_cost_usd=float(used.get("cost_usd", 0.0))))
            if kinds := malformed_kinds(reply):
                meter.note_malformed(purpose, kinds)
            return reply  # (a bad answer an older version cached is asked for again)
        started = time.perf_counter()
        token = CALL_CONTEXT.set({**context, "purpose": purpose})
        ticket = meter.begin(purpose, lambda: call_estimate(spec.model, spec.price, purpose, request))
        try:
            note = lambda reason: meter.note_finish(purpose, reason)  # noqa: E731
            if self.limiter is None:
                response = self._complete_with_retries(spec, request, note)
            else:
                with self.limiter.slot(provider_of(spec)):
                    response = self._complete_with_retries(spec, request, note)
        except BaseException:
            meter.end_failed(purpose, ticket)
            raise
        finally:
            CALL_CONTEXT.reset(token)
        reply = _reply(response)
        if kinds := malformed_kinds(reply, _finish_reason(response)):
            meter.note_malformed(purpose, kinds)
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        cost = (_cost(response) if spec.price is None
                else (prompt_tokens * spec.price[0] + completion_tokens * spec.price[1]) / 1e6)
        meter.add(purpose, RoleUsage(calls=1, prompt_tokens=prompt_tokens,
                                     completion_tokens=completion_tokens, cost_usd=cost,
                                     seconds=time.perf_counter() - started), ticket)
        if use_cache and not rejected(reply, request):
            self.cache.put(key, {**reply.model_dump(),
                                 "usage": {"tokens": prompt_tokens + completion_tokens, "cost_usd": cost}})
        return reply

    def _complete_with_retries(self, spec: ModelSpec, request: dict[str, Any],
                               note_finish: Callable[[str], None] = lambda reason: None) -> Any:
        kwargs = {k: v for k, v in request.items() if v is not None}
        kwargs["timeout"] = spec.timeout
        kwargs["max_retries"] = 0  # retries are this layer's: counted, backed off, circuit-broken
        placeholder = self._placeholder_key(spec)
        if placeholder:
            kwargs["api_key"] = PLACEHOLDER_KEY
        endpoint = spec.api_base or spec.model
        delay = self.backoff_s
        faults = 0
        attempt = 0
        while True:
            if self.aborted or (reason := self.breaker.open_reason(endpoint)):
                raise self.abort(reason if not self.aborted else "")
            try:
                with laid_out(spec.body_order):
                    response = litellm.completion(**kwargs)
                _check_transport(response)
                self.breaker.success(endpoint)
                finish = native_finish(response)
                if finish and finish not in ORDINARY_FINISH:
                    note_finish(finish)
                fault = fault_of(response)
                if fault is None:
                    return response
                faults += 1
                if faults > self.fault_retries:
                    raise ProviderFault(f"{spec.model}: {fault.what} ({fault.reason}) on {faults} "
                                        "tries", fault)
                continue
            except litellm.exceptions.AuthenticationError as exc:
                hint = (" (no key in the environment: sent a placeholder; set the provider's key)"
                        if placeholder else "")
                raise self.abort(f"{spec.model}: authentication failed{hint}: {_short(exc)}",
                                 credentials=True) from exc
            except (*_CONNECTION, *_RETRYABLE) as exc:
                if not is_connection_failure(exc):
                    self.breaker.answered(endpoint)  # a 429, a 5xx, a garbage body: it is there
                elif self.breaker.failure(endpoint, _short(exc)):
                    raise self.abort(self.breaker.open_reason(endpoint) or endpoint) from exc
                if attempt == self.retries:
                    raise ModelError(f"{spec.model}: gave up after {attempt + 1} tries: {_short(exc)}") from exc
                attempt += 1
                wait = delay * (0.5 + random.random())
                hint = retry_hint(exc)
                if hint is not None:  # the provider said how long; within the layer's ceiling
                    wait = max(wait, min(hint, self.max_backoff_s))
                time.sleep(wait)
                delay = min(delay * 2, self.max_backoff_s)
            except ProviderFault:
                raise
            except Exception as exc:  # noqa: BLE001 - surface the provider's message, not a stack
                self.breaker.answered(endpoint)  # e.g. an HTTP 400: an answer all the same
                raise ModelError(f"{spec.model}: {_short(exc)}") from exc

    def _placeholder_key(self, spec: ModelSpec) -> bool:
        """True for an ``api_base`` endpoint whose provider key is not in the environment."""
        if spec not in self._needs_placeholder:
            needs = False
            if spec.api_base and not spec.model.startswith(("local/", "scripted/")):
                try:
                    report = litellm.validate_environment(model=spec.model)
                    needs = not report.get("keys_in_environment", True)
                except Exception:  # noqa: BLE001 - a provider litellm cannot check gets no placeholder
                    needs = False
            self._needs_placeholder[spec] = needs
        return self._needs_placeholder[spec]


class RoleClient:
    """One role's model, bound to an episode's meter and seed. Implements ``planners.ChatModel``."""

    def __init__(self, layer: ModelLayer, spec: ModelSpec, purpose: str, meter: Meter,
                 seed: int | None, context: dict[str, Any], refresh: bool = False):
        self.layer = layer
        self.spec = spec
        self.purpose = purpose
        self.meter = meter
        self.seed = seed
        self.context = context
        self.refresh = refresh

    def complete(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
                 json_schema: dict[str, Any] | None = None) -> ChatReply:
        request: dict[str, Any] = {
            "model": self.spec.model,
            "api_base": self.spec.api_base,
            "messages": portable_messages(self.spec.model, messages),
            "temperature": self.spec.temperature,
            "max_tokens": self.spec.max_tokens_for(self.purpose),
            "seed": self.seed,
        }
        if tools:
            request["tools"] = portable_tools(self.spec.model, tools)
            request["tool_choice"] = "auto"
        if self.purpose in self.spec.bare_purposes:
            for key in ("temperature", "seed", "tool_choice"):
                if key not in self.spec.user_set:
                    request.pop(key, None)
        if json_schema is not None:
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": json_schema},
            }
        return self.layer.call(self.spec, self.purpose, request, self.meter, self.context,
                               refresh=self.refresh)


def _check_transport(response: Any) -> None:
    """Raise :class:`MalformedResponse` for an answer that carries no message at all."""
    choices = getattr(response, "choices", None)
    if not choices or getattr(choices[0], "message", None) is None:
        raise MalformedResponse("the endpoint answered without a message (no choices)")


def _finish_reason(response: Any) -> str | None:
    try:
        return response.choices[0].finish_reason
    except (AttributeError, IndexError):
        return None


def malformed_kinds(reply: ChatReply, finish_reason: str | None = None) -> list[str]:
    """What is wrong with a model's answer, as far as can be told without the task:
    ``unparsable_tool_call`` (arguments that are not a JSON object), ``empty_reply`` (neither
    text nor tool calls), ``truncated`` (the model stopped at its token limit)."""
    kinds = []
    for call in reply.tool_calls:
        try:
            ok = isinstance(json.loads(call["function"]["arguments"] or "{}"), dict)
        except (ValueError, TypeError, KeyError):
            ok = False
        if not ok:
            kinds.append("unparsable_tool_call")
    if not reply.tool_calls and not (reply.content or "").strip():
        kinds.append("empty_reply")
    if {finish_reason, reply.finish_reason} & {"length", "MAX_TOKENS", "max_tokens"}:
        kinds.append("truncated")  # litellm says "tool_calls" for Gemini's MAX_TOKENS with a call
    return kinds


def rejected(reply: ChatReply, request: dict[str, Any]) -> list[str]:
    """Why ``reply`` must not be cached (or replayed from the cache): an unparsable tool call,
    an empty message, or no JSON where the request asked for a JSON answer."""
    kinds = [k for k in malformed_kinds(reply) if k in BAD_ANSWER]
    if request.get("response_format") and "empty_reply" not in kinds:
        try:
            extract_json(reply.content)
        except ValueError:
            kinds.append("malformed_json")
    return kinds


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
    return ChatReply(content=message.content, tool_calls=tool_calls,
                     finish_reason=native_finish(response))


def _cost(response: Any) -> float:
    """The price litellm already put on the response (None: it found none, e.g. an unmapped or
    local model); pricing it again cost ~10 % of a call's CPU. Computed only when a response
    carries no price at all."""
    hidden = getattr(response, "_hidden_params", None)
    hidden = hidden if isinstance(hidden, dict) else vars(hidden) if hidden is not None else {}
    if "response_cost" in hidden:
        return float(hidden["response_cost"] or 0.0)
    try:
        return float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # noqa: BLE001 - unmapped and local models have no price
        return 0.0


def _short(exc: Exception) -> str:
    return scrub(" ".join(str(exc).split()))[:300]


def check_credentials(spec: ModelSpec) -> None:
    """Fail early, in one line, when the provider's API key is not in the environment; what
    litellm said is remembered for the next command's early check (``runtime.llm.credentials``)."""
    if not credentials.needs_check(spec.model, spec.api_base):
        return
    try:
        report = litellm.validate_environment(model=spec.model)
    except Exception:  # noqa: BLE001 - unknown providers are litellm's to reject at call time
        return
    missing = report.get("missing_keys") or []
    refused = not report.get("keys_in_environment", True) and missing
    credentials.remember_missing(spec.model, list(missing) if refused else [])
    if refused:
        raise ModelConfigError(credentials.missing_message(spec.model, missing))


def check_provider(spec: ModelSpec) -> None:
    """Fail at once, in one line, when litellm cannot route ``spec.model`` to a provider (an
    unknown ``<provider>/`` prefix, or a bare name it does not know): the first call would
    fail the same way, only after the environment had started."""
    try:
        litellm.get_llm_provider(model=spec.model, api_base=spec.api_base)
    except Exception as exc:  # noqa: BLE001 - litellm raises its BadRequestError, or others
        prefix, slash, _ = spec.model.partition("/")
        what = f"unknown provider {prefix!r}" if slash else "no provider prefix litellm knows"
        raise ModelConfigError(
            f"model {spec.model!r}: {what}; give <provider>/<model> with one of litellm's "
            f"{len(litellm.provider_list)} providers (e.g. openai/, anthropic/, gemini/, "
            "hosted_vllm/, ollama/), or local/<path to a .gguf file>") from exc
