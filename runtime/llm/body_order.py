"""Request bodies laid out as the OpenAI SDK's ``chat.completions.create`` lays them out.

Why: a benchmark's own runner may send its requests through an older litellm (τ³'s release
pins ``litellm<1.82.7``), which hands them to the OpenAI SDK's ``create``: the SDK writes
``model, stream, service_tier, messages`` and then its known parameters by name (``seed,
temperature, tool_choice, tools``), anything else after. The runtime's litellm posts its own
dict instead (``temperature, seed, tools, tool_choice``). The values are byte-identical either
way; only the order of the top-level members differs — and a provider-side cache keyed on the
raw body sees two requests. For a role whose spec asks for it (``ModelSpec.body_order``), this
module moves the members, never re-encoding a value, so the bytes are the release's.

It works at the HTTP layer: a request hook on litellm's shared httpx client (installed once,
only if nobody set ``litellm.client_session``) that reorders a chat-completion body while the
calling thread is inside :func:`laid_out` — every other request passes untouched.
"""

from __future__ import annotations

import contextvars
import functools
import json
import threading
from contextlib import contextmanager
from typing import Iterator

import httpx

SDK_ORDER = "openai-sdk"
_ACTIVE: contextvars.ContextVar[str | None] = contextvars.ContextVar("runtime_body_order", default=None)
_HEAD = ("model", "stream", "service_tier", "messages")
_install_lock = threading.Lock()


@functools.cache
def _sdk_parameters() -> frozenset[str]:
    """The body parameters the installed OpenAI SDK's ``create`` knows (written by name); read
    once, not on every request the hook reorders."""
    from openai.types.chat import completion_create_params as params

    names: set[str] = set()
    for cls in params.CompletionCreateParamsBase.__mro__:
        names.update(getattr(cls, "__annotations__", {}))
    return frozenset(names)


def members(raw: str) -> list[tuple[str, str]]:
    """A JSON object's top-level members as (key, the exact text of ``"key":value``)."""
    decoder, out = json.JSONDecoder(), []
    i = raw.index("{") + 1
    while True:
        while raw[i] in " \t\r\n,":
            i += 1
        if raw[i] == "}":
            return out
        start = i
        key, i = decoder.raw_decode(raw, i)
        i = raw.index(":", i) + 1
        while raw[i] in " \t\r\n":
            i += 1
        _, i = decoder.raw_decode(raw, i)
        out.append((key, raw[start:i]))


def sdk_layout(body: bytes) -> bytes:
    """``body`` with its top-level members in the OpenAI SDK's order; unchanged when it is not
    a compact JSON object (the only form litellm sends)."""
    try:
        raw = body.decode("utf-8")
        parts = members(raw)
    except (UnicodeDecodeError, ValueError, IndexError):
        return body
    if raw != "{" + ",".join(text for _, text in parts) + "}":
        return body  # not compact: leave it as it is rather than guess its separators
    known = _sdk_parameters()
    rank = {k: i for i, k in enumerate(_HEAD)}
    head = sorted((p for p in parts if p[0] in rank), key=lambda p: rank[p[0]])
    named = sorted((p for p in parts if p[0] not in rank and p[0] in known), key=lambda p: p[0])
    rest = [p for p in parts if p[0] not in rank and p[0] not in known]
    return ("{" + ",".join(text for _, text in head + named + rest) + "}").encode("utf-8")


def _reorder(request: httpx.Request) -> None:
    """An httpx request hook: a chat-completion body sent from inside :func:`laid_out` gets
    the SDK's order (same members, same length); every other request is left as it is."""
    if _ACTIVE.get() != SDK_ORDER or request.method != "POST" \
            or not request.url.path.endswith("/chat/completions"):
        return
    body = request.read()
    laid = sdk_layout(body)
    if laid != body:
        request.stream = httpx.ByteStream(laid)
        request._content = laid  # what ``request.content`` and retries read


def install() -> bool:
    """Give litellm's shared sync client the hook (once), built as litellm builds its own
    (certificates, redirects, HTTP/2, proxies from the environment); False when litellm
    already has a client of someone else's, which is left alone (bodies keep litellm's order)."""
    import litellm

    with _install_lock:
        session = litellm.client_session
        if session is not None:
            return _reorder in getattr(session, "event_hooks", {}).get("request", [])
        from litellm.llms.custom_httpx.http_handler import get_ssl_configuration, http2_enabled

        litellm.client_session = httpx.Client(verify=get_ssl_configuration(), follow_redirects=True,
                                              http2=http2_enabled(), event_hooks={"request": [_reorder]})
        return True


@contextmanager
def laid_out(order: str | None) -> Iterator[None]:
    """Requests made inside go out in ``order`` (:data:`SDK_ORDER`; None: litellm's own)."""
    if order is None:
        yield
        return
    install()
    token = _ACTIVE.set(order)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
