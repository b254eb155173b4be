"""A wire-level fake of Anthropic's Messages API (what litellm's ``anthropic/`` provider calls).

Request: ``POST /v1/messages`` with ``model``, ``max_tokens``, ``system``, ``messages`` of content
blocks (``text``, ``tool_use``, ``tool_result``), ``tools[].input_schema`` and, for a schema-
constrained answer, ``output_format`` (beta header ``structured-outputs-2025-11-13``) or
``output_config.format``. Reference: https://docs.anthropic.com/en/api/messages. Errors:
``{"type": "error", "error": {"type", "message"}}`` (https://docs.anthropic.com/en/api/errors):
400 ``invalid_request_error``, 429 ``rate_limit_error`` with ``retry-after``, 529
``overloaded_error``.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from tests.provider_fakes import schema_rules
from tests.provider_fakes.base import Answer, FakeProvider, Refused, Turn

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
STRUCTURED_BETA = "structured-outputs-2025-11-13"


class AnthropicFake(FakeProvider):
    name = "anthropic"

    def route(self, path: str) -> bool:
        return path.rstrip("/") == "/v1/messages"

    def error_body(self, refused: Refused) -> Any:
        kind = {401: "authentication_error", 404: "not_found_error"}.get(refused.status,
                                                                         "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": refused.message}}

    def decode(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Turn:
        if not headers.get("x-api-key"):
            raise Refused("api_key", "x-api-key header is required", 401)
        # https://docs.anthropic.com/en/api/versioning: the version header is required
        if not headers.get("anthropic-version"):
            raise Refused("version", "anthropic-version: header is required")
        # https://docs.anthropic.com/en/api/messages: max_tokens is required, >= 1
        if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
            raise Refused("max_tokens", "max_tokens: Field required")
        # https://docs.anthropic.com/en/api/messages: temperature ranges from 0.0 to 1.0
        if body.get("temperature") is not None and not 0 <= body["temperature"] <= 1:
            raise Refused("temperature", "temperature: range: 0..1")
        messages = body.get("messages") or []
        if not messages:
            raise Refused("messages", "messages: at least one message is required")
        for i, m in enumerate(messages):
            # no "system" role in messages: the system prompt is the top-level ``system``
            if m.get("role") not in ("user", "assistant"):
                raise Refused("role", f"messages.{i}.role: Input should be 'user' or 'assistant'")
        # the documented (2024) rule this fake keeps: the first message uses the user role
        if messages[0]["role"] != "user":
            raise Refused("user_first", "messages: first message must use the \"user\" role")
        self._check_blocks(messages)
        tools = self._check_tools(body.get("tools") or [])
        schema = self._check_output_format(headers, body)
        system = body.get("system") or ""
        if isinstance(system, list):
            system = " ".join(b.get("text", "") for b in system)
        return Turn(model=body.get("model", ""), system=system, messages=self._messages(messages),
                    tools=tools, schema=schema, raw=body)

    @staticmethod
    def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
        content = message.get("content")
        return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])

    def _check_blocks(self, messages: list[dict[str, Any]]) -> None:
        for i, m in enumerate(messages):
            blocks = self._blocks(m)
            if not blocks and i != len(messages) - 1:
                raise Refused("empty_content", f"messages.{i}: all messages must have non-empty "
                              "content except for the optional final assistant message")
            for j, block in enumerate(blocks):
                if block.get("type") == "text" and not (block.get("text") or "").strip():
                    raise Refused("empty_text", f"messages.{i}.content.{j}.text: text content "
                                  "blocks must be non-empty")
            # https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use:
            # each tool_use is answered by a tool_result in the very next (user) message
            uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
            if m["role"] == "assistant" and uses:
                nxt = self._blocks(messages[i + 1]) if i + 1 < len(messages) else []
                answered = {b.get("tool_use_id") for b in nxt if b.get("type") == "tool_result"}
                if i + 1 < len(messages) and not set(uses) <= answered:
                    raise Refused("tool_result_follows", f"messages.{i + 1}: `tool_use` ids were "
                                  f"found without `tool_result` blocks immediately after: "
                                  f"{sorted(set(uses) - answered)}")
            results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
            if results:
                before = self._blocks(messages[i - 1]) if i > 0 else []
                known = {b.get("id") for b in before if b.get("type") == "tool_use"}
                if not set(results) <= known:
                    raise Refused("tool_result_known", f"messages.{i}.content: unexpected "
                                  "`tool_use_id` found in `tool_result` blocks")

    @staticmethod
    def _check_tools(tools: list[dict[str, Any]]) -> list[str]:
        names = []
        for i, tool in enumerate(tools):
            if not _TOOL_NAME.match(tool.get("name", "")):
                raise Refused("tool_name", f"tools.{i}.custom.name: String should match pattern "
                              "'^[a-zA-Z0-9_-]{1,128}$'")
            schema = tool.get("input_schema")
            # https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use:
            # input_schema is required and describes an object
            if not isinstance(schema, dict) or schema.get("type") != "object":
                raise Refused("input_schema", f"tools.{i}.custom.input_schema: Input should be an "
                              "object schema with type 'object'")
            names.append(tool["name"])
        return names

    @staticmethod
    def _check_output_format(headers: dict[str, str], body: dict[str, Any]) -> dict[str, Any] | None:
        fmt = body.get("output_format")
        if fmt is None:
            fmt = (body.get("output_config") or {}).get("format")
        elif STRUCTURED_BETA not in headers.get("anthropic-beta", ""):
            # the beta parameter needs its beta header (structured-outputs page)
            raise Refused("beta_header", "output_format: Extra inputs are not permitted")
        if fmt is None:
            return None
        if fmt.get("type") != "json_schema" or not isinstance(fmt.get("schema"), dict):
            raise Refused("output_format", "output_format.type: Input should be 'json_schema'")
        if problems := schema_rules.anthropic_violations(fmt["schema"]):
            raise Refused("schema_subset", problems[0])
        return fmt["schema"]

    def _messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for m in messages:
            blocks = self._blocks(m)
            text = " ".join(b["text"] for b in blocks if b.get("type") == "text") or None
            if m["role"] == "assistant":
                calls = [{"id": b["id"], "name": b["name"], "arguments": b.get("input") or {}}
                         for b in blocks if b.get("type") == "tool_use"]
                out.append({"role": "assistant", "content": text, "tool_calls": calls})
                continue
            for b in blocks:
                if b.get("type") == "tool_result":
                    content = b.get("content")
                    if isinstance(content, list):
                        content = " ".join(c.get("text", "") for c in content)
                    out.append({"role": "tool", "tool_call_id": b["tool_use_id"], "content": content})
            if text:
                out.append({"role": "user", "content": text})
        return out

    def encode(self, turn: Turn, answer: Answer) -> tuple[int, dict, Any]:
        if answer.special == "rate_limited":
            return 429, {"retry-after": f"{answer.retry_s:g}"}, {"type": "error", "error": {
                "type": "rate_limit_error", "message": "Number of request tokens has exceeded your "
                "per-minute rate limit"}}
        if answer.special == "overloaded":
            return 529, {}, {"type": "error", "error": {"type": "overloaded_error",
                                                        "message": "Overloaded"}}
        content: list[dict[str, Any]] = []
        if answer.text:
            content.append({"type": "text", "text": answer.text})
        for name, arguments in answer.calls:
            content.append({"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}", "name": name,
                            "input": {} if answer.special == "cut_in_call" else arguments})
        stop = "tool_use" if answer.calls else "end_turn"
        if answer.special == "cut_in_call":
            stop = "max_tokens"
        if answer.special in ("blocked", "malformed_call"):
            content, stop = [], "refusal"
        return 200, {}, {"id": f"msg_{uuid.uuid4().hex[:20]}", "type": "message", "role": "assistant",
                         "model": turn.model, "content": content, "stop_reason": stop,
                         "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 20}}
