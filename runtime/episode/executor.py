"""The executor: one plan-conditioned tool-calling agent, the same object in every mode.

Its instructions are the task's policy plus, where there is one, the plan. Direct, Plan-first
and Refine differ only in that plan, so their scores compare plans and nothing else.
"""

from __future__ import annotations

from envs.base import ChatMessage, TaskView, ToolSchema
from evrcore.chat import ChatModel
from evrcore.plan import Plan

DEFAULT_INSTRUCTION = """You are an agent that helps the user according to the <policy> provided below.
In each turn you can either:
- Send a message to the user.
- Make a tool call.
You cannot do both at the same time. Always follow the policy."""
"""Used when the benchmark brings no agent instruction of its own (τ² does: its own is used)."""

PLAN_INSTRUCTION = """Before the conversation you wrote the plan below for this request. Follow it, but
trust what the user and the tools tell you over the plan where they disagree."""


class Executor:
    """Answers the environment's agent turns; callable as an ``envs.AgentTurn``."""

    def __init__(self, view: TaskView, plan: Plan | None, model: ChatModel, empty_retries: int = 1):
        self.view = view
        self.plan = plan
        self.model = model
        self.empty_retries = empty_retries

    @property
    def system_prompt(self) -> str:
        """τ²'s agent prompt (``<instructions>`` + ``<policy>``), or the benchmark's own prompt as
        it is (ToolSandbox); Plan-first and Refine add the ``<plan>`` block after either."""
        if self.view.system_prompt is not None:
            parts = [self.view.system_prompt]
        else:
            instruction = self.view.instructions or DEFAULT_INSTRUCTION
            parts = [f"<instructions>\n{instruction}\n</instructions>", f"<policy>\n{self.view.policy}\n</policy>"]
        if self.plan is not None:
            parts.append(f"<plan>\n{PLAN_INSTRUCTION}\n\n{self.plan.render()}\n</plan>")
        return "\n".join(parts)

    def __call__(self, messages: list[ChatMessage], tools: list[ToolSchema]) -> ChatMessage:
        conversation = [{"role": "system", "content": self.system_prompt}, *messages]
        reply = self.model.complete(conversation, tools=tools or None)
        for _ in range(self.empty_retries):
            if reply.tool_calls or (reply.content or "").strip():
                break
            nudge = {"role": "user", "content": EMPTY_REPLY_NUDGE}
            reply = self.model.complete([*conversation, nudge], tools=tools or None)
        return reply.as_message()


EMPTY_REPLY_NUDGE = "(Your reply was empty. Answer with a message to the user or a tool call.)"
