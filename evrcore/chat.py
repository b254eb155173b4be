"""The smallest model interface planners and critics need.

The runtime's model layer (litellm, retries, cache, accounting) implements it; planners and
critics depend only on this protocol, so they stay testable and free of runtime imports.
"""

from __future__ import annotations

import json
import re
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field


class ChatReply(BaseModel):
    content: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    finish_reason: str | None = None
    """The provider's own word for why the answer ended (``STOP``, ``end_turn``, ``length``, ...)."""

    def as_message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = self.tool_calls
        return msg


@runtime_checkable
class ChatModel(Protocol):
    """One role's model: a chat completion with optional tools or a JSON-schema answer."""

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> ChatReply: ...


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def extract_json(text: str | None) -> Any:
    """The JSON value in a model's answer: bare, fenced, or the outermost ``{...}`` span.

    Raises ``ValueError`` with the reason when there is none.
    """
    if not text or not text.strip():
        raise ValueError("empty answer")
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    raise ValueError(f"no JSON object in answer: {text[:200]!r}")
