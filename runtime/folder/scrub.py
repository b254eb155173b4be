"""One scrubber for everything the runtime writes: records, summaries, run metadata, logs, the
console and the response cache.

Providers and proxies echo credentials back (a 401 body quoting the request's
``Authorization`` header is common), so no message that came from outside can be trusted to be
clean. Every writer passes its text through :func:`scrub`, which removes

* the value of every environment variable whose name looks like a credential
  (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``, ...), and of any value registered
  with :func:`register` (a key given some other way);
* bearer tokens and ``api-key``/``x-api-key``/``x-goog-api-key``/``key=`` values wherever they
  appear, whoever's they are.
"""

from __future__ import annotations

import io
import os
import re
import sys
import threading
from typing import Any, TextIO

REDACTED = "[REDACTED]"

SECRET_NAME = re.compile(
    r"(API_?KEY|_KEY$|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)",
    re.IGNORECASE,
)
"""Environment variable names whose values are treated as secrets."""

MIN_SECRET_LENGTH = 8
"""Shorter values (``1``, ``true``) would redact ordinary text and are not credentials."""

_PATTERNS = [
    # "Bearer sk-..." in a header echoed into an error body
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=:-]{8,}"), r"\1" + REDACTED, ("bearer",)),
    # header or field forms: x-api-key: ..., "api_key": "...", x-goog-api-key=...
    (re.compile(r"""(?i)((?:x-goog-api-key|x-api-key|api[_-]?key|authorization|access[_-]?token)"""
                r"""["']?\s*[:=]\s*["']?)(?!\[REDACTED\])[^\s"',;&}]{8,}"""), r"\1" + REDACTED,
     ("apikey", "api_key", "api-key", "authorization", "accesstoken", "access_token", "access-token")),
    # a key in a URL query (Gemini's ?key=...)
    (re.compile(r"(?i)([?&]key=)[^\s&\"']{8,}"), r"\1" + REDACTED, ("?key=", "&key=")),
]
"""(pattern, replacement, words one of which must be in the lower-cased text for the pattern
to match at all): a record of a whole conversation is long, and most hold none of the words,
so the regular expressions run only where they can match."""

_registered: set[str] = set()
_lock = threading.Lock()


def register(value: str | None) -> None:
    """Treat ``value`` as a secret from now on (a key that did not come from the environment)."""
    if value and len(value) >= MIN_SECRET_LENGTH:
        with _lock:
            _registered.add(value)


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """The values to redact, longest first (so a key containing another is removed whole)."""
    env = os.environ if environ is None else environ
    found = {v for k, v in env.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET_LENGTH}
    with _lock:
        found |= _registered
    return sorted(found, key=len, reverse=True)


def scrub(text: str, values: list[str] | None = None) -> str:
    """``text`` with every known secret (``values``: :func:`secret_values`, read now when not
    given) and every credential-shaped value replaced."""
    if not text:
        return text
    for value in secret_values() if values is None else values:
        if value in text:
            text = text.replace(value, REDACTED)
    lowered = text.lower() if text.isascii() else None  # non-ASCII: case folding may differ
    for pattern, replacement, words in _PATTERNS:
        if lowered is None or any(w in lowered for w in words):
            text = pattern.sub(replacement, text)
    return text


def scrub_data(data: Any, values: list[str] | None = None) -> Any:
    """A copy of JSON-like ``data`` with every string scrubbed (keys included); the secrets are
    read once for the whole structure, not once per string."""
    if values is None:
        values = secret_values()
    if isinstance(data, str):
        return scrub(data, values)
    if isinstance(data, dict):
        return {scrub_data(k, values): scrub_data(v, values) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [scrub_data(v, values) for v in data]
    return data


class ScrubbedStream(io.TextIOBase):
    """A text stream that scrubs every write before passing it on (the console, log sinks)."""

    def __init__(self, inner: TextIO):
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(scrub(text))
        return len(text)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        try:
            return self.inner.isatty()
        except ValueError:  # the inner stream is closed (e.g. at interpreter exit)
            return False

    @property
    def closed(self) -> bool:  # type: ignore[override]
        return bool(getattr(self.inner, "closed", False))

    def fileno(self) -> int:
        return self.inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", "utf-8")


def protect_console() -> None:
    """Route this process's stdout and stderr through the scrubber (idempotent)."""
    if not isinstance(sys.stdout, ScrubbedStream):
        sys.stdout = ScrubbedStream(sys.stdout)  # type: ignore[assignment]
    if not isinstance(sys.stderr, ScrubbedStream):
        sys.stderr = ScrubbedStream(sys.stderr)  # type: ignore[assignment]


class ScrubbedFileSink:
    """A loguru sink appending scrubbed lines to a file."""

    def __init__(self, path: os.PathLike | str):
        self.path = path
        self._lock = threading.Lock()

    def write(self, message: str) -> None:
        try:
            with self._lock, open(self.path, "a", encoding="utf-8") as fh:
                fh.write(scrub(str(message)))
        except OSError:
            pass  # a log line is no result: a full disk must not print tracebacks for it
