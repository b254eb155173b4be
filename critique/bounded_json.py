"""A model's answer read as one small JSON object, or refused with a reason that names the rule
broken and never quotes the answer.

Why: an answer from a party that sees the supervision (the sealed critic, the leak auditor) is
untrusted input. ``json.loads`` recurses once per nesting level, so a deeply nested answer
raises ``RecursionError`` (no retry, an "internal" error); a huge one costs time and memory;
and an error message that quotes the answer (pydantic's ``input_value``, ``extract_json``'s
excerpt) carries the critic's strings into the run folder. Here size and depth are checked
before parsing, and every refusal is a ``ValueError`` whose text is the rule alone.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError

MAX_CHARS = 16_000
MAX_DEPTH = 6
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


class OutsideSchema(ValueError):
    """An answer that is not a plain JSON object of the expected schema; the message names the
    rule (and the field), never the answer's text."""


def depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in ``text``, outside JSON strings."""
    level = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            level += 1
            deepest = max(deepest, level)
        elif ch in "]}":
            level = max(0, level - 1)
    return deepest


def read_object(text: str | None, max_chars: int = MAX_CHARS, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """The JSON object in ``text`` (bare, or in one fenced block); ``OutsideSchema`` when it is
    empty, longer than ``max_chars``, nested deeper than ``max_depth``, no JSON, or not an
    object."""
    if not text or not text.strip():
        raise OutsideSchema("the answer is empty")
    if len(text) > max_chars:
        raise OutsideSchema(f"the answer is longer than {max_chars} characters")
    if depth(text) > max_depth:
        raise OutsideSchema(f"the answer is nested deeper than {max_depth} levels")
    candidates = [text.strip()] + [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    raise OutsideSchema("the answer holds no JSON object")


def schema_errors(exc: ValidationError) -> str:
    """A validation error as ``field: rule`` pairs, without the input (no ``input_value``). A
    field the schema lacks is not named (its name is the answer's own string); a custom rule's
    message is kept, so the schema's rules must not quote the value they refuse."""
    parts = []
    for error in exc.errors(include_input=False, include_url=False, include_context=False):
        loc = [str(p) for p in error.get("loc", ())]
        kind = error.get("type", "invalid")
        if kind == "extra_forbidden":
            loc, kind = loc[:-1] + ["(a field the schema does not have)"], "not permitted"
        elif kind == "value_error":
            kind = str(error.get("msg", "")).removeprefix("Value error, ") or kind
        parts.append(f"{'.'.join(loc) or '(the answer)'}: {kind}")
    return "; ".join(parts[:8]) + (f"; and {len(parts) - 8} more" if len(parts) > 8 else "")


def validated(model: type[BaseModel], text: str | None, context: dict | None = None,
              max_chars: int = MAX_CHARS, max_depth: int = MAX_DEPTH) -> Any:
    """``model`` validated from the answer ``text``; ``OutsideSchema`` naming what was wrong."""
    data = read_object(text, max_chars, max_depth)
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        raise OutsideSchema(f"outside the schema: {schema_errors(exc)}") from None
    except RecursionError:
        raise OutsideSchema(f"the answer is nested deeper than {max_depth} levels") from None
