"""Wire-level fakes of OpenAI's Chat Completions API and DashScope's OpenAI-compatible mode
(what litellm's ``openai/`` and ``dashscope/`` providers call): ``POST /chat/completions``.

OpenAI: https://platform.openai.com/docs/api-reference/chat/create. DashScope (Alibaba Cloud
Model Studio): https://www.alibabacloud.com/help/en/model-studio/compatibility-of-openai-with-dashscope
and https://www.alibabacloud.com/help/en/model-studio/json-mode. Errors have the shape
``{"error": {"message", "type", "param", "code"}}``.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from tests.provider_fakes.base import Answer, FakeProvider, Refused, Turn

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class OpenAIFake(FakeProvider):
    name = "openai"

    def route(self, path: str) -> bool:
        return path.rstrip("/").endswith("/chat/completions")

    def error_body(self, refused: Refused) -> Any:
        return {"error": {"message": refused.message, "type": "invalid_request_error",
                          "param": None, "code": refused.rule}}

    def decode(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Turn:
        if not headers.get("authorization", "").startswith("Bearer "):
            raise Refused("api_key", "You didn't provide an API key.", 401)
        messages = body.get("messages") or []
        if not messages:
            raise Refused("messages", "[] is too short - 'messages'")
        # https://platform.openai.com/docs/api-reference/chat/create (messages): the roles, and
        # https://platform.openai.com/docs/guides/function-calling: every tool call is answered
        # by a tool message with its id before the conversation goes on
        open_calls: list[str] = []
        for i, m in enumerate(messages):
            role = m.get("role")
            if role not in ("system", "developer", "user", "assistant", "tool"):
                raise Refused("role", f"Invalid value: '{role}'. Supported values are: 'system', "
                              "'assistant', 'user', 'function', 'tool', and 'developer'.")
            if role == "tool":
                if m.get("tool_call_id") not in open_calls:
                    raise Refused("tool_follows_call", "Invalid parameter: messages with role "
                                  "'tool' must be a response to a preceeding message with "
                                  "'tool_calls'.")
                open_calls.remove(m["tool_call_id"])
                continue
            if open_calls:
                raise Refused("calls_answered", "An assistant message with 'tool_calls' must be "
                              "followed by tool messages responding to each 'tool_call_id'. "
                              f"The following tool_call_ids did not have response messages: "
                              f"{', '.join(open_calls)}")
            if role == "assistant":
                open_calls = [c["id"] for c in m.get("tool_calls") or []]
        # https://platform.openai.com/docs/api-reference/chat/create (tools): a function name
        # matches ^[a-zA-Z0-9_-]{1,64}$ and its parameters are a JSON Schema object
        tools = []
        for i, tool in enumerate(body.get("tools") or []):
            fn = tool.get("function") or {}
            if tool.get("type") != "function" or not _NAME.match(fn.get("name", "")):
                raise Refused("tool_name", f"Invalid 'tools[{i}].function.name': string does not "
                              "match pattern. Expected a string that matches the pattern "
                              "'^[a-zA-Z0-9_-]+$'.")
            params = fn.get("parameters")
            # "Omitting parameters defines a function with an empty parameter list."
            if params is not None and params.get("type") != "object":
                raise Refused("parameters", f"Invalid schema for function '{fn['name']}': schema "
                              "must be a JSON Schema of 'type: \"object\"'.")
            tools.append(fn["name"])
        schema = self._check_response_format(body)
        self.extra_checks(body)
        system = " ".join(m.get("content") or "" for m in messages if m["role"] in ("system", "developer"))
        convo = [self._neutral(m) for m in messages if m["role"] not in ("system", "developer")]
        return Turn(model=body.get("model", ""), system=system, messages=convo, tools=tools,
                    schema=schema, raw=body)

    def _check_response_format(self, body: dict[str, Any]) -> dict[str, Any] | None:
        # https://platform.openai.com/docs/api-reference/chat/create (response_format)
        fmt = body.get("response_format")
        if not fmt or fmt.get("type") == "text":
            return None
        if fmt.get("type") == "json_object":
            return {}
        if fmt.get("type") != "json_schema":
            raise Refused("response_format", f"Invalid value: '{fmt.get('type')}'. Supported values"
                          " are: 'json_object', 'json_schema', and 'text'.")
        spec = fmt.get("json_schema") or {}
        # https://platform.openai.com/docs/guides/structured-outputs: a name is required
        if not _NAME.match(spec.get("name", "")):
            raise Refused("schema_name", "Missing required parameter: 'response_format.json_schema.name'.")
        schema = spec.get("schema")
        if not isinstance(schema, dict):
            raise Refused("schema", "Invalid schema for response_format: schema must be an object")
        if spec.get("strict"):
            self._check_strict(spec["name"], schema)
        return schema

    @staticmethod
    def _check_strict(name: str, schema: dict[str, Any]) -> None:
        """https://platform.openai.com/docs/guides/structured-outputs#supported-schemas: in
        strict mode every object lists all its properties as required and sets
        ``additionalProperties: false``."""
        from tests.provider_fakes.schema_rules import nodes

        for path, node in nodes(schema):
            if "properties" in node:
                if node.get("additionalProperties") is not False:
                    raise Refused("strict_schema", f"Invalid schema for response_format '{name}': "
                                  "'additionalProperties' is required to be supplied and to be false.")
                if set(node.get("required") or []) != set(node["properties"]):
                    raise Refused("strict_schema", f"Invalid schema for response_format '{name}': "
                                  "'required' is required to be supplied and to be an array "
                                  "including every key in properties.")

    def extra_checks(self, body: dict[str, Any]) -> None:
        """What a compatible provider documents on top of OpenAI's rules."""

    @staticmethod
    def _neutral(m: dict[str, Any]) -> dict[str, Any]:
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        out = {"role": m["role"], "content": content}
        if m.get("tool_calls"):
            out["tool_calls"] = [{"id": c["id"], "name": c["function"]["name"],
                                  "arguments": json.loads(c["function"].get("arguments") or "{}")}
                                 for c in m["tool_calls"]]
        if m["role"] == "tool":
            out["tool_call_id"] = m["tool_call_id"]
        return out

    def encode(self, turn: Turn, answer: Answer) -> tuple[int, dict, Any]:
        if answer.special == "rate_limited":
            return 429, {"retry-after": f"{answer.retry_s:g}"}, {"error": {
                "message": "Rate limit reached for requests", "type": "requests",
                "param": None, "code": "rate_limit_exceeded"}}
        if answer.special == "overloaded":
            return 503, {}, {"error": {"message": "The server is overloaded", "type": "server_error",
                                       "param": None, "code": None}}
        message: dict[str, Any] = {"role": "assistant", "content": answer.text}
        finish = "stop"
        if answer.calls:
            calls = []
            for name, arguments in answer.calls:
                text = json.dumps(arguments)
                if answer.special == "cut_in_call":
                    text = text[: max(1, len(text) // 2)]
                calls.append({"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
                              "function": {"name": name, "arguments": text}})
            message["tool_calls"] = calls
            finish = "tool_calls"
        if answer.special == "cut_in_call":
            finish = "length"
        if answer.special in ("blocked", "malformed_call"):
            message, finish = {"role": "assistant", "content": None}, "content_filter"
        return 200, {}, {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
                         "created": 0, "model": turn.model,
                         "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                         "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}


class DashScopeFake(OpenAIFake):
    """DashScope's OpenAI-compatible mode: OpenAI's rules plus DashScope's own."""

    name = "dashscope"

    def error_body(self, refused: Refused) -> Any:
        return {"error": {"message": refused.message, "type": "invalid_request_error",
                          "param": None, "code": "invalid_parameter_error"},
                "request_id": str(uuid.uuid4())}

    def extra_checks(self, body: dict[str, Any]) -> None:
        fmt = body.get("response_format") or {}
        # https://www.alibabacloud.com/help/en/model-studio/json-mode: JSON Object mode needs
        # the word "json" in the system or user message
        if fmt.get("type") == "json_object" and "json" not in json.dumps(body["messages"]).lower():
            raise Refused("json_word", "'messages' must contain the word 'json' in some form, to "
                          "use 'response_format' of type 'json_object'.")
        # https://www.alibabacloud.com/help/en/model-studio/qwen-api-reference: seed in
        # [0, 2^31 - 1], temperature in [0, 2)
        seed = body.get("seed")
        if seed is not None and not 0 <= seed <= 2**31 - 1:
            raise Refused("seed", "Range of seed should be [0, 2147483647]")
        temperature = body.get("temperature")
        if temperature is not None and not 0 <= temperature < 2:
            raise Refused("temperature", "Range of temperature should be [0.0, 2.0)")
        # https://www.alibabacloud.com/help/en/model-studio/qwen-api-reference (messages)
        if not any(m.get("role") == "user" for m in body["messages"]):
            raise Refused("user_message", "messages must contain a user message")
