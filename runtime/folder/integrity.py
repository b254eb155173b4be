"""Each record line carries a SHA-256 digest of its own content (key included), so a record
that was changed after it was written — a score edited by hand, a record relabelled as another
task, a line damaged on disk — is told from one the runtime wrote. Readers
(``runtime.folder.store``) leave such a line out, name it, and never count it as done; its
episode runs again.

The digest is over the canonical JSON of the record without its ``digest`` field (keys sorted,
no spaces, UTF-8). It detects accidents and edits; it is no signature: anyone with this code
can compute the digest of a forged record. A line without a digest counts only where it was
written before digests existed (``runtime.folder.store``: run.json's ``sealed_from_line``):
elsewhere an edit that also deleted the digest, or a record copied in by hand, is left out the
same way.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

FIELD = "digest"


def digest_of(data: dict[str, Any]) -> str:
    body = {k: v for k, v in data.items() if k != FIELD}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def sealed_line(record_json: str) -> str:
    """The record line to write: ``record_json`` with its digest (computed afresh)."""
    data = json.loads(record_json)
    data.pop(FIELD, None)
    data[FIELD] = digest_of(data)
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def problem(data: dict[str, Any]) -> str | None:
    """Why the parsed record line ``data`` is not the one the runtime wrote, or None."""
    stored = data.get(FIELD)
    if stored is None:
        return None  # written before digests
    if stored != digest_of(data):
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
