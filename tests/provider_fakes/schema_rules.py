"""Each provider's documented JSON-schema subset for schema-constrained answers, as checks.

* Anthropic structured outputs (``output_format`` / ``output_config.format``):
  https://docs.anthropic.com/en/docs/build-with-claude/structured-outputs ("JSON Schema
  limitations"): every object needs ``additionalProperties: false``; numerical constraints
  (``minimum``, ``maximum``, ``multipleOf``), string lengths, ``maxItems`` and a ``minItems``
  other than 0 or 1 are not supported, nor enums of non-primitive values. The API refuses them
  with 400 (``output_format.schema: For 'integer' type, property 'minimum' is not supported``).
* Gemini ``response_json_schema``: https://ai.google.dev/gemini-api/docs/structured-output
  (JSON Schema support): the keywords listed there are used, others are ignored.
* Gemini ``response_schema`` (OpenAPI subset): https://ai.google.dev/api/caching#Schema —
  ``enum`` only for ``type: STRING``; fields outside the Schema message are refused
  (``Unknown name "additionalProperties"``).
"""

from __future__ import annotations

from typing import Any, Iterator

CONSTRAINTS = ("enum", "minItems", "maxItems", "minimum", "maximum", "minLength", "maxLength",
               "pattern", "required", "additionalProperties", "const", "multipleOf")
"""Keywords that restrict which answers are valid (a description restricts nothing)."""

GEMINI_JSON_SCHEMA_KEYWORDS = {
    "$id", "$defs", "$ref", "$anchor", "type", "format", "title", "description", "enum", "items",
    "prefixItems", "minItems", "maxItems", "minimum", "maximum", "anyOf", "oneOf", "properties",
    "additionalProperties", "required", "propertyOrdering",
}
GEMINI_OPENAPI_KEYWORDS = {
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum",
}
ANTHROPIC_UNSUPPORTED = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                         "multipleOf", "minLength", "maxLength", "maxItems", "minProperties",
                         "maxProperties")


def nodes(schema: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every sub-schema with its path (``properties.errors.properties.E1``)."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from nodes(sub, f"{path}.properties.{name}".lstrip("."))
    if isinstance(schema.get("items"), dict):
        yield from nodes(schema["items"], f"{path}.items".lstrip("."))
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for i, sub in enumerate(schema.get(key) or []):
            yield from nodes(sub, f"{path}.{key}.{i}".lstrip("."))
    for name, sub in (schema.get("$defs") or {}).items():
        yield from nodes(sub, f"{path}.$defs.{name}".lstrip("."))


def _type(node: dict[str, Any]) -> str:
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None and "enum" in node:
        values = node["enum"]
        kind = "number" if all(isinstance(v, (int, float)) for v in values) else "string"
    return str(kind or "object" if "properties" in node else kind or "any").lower()


def anthropic_violations(schema: dict[str, Any], where: str = "output_format.schema") -> list[str]:
    problems = []
    for path, node in nodes(schema):
        kind = _type(node)
        for keyword in ANTHROPIC_UNSUPPORTED:
            if keyword in node:
                problems.append(f"{where}: For '{kind}' type, property '{keyword}' is not supported")
        if "minItems" in node and node["minItems"] not in (0, 1):
            problems.append(f"{where}: For 'array' type, 'minItems' values other than 0 or 1 are "
                            "not supported")
        if kind == "object" and node.get("additionalProperties", True) is not False:
            problems.append(f"{where}: For 'object' type, 'additionalProperties' must be "
                            f"explicitly set to false (at {path or 'the root'})")
        if any(isinstance(v, (dict, list)) for v in node.get("enum") or []):
            problems.append(f"{where}: enum values must be primitives (at {path})")
    return problems


def gemini_ignored(schema: dict[str, Any]) -> list[str]:
    """Keywords of a ``response_json_schema`` that Gemini documents no support for (ignored)."""
    return [f"{path or 'root'}.{key}" for path, node in nodes(schema) for key in node
            if key not in GEMINI_JSON_SCHEMA_KEYWORDS]


def gemini_openapi_violations(schema: dict[str, Any]) -> list[str]:
    problems = []
    for path, node in nodes(schema):
        for key in node:
            if key not in GEMINI_OPENAPI_KEYWORDS:
                problems.append(f'Invalid JSON payload received. Unknown name "{key}" at '
                                f"'generation_config.response_schema{('.' + path) if path else ''}'")
        if "enum" in node and str(node.get("type", "")).upper() != "STRING":
            problems.append("generation_config.response_schema: only STRING type supports enum "
                            f"(at {path or 'the root'})")
    return problems


def dropped(original: dict[str, Any], wire: dict[str, Any] | None) -> list[str]:
    """Constraints of ``original`` that are not at the same place in ``wire``: what a provider
    will not enforce because the request lost it on the way (moved into a description, ...)."""
    at = dict(nodes(wire or {}))
    lost = []
    for path, node in nodes(original):
        there = at.get(path, {})
        for key in CONSTRAINTS:
            if key in node and there.get(key) != node[key]:
                lost.append(f"{path or 'root'}.{key}")
    return lost
