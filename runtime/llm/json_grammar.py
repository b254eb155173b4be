"""JSON Schema -> GBNF (llama.cpp grammar) converter for constrained decoding.

Why our own converter instead of llama.cpp's stock one:

* The stock converter allows at most a single space between JSON tokens. Small
  models (SmolLM2-135M) like to pretty-print; when the grammar forbids the
  newline they want, the most likely *allowed* token is often the one that ends
  the object, so they stop early with missing fields. We allow a short run of
  ``[ \\t\\n]`` instead.
* Whitespace and string lengths are *bounded*, so a grammar can never admit an
  endless stream of spaces or an endless string: a runaway model hits the bound
  and is forced to close the value.
* Raw control characters (including newlines) are excluded from strings, so the
  output is always valid JSON.

Supported: ``type`` (object/array/string/number/integer/boolean/null, or a list
of them), ``enum``/``const`` (any JSON values, e.g. ``[0, 0.2, 1.0]``),
``properties`` + ``required`` (properties are emitted in declaration order,
required ones mandatory and optional ones optional), ``additionalProperties``
(false / true / a schema; when absent, extra keys are only generated for
objects that declare no properties: a decoder should not invent keys), ``items`` with ``minItems``/``maxItems``,
``minLength``/``maxLength``, ``anyOf``/``oneOf``, ``allOf`` (objects merged),
``nullable``, local ``$ref`` (``#/$defs/...``, ``#/definitions/...``), and the
empty schema (any JSON value). ``pattern``, ``format`` and numeric bounds are
not enforced (the value is still well-typed JSON).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["GrammarBuilder", "gbnf_literal", "json_schema_to_gbnf"]

DEFAULT_MAX_STRING_LENGTH = 600
DEFAULT_MAX_WHITESPACE = 8

_STRING_CHAR = r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})'
_PRIMITIVES: dict[str, str] = {
    "boolean": '"true" | "false"',
    "null": '"null"',
    # Integer part bounded to 16 digits, fraction to 10: no runaway numbers.
    "integer": '"-"? ("0" | [1-9] [0-9]{0,15})',
    "number": '"-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,10})? ([eE] [-+]? [0-9]{1,3})?',
}


def gbnf_literal(text: str) -> str:
    """Quote ``text`` as a GBNF string literal (escaping quotes, backslashes, controls)."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _json_literal(value: Any) -> str:
    """GBNF literal matching exactly the compact JSON encoding of ``value``."""
    return gbnf_literal(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


class GrammarBuilder:
    """Accumulates GBNF rules; one builder produces one grammar.

    ``add_schema`` may be called several times (with different ``document``s for
    ``$ref`` resolution), which is how the tool-call envelope combines the
    parameter schemas of several tools into one grammar.
    """

    def __init__(
        self,
        *,
        max_string_length: int = DEFAULT_MAX_STRING_LENGTH,
        max_whitespace: int = DEFAULT_MAX_WHITESPACE,
    ) -> None:
        self.max_string_length = max_string_length
        self._rules: dict[str, str] = {}
        self._by_key: dict[tuple[int, str], str] = {}
        self._refs: dict[tuple[int, str], str] = {}
        self._rules["ws"] = f"[ \\t\\n]{{0,{max_whitespace}}}"
        self._rules["char"] = _STRING_CHAR

    # -- rule bookkeeping -------------------------------------------------

    def add_rule(self, name: str, body: str) -> str:
        """Add ``name ::= body``, renaming on collision; returns the final name."""
        base = re.sub(r"[^a-zA-Z0-9-]+", "-", name).strip("-") or "r"
        candidate, i = base, 1
        while candidate in self._rules and self._rules[candidate] != body:
            i += 1
            candidate = f"{base}-{i}"
        self._rules[candidate] = body
        return candidate

    def render(self, root_body: str) -> str:
        """The full grammar text with ``root ::= root_body`` first."""
        lines = [f"root ::= {root_body}"]
        lines += [f"{name} ::= {body}" for name, body in self._rules.items() if name != "root"]
        return "\n".join(lines) + "\n"

    # -- schema visiting --------------------------------------------------

    def add_schema(self, schema: Any, name: str, *, document: Any = None) -> str:
        """Add rules for ``schema``; returns the name of the rule that matches it.

        ``document`` is the schema that ``#/...`` references resolve against
        (defaults to ``schema`` itself).
        """
        doc = schema if document is None else document
        return self._visit(schema, name, doc)

    def _visit(self, schema: Any, name: str, doc: Any) -> str:
        key = (id(doc), json.dumps(schema, sort_keys=True, default=str))
        if key in self._by_key:
            return self._by_key[key]
        body = self._body(schema, name, doc)
        # A body that is just another rule's name needs no alias rule.
        rule = body if body in self._rules else self.add_rule(name, body)
        self._by_key[key] = rule
        return rule

    def _body(self, schema: Any, name: str, doc: Any) -> str:
        if schema is True or schema is None or schema == {}:
            return self._any_value()
        if schema is False:
            raise ValueError(f"schema at {name!r} is `false`: no value can match it")
        if not isinstance(schema, dict):
            raise TypeError(f"schema at {name!r} must be an object, got {type(schema).__name__}")

        if "$ref" in schema:
            return self._ref(schema["$ref"], doc)
        if "const" in schema:
            return _json_literal(schema["const"])
        if "enum" in schema:
            values = list(schema["enum"])
            if not values:
                raise ValueError(f"schema at {name!r} has an empty enum")
            return " | ".join(_json_literal(v) for v in values)
        for key in ("anyOf", "oneOf"):
            if key in schema:
                alts = [self._visit(s, f"{name}-{i}", doc) for i, s in enumerate(schema[key])]
                if schema.get("nullable"):
                    alts.append('"null"')
                return " | ".join(alts)
        if "allOf" in schema:
            return self._body(self._merge_all_of(schema, doc), name, doc)

        types = schema.get("type")
        if types is None:
            if "properties" in schema or "additionalProperties" in schema:
                types = "object"
            elif "items" in schema:
                types = "array"
            else:
                return self._any_value()
        type_list = list(types) if isinstance(types, list) else [types]
        if schema.get("nullable") and "null" not in type_list:
            type_list.append("null")
        alts = [self._typed(t, schema, name if len(type_list) == 1 else f"{name}-{t}", doc) for t in type_list]
        return " | ".join(alts)

    def _typed(self, type_: str, schema: dict[str, Any], name: str, doc: Any) -> str:
        if type_ in _PRIMITIVES:
            return self.add_rule(type_, _PRIMITIVES[type_])
        if type_ == "string":
            return self._string(schema)
        if type_ == "array":
            return self._array(schema, name, doc)
        if type_ == "object":
            return self._object(schema, name, doc)
        raise ValueError(f"unsupported JSON schema type {type_!r} at {name!r}")

    def _string(self, schema: dict[str, Any]) -> str:
        lo = int(schema.get("minLength", 0))
        hi = min(int(schema.get("maxLength", self.max_string_length)), self.max_string_length)
        hi = max(hi, lo)
        rule = self.add_rule(
            f"string-{lo}-{hi}" if (lo, hi) != (0, self.max_string_length) else "string",
            f'"\\"" char{{{lo},{hi}}} "\\""',
        )
        return rule

    def _array(self, schema: dict[str, Any], name: str, doc: Any) -> str:
        item = self._visit(schema.get("items", {}), f"{name}-item", doc)
        lo = int(schema.get("minItems", 0))
        hi = schema.get("maxItems")
        if hi is not None and int(hi) == 0:
            return '"[" ws "]"'
        more = f'(ws "," ws {item})'
        if hi is None:
            tail = f"{more}{{{lo - 1},}}" if lo > 1 else f"{more}*"
        else:
            hi = max(int(hi), lo, 1)
            tail = f"{more}{{{max(lo - 1, 0)},{hi - 1}}}" if hi > 1 else ""
        elems = f"{item} {tail}"
        if lo == 0:
            elems = f"({elems})?"
        return f'"[" ws {elems} ws "]"'

    def _object(self, schema: dict[str, Any], name: str, doc: Any) -> str:
        props: dict[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        extra = schema.get("additionalProperties")
        # Free-form object: no declared properties and extras not forbidden.
        if not props and extra is None:
            extra = True

        kvs: list[tuple[str, bool]] = []
        for prop, sub in props.items():
            value = self._visit(sub, f"{name}-{prop}", doc)
            kvs.append((f'{_json_literal(prop)} ws ":" ws {value}', prop in required))

        extra_kv = None
        if extra is not None and extra is not False:
            value = self._visit({} if extra is True else extra, f"{name}-additional-value", doc)
            key = self._string({})
            extra_kv = self.add_rule(f"{name}-additional-kv", f'{key} ws ":" ws {value}')

        n = len(kvs)
        if extra_kv is None and all(req for _, req in kvs):
            # Common case (e.g. strict structured output): a fixed sequence.
            members = ' ws "," ws '.join(kv for kv, _ in kvs)
            return f'"{{" ws {members} ws "}}"' if members else '"{" ws "}"'

        # Optional members: build "rest of the members from index k" rules so
        # no combination leaves a dangling comma. first[k]: nothing emitted
        # yet; after[k]: something emitted already (members need a comma).
        # Each is a named rule so the grammar stays linear in size.
        after = f'(ws "," ws {extra_kv})*' if extra_kv else ""
        first = f"({extra_kv} {after})?" if extra_kv else ""
        for k in range(n - 1, -1, -1):
            kv, req = kvs[k]
            if req:
                new_after = f'ws "," ws {kv} {after}'.strip()
                new_first = f"{kv} {after}".strip()
            else:
                new_after = f'(ws "," ws {kv})? {after}'.strip()
                head = f"{kv} {after}".strip()
                new_first = f"({head} | {first})" if first else f"({head})?"
            if k > 0:  # after[0] would never be referenced
                after = self.add_rule(f"{name}-after-{k}", new_after)
            first = self.add_rule(f"{name}-first-{k}", new_first)
        return f'"{{" ws {first} ws "}}"'

    # -- helpers -------------------------------------------------------------

    def _any_value(self) -> str:
        if "value" not in self._rules:
            string = self._string({})
            self._rules["value"] = f"object | array | {string} | number | boolean | null"
            self._rules["object"] = f'"{{" ws ({string} ws ":" ws value (ws "," ws {string} ws ":" ws value)*)? ws "}}"'
            self._rules["array"] = '"[" ws (value (ws "," ws value)*)? ws "]"'
            for t in ("number", "boolean", "null"):
                self._rules[t] = _PRIMITIVES[t]
        return "value"

    def _resolve(self, ref: str, doc: Any) -> Any:
        if not ref.startswith("#"):
            raise ValueError(f"only local $ref ('#/...') is supported, got {ref!r}")
        node = doc
        for part in filter(None, ref[1:].split("/")):
            part = part.replace("~1", "/").replace("~0", "~")
            try:
                node = node[int(part)] if isinstance(node, list) else node[part]
            except (KeyError, IndexError, ValueError, TypeError) as exc:
                raise ValueError(f"cannot resolve $ref {ref!r}") from exc
        return node

    def _ref(self, ref: str, doc: Any) -> str:
        key = (id(doc), ref)
        if key not in self._refs:
            # Reserve the name first so recursive schemas terminate.
            name = self.add_rule("ref-" + ref.rsplit("/", 1)[-1], f"pending {len(self._refs)}")
            self._refs[key] = name
            self._rules[name] = self._body(self._resolve(ref, doc), name, doc)
        return self._refs[key]

    def _merge_all_of(self, schema: dict[str, Any], doc: Any) -> dict[str, Any]:
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            while isinstance(part, dict) and "$ref" in part:
                part = self._resolve(part["$ref"], doc)
            if not isinstance(part, dict):
                continue
            for k, v in part.items():
                if k == "properties":
                    merged.setdefault("properties", {}).update(v)
                elif k == "required":
                    merged["required"] = list(dict.fromkeys([*merged.get("required", []), *v]))
                else:
                    merged.setdefault(k, v)
        return merged


def json_schema_to_gbnf(
    schema: Any,
    *,
    max_string_length: int = DEFAULT_MAX_STRING_LENGTH,
    max_whitespace: int = DEFAULT_MAX_WHITESPACE,
) -> str:
    """GBNF grammar whose language is (a bounded subset of) the JSON values valid under ``schema``."""
    builder = GrammarBuilder(max_string_length=max_string_length, max_whitespace=max_whitespace)
    root = builder.add_schema(schema, "schema")
    return builder.render(root)
