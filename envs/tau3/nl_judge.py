"""τ³'s NL-assertion judge with its completion answered by the runtime.

The release grades a task's ``nl_assertions`` with ``NLAssertionsEvaluator``: it builds a system
and a user prompt from the conversation and the assertions, asks an LLM (``tau2.config.
DEFAULT_LLM_NL_ASSERTIONS``, gpt-4.1) through ``tau2.utils.llm_utils.generate`` and parses the
JSON verdicts. An env server has no model access of its own (no keys, no cache, no accounting,
no scrubbing), so here only that one ``generate`` call is replaced: its messages, as τ³ built
them, go to the runtime as a ``judge_turn`` callback and the runtime's reply comes back as the
``AssistantMessage`` τ³ parses. The evaluator, its prompt, its parsing and the reward are τ³'s.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from envs.base import JudgeTurn

NL = "NL_ASSERTION"


def release_judge() -> tuple[str, dict[str, Any]]:
    """The model and sampling options the release's judge uses (``tau2.config``)."""
    from tau2.config import DEFAULT_LLM_NL_ASSERTIONS, DEFAULT_LLM_NL_ASSERTIONS_ARGS

    return DEFAULT_LLM_NL_ASSERTIONS, dict(DEFAULT_LLM_NL_ASSERTIONS_ARGS)


@contextmanager
def answered_by(judge: JudgeTurn) -> Iterator[None]:
    """While open, τ³'s NL-assertion evaluator gets its completion from ``judge``."""
    from tau2.data_model.message import AssistantMessage
    from tau2.evaluator import evaluator_nl_assertions as module
    from tau2.utils.llm_utils import to_litellm_messages

    original = module.generate

    def generate(model: str, messages: list, tools=None, tool_choice=None, call_name=None, **kwargs):
        if tools or tool_choice:  # the NL judge sends neither; anything else is not this judge
            raise RuntimeError(f"unexpected tools in τ³'s {call_name or 'judge'} request")
        # the messages exactly as the release's generate hands them to litellm
        reply = judge(model, to_litellm_messages(messages), dict(kwargs))
        return AssistantMessage(role="assistant", content=reply.get("content"))

    module.generate = generate
    try:
        yield
    finally:
        module.generate = original
