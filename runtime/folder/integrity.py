"""Each record line carries a SHA-256 digest of its own content (key included), so a record
that was changed after it was written — a score edited by hand, a record relabelled as another
task, a line damaged on disk — is told from one the runtime wrote. Readers
(``runtime.folder.store``) leave such a line out, name it, and never count it as done; its
episode runs again.

The digest is over the canonical JSON of the record without its ``digest`` field (keys sorted,
no spaces, UTF-8) with, bound in, the line where the folder's digests begin (run.json's
``sealed_from_line``): ``sha256@N:<hex>`` is the SHA-256 of that JSON with
``"sealed_from_line": N`` added. A line without a digest counts only where it was written
before digests existed, above that line; binding N into every digest means that raising
``sealed_from_line`` to pass an edited line off as an old one is seen (the digests say where
the chain begins). ``"digest": null`` is no digest. Lines sealed before the start was bound
carry ``sha256:<hex>`` (the same JSON without N) and still verify.

It detects accidents and edits; it is no signature: anyone with this code can recompute the
digest of a forged record (docs: reliability.md, "What the digests prove").
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

FIELD = "digest"
START = "sealed_from_line"
_BOUND = re.compile(r"sha256@([1-9][0-9]{0,15}):")


def digest_of(data: dict[str, Any], start: int | None = None) -> str:
    """The digest of ``data`` (its ``digest`` field left out); ``start``: the folder's first
    sealed line, bound into it (``sha256@start:``), or None for a line of its own (a lost
    attempt's) or one sealed before starts were bound (``sha256:``)."""
    body = {k: v for k, v in data.items() if k != FIELD}
    if start is not None:
        body[START] = start
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    prefix = "sha256:" if start is None else f"sha256@{start}:"
    return prefix + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def sealed_line(record_json: str, start: int | None = None) -> str:
    """The record line to write: ``record_json`` with its digest (computed afresh), binding
    ``start`` (the folder's ``sealed_from_line``) where given."""
    data = json.loads(record_json)
    data.pop(FIELD, None)
    data[FIELD] = digest_of(data, start)
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def has_digest(data: dict[str, Any]) -> bool:
    """Whether the line carries a digest at all: ``null`` is none (an edit that blanked it)."""
    return data.get(FIELD) is not None


def bound_start(data: dict[str, Any]) -> int | None:
    """The ``sealed_from_line`` the line's digest says it was sealed under, or None."""
    stored = data.get(FIELD)
    match = _BOUND.match(stored) if isinstance(stored, str) else None
    return int(match.group(1)) if match else None


def problem(data: dict[str, Any]) -> str | None:
    """Why the parsed record line ``data`` is not the one the runtime wrote, or None (a line
    without a digest is judged by where it stands: ``runtime.folder.store``)."""
    if not has_digest(data):
        return None
    if data[FIELD] != digest_of(data, bound_start(data)):
        return "its content does not match its digest"
    return None


def unreadable(exc: ValueError) -> str:
    """Why a line is not JSON, in a few words: two records fused on one line (a write that
    lost its newline, or an edit) is said as such."""
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text at byte {exc.start}"
    if isinstance(exc, json.JSONDecodeError) and exc.msg == "Extra data":
        return f"more than one JSON value on the line (records fused?) from column {exc.colno}"
    return "not JSON (torn or damaged)"


def invalid(exc) -> str:
    """Why a parsed line is not a record (a pydantic ``ValidationError``), in a few words:
    the first field at fault and what it holds."""
    first = exc.errors()[0] if exc.errors() else {}
    where = ".".join(str(p) for p in first.get("loc", ())) or "the record"
    value = first.get("input")
    shown = f" ({json.dumps(value)[:40]})" if isinstance(value, (str, int, float, bool)) else ""
    return f"{where}: {first.get('msg', 'not a record').lower()}{shown}"
