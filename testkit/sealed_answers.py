"""Scripted answers for the ``sealed`` critique: a valid closed answer read off the schema the
request carries, and a writer's rationale.

The sealed critic's schema (``critique.sealed.answer_schema``) depends on p0's length, so a
script reads the allowed positions from the request's ``response_format`` rather than assuming
them: the answer below says "a step is missing after the last step" (E2, missing_step).
"""

from __future__ import annotations

import json
from typing import Any

from testkit.scripted import text

WRITER_RATIONALE = ("The plan stops before the user's request is fully handled: after its last "
                    "step something the task needs is still missing, so check what the request "
                    "asks for and add the step that completes it.")


def answer_schema(request: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request asks its answer to follow, if any."""
    response_format = request.get("response_format") or {}
    if not isinstance(response_format, dict):
        return None
    return (response_format.get("json_schema") or {}).get("schema")


def is_sealed_critic(request: dict[str, Any]) -> bool:
    """Whether the request asks for a sealed critic's closed answer (its schema has findings)."""
    schema = answer_schema(request) or {}
    return "findings" in (schema.get("properties") or {})


def is_writer(context: dict[str, Any]) -> bool:
    return context.get("purpose") == "writer"


def missing_at_end(request: dict[str, Any]) -> dict[str, Any]:
    """A valid sealed answer: grade 0.6, E2, one finding "missing after the last step"."""
    items = answer_schema(request)["properties"]["findings"]["items"]["anyOf"]
    gap = next(i for i in items if "missing_after" in i["properties"])
    last = max(gap["properties"]["missing_after"]["enum"])
    return {"grade": 0.6, "errors": {"E1": False, "E2": True, "E3": False, "E4": False, "E5": False, "E6": False},
            "findings": [{"missing_after": last, "flag": "E2", "aspect": "missing_step"}]}


def sealed_critic(request: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    return text(json.dumps(missing_at_end(request)))


def writer(request: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    return text(json.dumps({"rationale": WRITER_RATIONALE}))
