"""Scripted models behind litellm: ``scripted/<name>`` answers from a registered Python function.

They go through the very same path as a real model (model layer → litellm → provider), so a
test that uses them exercises retries, accounting, request capture and message conversion.
The script learns who is calling (purpose, task, trial) from ``runtime.llm.layer.CALL_CONTEXT``,
an in-process context that is never sent to any provider.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any, Callable

import litellm
from litellm.llms.custom_llm import CustomLLM
from litellm.types.utils import ModelResponse

from runtime.llm.layer import CALL_CONTEXT

Script = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]
"""(request, context) → reply ``{"content": str | None, "tool_calls": [...]}``. The request holds
``messages``, ``tools`` and ``response_format``; the context holds purpose, task_id, trial, mode."""

_SCRIPTS: dict[str, Script] = {}
_LOCK = threading.Lock()


def register_script(name: str, script: Script) -> str:
    """Register ``script`` and return the litellm model name that reaches it."""
    _install()
    with _LOCK:
        _SCRIPTS[name] = script
    return f"scripted/{name}"


def tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"content": None, "tool_calls": [{
        "id": f"call_{uuid.uuid4().hex[:12]}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }]}


def text(content: str) -> dict[str, Any]:
    return {"content": content, "tool_calls": []}


class _ScriptedProvider(CustomLLM):
    latency_s: float = 0.0

    def completion(self, model: str, messages: list, api_base: str, custom_prompt_dict: dict,
                   model_response: ModelResponse, print_verbose, encoding, api_key, logging_obj,
                   optional_params: dict, acompletion=None, litellm_params=None, logger_fn=None,
                   headers={}, timeout=None, client=None) -> ModelResponse:  # noqa: B006 - litellm's signature
        name = model.split("/", 1)[-1]
        with _LOCK:
            script = _SCRIPTS.get(name)
        if script is None:
            raise litellm.exceptions.BadRequestError(
                message=f"no script registered under {name!r}", model=model, llm_provider="scripted"
            )
        request = {"messages": messages, **optional_params}
        reply = script(request, dict(CALL_CONTEXT.get()))
        if self.latency_s:
            time.sleep(self.latency_s)
        message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
        if reply.get("tool_calls"):
            message["tool_calls"] = reply["tool_calls"]
        prompt_chars = sum(len(str(m.get("content") or "")) for m in messages)
        completion_chars = len(json.dumps(reply))
        return ModelResponse(
            model=model,
            choices=[{
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop",
            }],
            usage={
                "prompt_tokens": prompt_chars // 4,
                "completion_tokens": completion_chars // 4,
                "total_tokens": (prompt_chars + completion_chars) // 4,
            },
        )


_PROVIDER = _ScriptedProvider()


def set_latency(seconds: float) -> None:
    """Add ``seconds`` to every scripted reply (benchmarks: a model that takes time)."""
    _PROVIDER.latency_s = seconds


def _install() -> None:
    if not any(p.get("provider") == "scripted" for p in litellm.custom_provider_map):
        litellm.custom_provider_map.append({"provider": "scripted", "custom_handler": _PROVIDER})
        litellm.utils.custom_llm_setup()
