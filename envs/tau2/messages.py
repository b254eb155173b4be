"""Conversion between τ²-bench's message objects and OpenAI-style chat dicts.

The runtime speaks chat dicts (what litellm takes); τ²'s orchestrator speaks its own pydantic
messages. Keeping the translation here lets the executor stay benchmark-agnostic.
"""

from __future__ import annotations

import json
from typing import Literal

from tau2.data_model.message import (
    AssistantMessage,
    Message,
    MultiToolMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)

from envs.base import ChatMessage


def to_chat(messages: list[Message]) -> list[ChatMessage]:
    """τ² messages → chat dicts, dropping τ²'s bookkeeping fields (cost, timestamps, ...)."""
    out: list[ChatMessage] = []
    for m in messages:
        if isinstance(m, MultiToolMessage):
            out.extend(to_chat(list(m.tool_messages)))
        elif isinstance(m, SystemMessage):
            out.append({"role": "system", "content": m.content})
        elif isinstance(m, ToolMessage):
            # τ²'s own key order and value (``to_litellm_messages``): a provider-side cache keyed
            # on the request body must see the bytes ``tau2 run`` sends, None content included.
            out.append({"role": "tool", "content": m.content, "tool_call_id": m.id})
        elif isinstance(m, (AssistantMessage, UserMessage)):
            msg: ChatMessage = {"role": m.role, "content": m.content}
            if m.tool_calls:
                # τ²'s ``to_litellm_messages`` also sends the call's ``name`` beside ``function``.
                msg["tool_calls"] = [
                    {
                        "id": tc.id,
                        "name": tc.name,
                        "function": {"name": tc.name, "arguments": json.dumps(tc.arguments)},
                        "type": "function",
                    }
                    for tc in m.tool_calls
                ]
            out.append(msg)
        else:  # pragma: no cover - τ² has no other message kinds
            raise TypeError(f"unexpected τ² message type {type(m).__name__}")
    return out


def parse_arguments(raw: str | dict | None) -> dict:
    """Tool-call arguments as a dict. Invalid JSON is passed on so the env reports the error."""
    if isinstance(raw, dict):
        return raw
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return {"__unparsable_arguments__": raw}
    return value if isinstance(value, dict) else {"__unparsable_arguments__": raw}


def from_chat(
    reply: ChatMessage, role: Literal["assistant", "user"]
) -> AssistantMessage | UserMessage:
    """A model's chat reply → the τ² message of the given role."""
    tool_calls = [
        ToolCall(
            id=tc.get("id") or f"call_{i}",
            name=tc["function"]["name"],
            arguments=parse_arguments(tc["function"].get("arguments")),
            requestor=role,
        )
        for i, tc in enumerate(reply.get("tool_calls") or [])
    ]
    # Text beside tool calls is kept, as τ²'s own ``generate`` keeps it: the model reads its own
    # words back in every later request, and the text counts for τ²'s communicate check.
    content = reply.get("content")
    cls = AssistantMessage if role == "assistant" else UserMessage
    return cls(role=role, content=content, tool_calls=tool_calls or None)
