"""Embedded local model provider for litellm (``model="local/<name-or-path.gguf>"``).

Why: every model call in this project goes through litellm; registering an
in-process llama.cpp model as a litellm custom provider lets the whole runtime
(including structured output and tool calling) run offline with no API key and
no code path that differs from a hosted model.

* ``local/smollm2-135m`` is the embedded default (see ``embedded_weights``);
  ``local/<path>.gguf`` serves any user GGUF.
* One ``llama_cpp.Llama`` per path, cached for the process, each guarded by a
  lock: a llama context is not thread-safe, so requests to one model are
  serialised (different models run in parallel).
* Structured output (``response_format``) and tool calls are enforced with a
  grammar from ``json_grammar``: small models cannot be trusted to produce valid
  JSON or native tool calls, but under a grammar they cannot produce anything
  else. Tool calls use a JSON envelope ``{"tool": ..., "arguments": {...}}`` /
  ``{"message": ...}`` that we translate to OpenAI-style ``tool_calls``.
* Speed on a small CPU: saved prompt states (``state_cache``, bounded in bytes)
  spare re-reading the prefix another role's call displaced; greedy grammar calls
  check the top token before masking the vocabulary (``grammar_gate``); a model
  near its budget is pushed to close its JSON (``closing_pressure``).
* Prompts longer than the context are trimmed (oldest non-system messages
  first, then the middle of the longest message) instead of failing.

Importing this module needs llama-cpp-python (``ImportError`` naming
``llama_cpp`` otherwise), so callers can check the dependency with an import.
Errors that retrying cannot fix (missing/corrupt weights, unknown model, bad
GGUF) are raised with 4xx status codes, which litellm maps to non-retryable
exceptions (``NotFoundError``/``BadRequestError``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import litellm
import llama_cpp
import numpy as np
from litellm import CustomLLM
from litellm.llms.custom_llm import CustomLLMError
from litellm.types.utils import Choices, GenericStreamingChunk, Message, ModelResponse, Usage
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from runtime.llm.call_trace import CallTimer
from runtime.llm.closing_pressure import ClosingPressure, closing_tokens
from runtime.llm.embedded_weights import EMBEDDED_MODEL_NAME, EmbeddedWeightsError, embedded_weights_path
from runtime.llm.grammar_gate import GrammarGate
from runtime.llm.json_grammar import GrammarBuilder, gbnf_literal, json_schema_to_gbnf
from runtime.llm.layer import CALL_CONTEXT
from runtime.llm.state_cache import BoundedStateCache

__all__ = ["DEFAULT_LOCAL_MODEL", "LocalLLM", "register", "resolve_model_path"]

PROVIDER = "local"
DEFAULT_LOCAL_MODEL = "local/smollm2-135m"  # PROVIDER + "/" + EMBEDDED_MODEL_NAME
N_CTX = 8192  # SmolLM2's trained context length
DEFAULT_MAX_TOKENS = 512
DEFAULT_TEMPERATURE = 0.2  # llama-cpp-python's chat default; small models degrade fast when hotter
_DEFAULT_STATE_CACHE_BYTES = 128 << 20  # counted in full (~5.5k tokens of KV); LOCAL_LLM_STATE_CACHE_BYTES overrides
N_BATCH = 256  # llama-cpp-python keeps an n_batch × n_vocab logits buffer (50 MB here) and copies it per saved state
FAST_GRAMMAR = os.environ.get("LOCAL_LLM_FAST_GRAMMAR", "1") != "0"
"""Greedy grammar calls check the model's top token before masking the vocabulary
(``grammar_gate``); ``LOCAL_LLM_FAST_GRAMMAR=0`` masks every step as llama-cpp-python does."""
_CONTEXT_MARGIN = 16  # tokens kept free for template/tokenisation slack
_TRUNCATION_MARK = "\n[... truncated to fit the context window ...]\n"

_log = logging.getLogger(__name__)


# -- model loading -------------------------------------------------------------------


@dataclass
class _LoadedModel:
    llm: llama_cpp.Llama
    render: Callable[[list[dict[str, str]]], str]
    stop: list[str]
    lock: threading.Lock = field(default_factory=threading.Lock)
    _closers: tuple[np.ndarray, np.ndarray] | None = None
    _grammars: dict[str, llama_cpp.LlamaGrammar] = field(default_factory=dict)

    def count(self, text: str) -> int:
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=True, special=True))

    def grammar(self, gbnf: str) -> llama_cpp.LlamaGrammar:
        """A ``LlamaGrammar`` for ``gbnf``, checked by llama.cpp's own parser (cached).

        Why: ``LlamaGrammar.from_string`` does not parse anything; an invalid
        grammar only fails inside generation, where llama-cpp-python 0.3.x
        adds the resulting NULL sampler to its chain and the process
        segfaults. Parsing it here turns that into a Python ``ValueError``.
        """
        if gbnf not in self._grammars:
            sampler = llama_cpp.llama_sampler_init_grammar(self.llm._model.vocab, gbnf.encode("utf-8"), b"root")
            if not sampler:
                raise ValueError(f"llama.cpp rejected the generated grammar (see stderr for the parse error):\n{gbnf}")
            llama_cpp.llama_sampler_free(sampler)
            if len(self._grammars) >= 256:  # bounded: schemas can vary per request
                self._grammars.pop(next(iter(self._grammars)))
            self._grammars[gbnf] = llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False)
        return self._grammars[gbnf]

    def closers(self) -> tuple[np.ndarray, np.ndarray]:
        """Token ids that only close a string / a container (computed once)."""
        if self._closers is None:
            self._closers = closing_tokens(self.llm)
        return self._closers


_models: dict[str, _LoadedModel] = {}
_models_lock = threading.Lock()


def _error(message: str, status_code: int = 400) -> CustomLLMError:
    return CustomLLMError(status_code=status_code, message=message)


def resolve_model_path(model: str) -> Path:
    """Map a model name (with or without the ``local/`` prefix) to a GGUF path."""
    name = model.removeprefix(f"{PROVIDER}/")
    if name == EMBEDDED_MODEL_NAME:
        try:
            return embedded_weights_path()
        except EmbeddedWeightsError as exc:
            raise _error(str(exc), 404) from exc
    if name.endswith(".gguf"):
        path = Path(name).expanduser()
        if not path.is_file():
            raise _error(f"local model file not found: {path}", 404)
        return path.resolve()
    raise _error(
        f"unknown local model {model!r}: use {DEFAULT_LOCAL_MODEL!r} (embedded weights) "
        f"or '{PROVIDER}/<path to a .gguf file>'",
        404,
    )


def _threads() -> int:
    # A 135M model does little work per token, so llama.cpp's spin-waiting
    # thread barriers dominate: on a busy 2-core machine 2 threads ran 10x
    # slower than 1 (3 vs 44 tok/s). Use half the cores, at most 4;
    # LOCAL_LLM_THREADS overrides.
    env = os.environ.get("LOCAL_LLM_THREADS")
    return int(env) if env else max(1, min((os.cpu_count() or 2) // 2, 4))


def _chatml(messages: list[dict[str, str]]) -> str:
    body = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return body + "<|im_start|>assistant\n"


def _load(path: Path) -> _LoadedModel:
    start = time.perf_counter()
    threads = _threads()
    # flash_attn: ~25% less CPU for prompt processing at a few thousand tokens.
    try:
        llm = llama_cpp.Llama(
            model_path=str(path),
            n_ctx=N_CTX,
            n_batch=N_BATCH,
            n_ubatch=N_BATCH,
            n_threads=threads,
            n_threads_batch=threads,
            flash_attn=True,
            verbose=False,
        )
    except ValueError as exc:  # llama.cpp could not read the file
        raise _error(f"cannot load GGUF model {path}: {exc}", 400) from exc
    # Prompt state cache: roles (agent, user simulator, critic) alternate on one
    # context, each with its own long system prompt, so without it every call
    # re-reads its whole prompt (~100 tok/s on one core). Restoring a saved
    # state made a 2.3k-token prompt 15x faster (1.5 s instead of 22 s).
    cache_bytes = int(os.environ.get("LOCAL_LLM_STATE_CACHE_BYTES", str(_DEFAULT_STATE_CACHE_BYTES)))
    if cache_bytes > 0:
        llm.set_cache(BoundedStateCache(cache_bytes))
    template = llm.metadata.get("tokenizer.chat_template")
    if template:
        eos, bos = llm.token_eos(), llm.token_bos()
        formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
            bos_token=llm._model.token_get_text(bos) if bos != -1 else "",
        )
        stop = [formatter.eos_token] if formatter.eos_token else []

        def render(messages: list[dict[str, str]]) -> str:
            return formatter(messages=messages).prompt

    else:  # No template in the GGUF: ChatML is the most common convention.
        render, stop = _chatml, ["<|im_end|>"]
    _log.info("loaded local model %s in %.2fs", path, time.perf_counter() - start)
    return _LoadedModel(llm=llm, render=render, stop=stop)


def load_model(model: str) -> _LoadedModel:
    """The cached loaded model for ``model`` (loading it on first use)."""
    path = str(resolve_model_path(model))
    with _models_lock:  # loads are rare; holding the lock avoids double loads
        if path not in _models:
            _models[path] = _load(Path(path))
        return _models[path]


# -- prompt rendering ----------------------------------------------------------------


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return str(content)


def _args(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def render_messages(messages: list[dict[str, Any]], system_extra: str | None = None) -> list[dict[str, str]]:
    """Flatten OpenAI-style messages to system/user/assistant text messages.

    Small chat templates (SmolLM2's included) only know those three roles, so
    assistant tool calls become the same JSON envelope the model is asked to
    produce, and tool results become user messages. All system content is
    merged into one leading system message.
    """
    system: list[str] = []
    out: list[dict[str, str]] = []
    names: dict[str, str] = {}
    for m in messages:
        role, text = m.get("role"), _text(m.get("content"))
        if role in ("system", "developer"):
            system.append(text)
        elif role == "assistant":
            parts = [text] if text else []
            for call in m.get("tool_calls") or []:
                fn = call.get("function", {})
                names[call.get("id", "")] = fn.get("name", "")
                parts.append(json.dumps({"tool": fn.get("name"), "arguments": _args(fn.get("arguments"))}))
            out.append({"role": "assistant", "content": "\n".join(parts)})
        elif role in ("tool", "function"):
            name = m.get("name") or names.get(m.get("tool_call_id", ""), "tool")
            out.append({"role": "user", "content": f"Result of tool `{name}`:\n{text}"})
        else:
            out.append({"role": "user", "content": text})
    if system_extra:
        system.append(system_extra)
    head = [{"role": "system", "content": "\n\n".join(s for s in system if s)}] if system else []
    return head + out


def _fit(model: _LoadedModel, messages: list[dict[str, str]], max_tokens: int) -> tuple[str, bool]:
    """Render ``messages`` to a prompt that leaves ``max_tokens`` free in the context.

    Drops the oldest non-system messages (never the last one), then cuts the
    middle out of the longest remaining message. Returns (prompt, trimmed).
    """
    budget = N_CTX - max_tokens - _CONTEXT_MARGIN
    msgs = [dict(m) for m in messages]
    trimmed = False
    while True:
        prompt = model.render(msgs)
        excess = model.count(prompt) - budget
        if excess <= 0:
            return prompt, trimmed
        trimmed = True
        droppable = [i for i, m in enumerate(msgs[:-1]) if m["role"] != "system"]
        if droppable:
            freed, drop = 0, set()
            for i in droppable:
                drop.add(i)
                freed += model.count(msgs[i]["content"]) + 4
                if freed >= excess:
                    break
            msgs = [m for i, m in enumerate(msgs) if i not in drop]
            continue
        longest = max(msgs, key=lambda m: len(m["content"]))
        tokens = model.llm.tokenize(longest["content"].encode("utf-8"), add_bos=False, special=False)
        keep = len(tokens) - excess - len(_TRUNCATION_MARK) // 2
        if keep < 64:
            raise _error(f"prompt does not fit the {N_CTX}-token context even after trimming; lower max_tokens")
        head = model.llm.detokenize(tokens[: keep // 2]).decode("utf-8", "ignore")
        tail = model.llm.detokenize(tokens[len(tokens) - (keep - keep // 2) :]).decode("utf-8", "ignore")
        longest["content"] = head + _TRUNCATION_MARK + tail


# -- structured output and tools -----------------------------------------------------


def _compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _response_format_plan(response_format: Any) -> tuple[str | None, str | None]:
    """(gbnf, system prompt addition) for a ``response_format`` value."""
    if response_format is None:
        return None, None
    if hasattr(response_format, "model_json_schema"):  # a pydantic class
        response_format = {"type": "json_schema", "json_schema": {"schema": response_format.model_json_schema()}}
    kind = response_format.get("type")
    if kind == "json_schema":
        spec = response_format.get("json_schema") or {}
        schema = spec.get("schema", spec.get("schema_", {}))
        return json_schema_to_gbnf(
            schema
        ), f"Reply with only a JSON object matching this JSON schema:\n{_compact(schema)}"
    if kind == "json_object":
        return json_schema_to_gbnf({"type": "object"}), "Reply with only a JSON object."
    return None, None  # "text"


def _tool_plan(tools: list[dict[str, Any]], tool_choice: Any) -> tuple[str, str] | None:
    """(gbnf, system prompt addition) for a tool-calling request, or None if tools are off."""
    if not tools or tool_choice == "none":
        return None
    functions = [t["function"] for t in tools if t.get("type", "function") == "function"]
    forced = None
    if isinstance(tool_choice, dict):
        forced = (tool_choice.get("function") or {}).get("name")
        functions = [f for f in functions if f["name"] == forced] or functions
    allow_message = tool_choice not in ("required",) and forced is None

    builder = GrammarBuilder()
    alternatives = []
    lines = ["You can call these tools:"]
    for i, fn in enumerate(functions):
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        args = builder.add_schema(params, f"tool-{i}-args")
        alternatives.append(
            builder.add_rule(
                f"tool-{i}-call",
                f'"{{" ws "\\"tool\\"" ws ":" ws {_json_gbnf(fn["name"])} ws "," ws "\\"arguments\\"" ws ":" ws {args} ws "}}"',
            )
        )
        desc = f": {fn['description']}" if fn.get("description") else ""
        lines.append(f"- {fn['name']}{desc}\n  arguments schema: {_compact(params)}")
    lines.append('To call a tool, reply with only {"tool": "<tool name>", "arguments": {...}}.')
    if allow_message:
        string = builder.add_schema({"type": "string"}, "message-text")
        alternatives.append(builder.add_rule("message", f'"{{" ws "\\"message\\"" ws ":" ws {string} ws "}}"'))
        lines.append('To answer without a tool, reply with only {"message": "<your answer>"}.')
    else:
        lines.append("You must call " + (f"the tool {forced}." if forced else "one of the tools."))
    return builder.render(" | ".join(alternatives)), "\n".join(lines)


def _json_gbnf(value: str) -> str:
    """GBNF literal for the JSON encoding of the string ``value``."""
    return gbnf_literal(json.dumps(value, ensure_ascii=False))


def _tool_message(text: str) -> tuple[Message, str] | None:
    """Translate the tool envelope into an assistant message; None if ``text`` isn't one."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return None
    if isinstance(obj, dict) and "tool" in obj:
        call = {
            "id": f"call_{uuid.uuid4().hex}",
            "type": "function",
            "function": {"name": obj["tool"], "arguments": json.dumps(obj.get("arguments", {}))},
        }
        return Message(content=None, role="assistant", tool_calls=[call]), "tool_calls"
    if isinstance(obj, dict) and "message" in obj:
        return Message(content=str(obj["message"]), role="assistant"), "stop"
    return None


# -- the litellm handler -------------------------------------------------------------


def _given(value: Any, default: Any) -> Any:
    return default if value is None else value


@dataclass
class _Result:
    message: Message
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int


class LocalLLM(CustomLLM):
    """litellm custom handler serving GGUF models in-process with llama.cpp."""

    def generate(self, model: str, messages: list[dict[str, Any]], optional_params: dict[str, Any]) -> _Result:
        params = optional_params or {}
        tool_plan = _tool_plan(params.get("tools") or [], params.get("tool_choice"))
        gbnf, system_extra = tool_plan or _response_format_plan(params.get("response_format"))
        max_tokens = int(params.get("max_tokens") or params.get("max_completion_tokens") or DEFAULT_MAX_TOKENS)
        max_tokens = max(1, min(max_tokens, N_CTX // 2))
        stop = params.get("stop") or []
        stop = [stop] if isinstance(stop, str) else list(stop)

        loaded = load_model(model)
        chat = render_messages(messages, system_extra)
        with loaded.lock:
            prompt, trimmed = _fit(loaded, chat, max_tokens)
            if trimmed:
                _log.warning("local model %s: prompt trimmed to fit %d-token context", model, N_CTX)
            temperature = float(_given(params.get("temperature"), DEFAULT_TEMPERATURE))
            grammar, processors, gate = None, None, None
            if gbnf:
                grammar = loaded.grammar(gbnf)  # parsed (and cached) once, errors as ValueError
                processors = [ClosingPressure(loaded.closers(), max_tokens)]
                if temperature == 0.0 and FAST_GRAMMAR:  # greedy: check the top token first
                    gate = GrammarGate(loaded.llm._model.vocab, gbnf, loaded.llm.n_vocab())
                    grammar, processors = None, [*processors, gate]
            with CallTimer(loaded.llm) as timer:
                try:
                    out = loaded.llm.create_completion(
                        prompt=prompt,
                        max_tokens=max_tokens,
                        temperature=temperature,
                        top_p=float(_given(params.get("top_p"), 0.95)),
                        seed=params.get("seed"),
                        stop=loaded.stop + stop,
                        grammar=grammar,
                        logits_processor=processors,
                    )
                finally:
                    if gate is not None:
                        gate.close()
                timer.write(CALL_CONTEXT.get().get("purpose", "?"), out["usage"], bool(gbnf), max_tokens)
        choice, usage = out["choices"][0], out["usage"]
        text = choice["text"].strip() if gbnf else choice["text"]
        finish = choice["finish_reason"] or "stop"
        parsed = _tool_message(text) if tool_plan else None
        message, finish = parsed if parsed else (Message(content=text, role="assistant"), finish)
        if tool_plan and parsed is None:
            finish = "length"  # grammar output cut off by max_tokens
        return _Result(message, finish, usage["prompt_tokens"], usage["completion_tokens"])

    def completion(  # type: ignore[override]
        self,
        model: str,
        messages: list,
        api_base: str,
        custom_prompt_dict: dict,
        model_response: ModelResponse,
        print_verbose: Callable,
        encoding: Any,
        api_key: Any,
        logging_obj: Any,
        optional_params: dict,
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        result = self.generate(model, messages, optional_params)
        model_response.choices = [Choices(finish_reason=result.finish_reason, index=0, message=result.message)]
        model_response.model = f"{PROVIDER}/{model}"
        model_response.created = int(time.time())
        model_response.usage = Usage(  # type: ignore[attr-defined]
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            total_tokens=result.prompt_tokens + result.completion_tokens,
        )
        return model_response

    async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:  # type: ignore[override]
        # llama.cpp is blocking; a worker thread keeps the event loop free.
        return await asyncio.to_thread(self.completion, *args, **kwargs)

    def streaming(self, model: str, messages: list, *args: Any, **kwargs: Any) -> Iterator[GenericStreamingChunk]:  # type: ignore[override]
        """Whole response as a single chunk: enough for callers that insist on streaming."""
        result = self.generate(model, messages, kwargs.get("optional_params") or {})
        calls = result.message.tool_calls or []
        tool_use = None
        if calls:
            tool_use = {
                "id": calls[0].id,
                "type": "function",
                "function": {"name": calls[0].function.name, "arguments": calls[0].function.arguments},
                "index": 0,
            }
        yield GenericStreamingChunk(
            text=result.message.content or "",
            tool_use=tool_use,  # type: ignore[typeddict-item]
            is_finished=True,
            finish_reason=result.finish_reason,
            usage={
                "prompt_tokens": result.prompt_tokens,
                "completion_tokens": result.completion_tokens,
                "total_tokens": result.prompt_tokens + result.completion_tokens,
            },
            index=0,
        )

    async def astreaming(self, model: str, messages: list, *args: Any, **kwargs: Any):  # type: ignore[override]
        chunks = await asyncio.to_thread(lambda: list(self.streaming(model, messages, *args, **kwargs)))
        for chunk in chunks:
            yield chunk


_handler = LocalLLM()
_register_lock = threading.Lock()


def register() -> None:
    """Route ``local/...`` models to the in-process handler (idempotent)."""
    with _register_lock:
        if not any(entry.get("provider") == PROVIDER for entry in litellm.custom_provider_map):
            litellm.custom_provider_map.append({"provider": PROVIDER, "custom_handler": _handler})
        litellm.utils.custom_llm_setup()  # adds "local" to litellm's provider lists
        # Zero-cost model info so cost tracking and capability checks work offline.
        litellm.register_model(
            {
                DEFAULT_LOCAL_MODEL: {
                    "litellm_provider": PROVIDER,
                    "mode": "chat",
                    "max_input_tokens": N_CTX,
                    "max_output_tokens": N_CTX // 2,
                    "input_cost_per_token": 0.0,
                    "output_cost_per_token": 0.0,
                    "cache_creation_input_token_cost": 0.0,
                    "cache_read_input_token_cost": 0.0,
                    "supports_function_calling": True,
                    "supports_tool_choice": True,
                    "supports_response_schema": True,
                }
            }
        )
