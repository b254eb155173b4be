"""What every provider needs of a request, and what a provider's answer means, whatever the
litellm version does.

litellm translates one OpenAI-style request into each provider's wire format, but it does not
make every request valid everywhere, nor does it tell a provider's fault from the model's:

* a conversation must open with a user turn on Anthropic, Bedrock and Gemini (τ²'s
  conversations open with the agent's greeting), so :func:`portable_messages` puts a short
  user turn in front of a leading assistant turn for those providers;
* a tool without arguments declared as an OBJECT schema without properties has been refused by
  Gemini ("should be non-empty for OBJECT type"); for Gemini and Vertex AI
  :func:`portable_tools` leaves ``parameters`` out instead, which litellm sends as a declaration
  without parameters. Every other provider gets the benchmark's own declaration unchanged, so an
  OpenAI-compatible request equals what ``tau2 run`` sends (Anthropic's ``input_schema`` is then
  ``{"type": "object", "properties": {}}``, which it accepts);
* an answer the provider withheld (Gemini's ``MALFORMED_FUNCTION_CALL``, a safety block with no
  candidate) arrives from litellm as an empty turn; :func:`fault_of` names it so the model
  layer retries it and, failing that, raises an error of the right kind instead of letting an
  empty turn be scored as the model's (a reply cut by the token limit, a tool call included,
  is the model's own and is flagged ``truncated`` by the layer);
* a rate limit often says how long to wait (``retry-after``, Gemini's ``RetryInfo``):
  :func:`retry_hint` reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

USER_FIRST_PROVIDERS = ("anthropic", "bedrock", "gemini", "vertex_ai")
"""Providers whose conversations must start with a user turn (Anthropic's Messages API, Bedrock's
Converse API, Gemini's multi-turn contents)."""

OPENING_USER_TURN = "(The conversation starts.)"
"""Put in front of a conversation that opens with the agent's own greeting, for the providers
above; it carries no task content."""

ORDINARY_FINISH = {"stop", "tool_calls", "function_call", "STOP", "end_turn", "tool_use",
                   "stop_sequence", "FINISH_REASON_UNSPECIFIED"}
"""Finish reasons that say nothing went wrong; every other one is kept in the record."""


@dataclass(frozen=True)
class Fault:
    """A provider answer that is no usable turn: ``reason`` is the provider's own word,
    ``kind`` the failure kind of ``runtime.episode.failures`` once retrying has not helped."""

    reason: str
    kind: str
    what: str


def provider_of(model: str) -> str:
    """The litellm provider prefix of a model name (``gemini`` for ``gemini/gemini-2.5-pro``)."""
    return model.split("/", 1)[0] if "/" in model else "openai"


def portable_messages(model: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with a user turn in front of a leading assistant turn, where the provider
    requires the conversation to open with the user."""
    if provider_of(model) not in USER_FIRST_PROVIDERS:
        return messages
    first = next((i for i, m in enumerate(messages) if m.get("role") != "system"), None)
    if first is None or messages[first].get("role") != "assistant":
        return messages
    return [*messages[:first], {"role": "user", "content": OPENING_USER_TURN}, *messages[first:]]


NO_EMPTY_OBJECT_PROVIDERS = ("gemini", "vertex_ai")
"""Providers that have refused an OBJECT schema without properties."""


def portable_tools(model: str, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """``tools``, with an argument schema that is an object with no properties left out where the
    provider refuses it (a declaration without parameters means "no arguments" there)."""
    if not tools or provider_of(model) not in NO_EMPTY_OBJECT_PROVIDERS:
        return tools
    out = []
    for tool in tools:
        fn = tool.get("function") or {}
        params = fn.get("parameters")
        if isinstance(params, dict) and params.get("type", "object") == "object" \
                and not params.get("properties") and not params.get("required"):
            fn = {k: v for k, v in fn.items() if k != "parameters"}
            tool = {**tool, "function": fn}
        out.append(tool)
    return out


def native_finish(response: Any) -> str | None:
    """The provider's own finish reason (Gemini's ``MALFORMED_FUNCTION_CALL``), else litellm's."""
    try:
        choice = response.choices[0]
    except (AttributeError, IndexError, TypeError):
        return None
    fields = getattr(choice, "provider_specific_fields", None) or {}
    native = fields.get("native_finish_reason") if isinstance(fields, dict) else None
    return native or getattr(choice, "finish_reason", None)


_SAFETY = {"content_filter", "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
           "refusal", "LANGUAGE", "OTHER"}
_MALFORMED = {"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "MALFORMED_RESPONSE",
              "MISSING_THOUGHT_SIGNATURE", "TOO_MANY_TOOL_CALLS"}


def fault_of(response: Any) -> Fault | None:
    """Why an answer is no usable turn, or None when it is one (even a short or odd one)."""
    reason = native_finish(response)
    if reason is None:
        return None
    try:
        message = response.choices[0].message
    except (AttributeError, IndexError, TypeError):
        return None
    has_calls = bool(getattr(message, "tool_calls", None))
    has_text = bool((getattr(message, "content", None) or "").strip())
    if reason in _MALFORMED and not has_calls:
        return Fault(reason, "model_output", "the provider could not parse the model's tool call")
    if reason in _SAFETY and not (has_calls or has_text):
        return Fault(reason, "infrastructure", "the provider's safety filter blocked the answer")
    return None  # a reply cut by the token limit is the model's, flagged ``truncated``


_RETRY_DELAY = re.compile(r'retryDelay["\']?\s*[:=]\s*["\']?(\d+(?:\.\d+)?)s')


def retry_hint(exc: BaseException) -> float | None:
    """Seconds the provider asked to wait before retrying: a ``retry-after`` header (seconds),
    or Gemini's ``google.rpc.RetryInfo`` ``retryDelay`` in the error body; None without one."""
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    if headers is not None:
        try:
            value = headers.get("retry-after")
        except AttributeError:
            value = None
        if value is not None:
            try:
                return max(0.0, float(value))
            except ValueError:
                pass
    match = _RETRY_DELAY.search(str(exc))
    return float(match.group(1)) if match else None
