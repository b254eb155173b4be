"""The simulated user's model turns, answered through the runtime's model layer.

The environment owns the user's persona and prompt (τ²'s user simulator, ToolSandbox's user
role); the runtime only supplies the model call, so caching, retries and cost stay in one place.
"""

from __future__ import annotations

from envs.base import ChatMessage, ToolSchema
from evrcore.chat import ChatModel


class SimulatedUser:
    """Callable as an ``envs.UserTurn``."""

    def __init__(self, model: ChatModel):
        self.model = model

    def __call__(self, system_prompt: str, messages: list[ChatMessage], tools: list[ToolSchema] | None) -> ChatMessage:
        conversation = [{"role": "system", "content": system_prompt}, *messages]
        return self.model.complete(conversation, tools=tools or None).as_message()
