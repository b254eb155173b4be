"""A wire-level fake of Gemini's ``generateContent`` (what litellm's ``gemini/`` provider calls).

Request: ``POST /models/{model}:generateContent`` with ``contents`` (roles ``user`` / ``model``,
parts ``text`` / ``functionCall`` / ``functionResponse`` / ``thought``), ``systemInstruction``,
``tools[].functionDeclarations`` and ``generationConfig`` (``responseSchema`` or
``responseJsonSchema``). Reference: https://ai.google.dev/api/generate-content. Errors have the
shape ``{"error": {"code", "message", "status"}}``
(https://ai.google.dev/gemini-api/docs/troubleshooting).
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from typing import Any

from tests.provider_fakes import schema_rules
from tests.provider_fakes.base import Answer, FakeProvider, Refused, Turn, first

DUMMY_SIGNATURE = base64.b64encode(b"skip_thought_signature_validator").decode()
"""The placeholder Gemini's thought-signature page allows for history it did not produce."""
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$")


class GeminiFake(FakeProvider):
    name = "gemini"

    def __init__(self, script, *, empty_object_refused: bool = True):
        self.empty_object_refused = empty_object_refused
        self.signatures: set[str] = set()
        self.dummy_signatures = 0
        """Function calls sent back with the documented dummy signature instead of the model's."""
        super().__init__(script)

    def route(self, path: str) -> bool:
        return bool(re.match(r"^/(v1beta/)?models/[^/:]+:generateContent", path))

    def error_body(self, refused: Refused) -> Any:
        status = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED"}.get(
            refused.status, "INVALID_ARGUMENT")
        return {"error": {"code": refused.status, "message": refused.message, "status": status}}

    # -- the request ---------------------------------------------------------------------
    def decode(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Turn:
        if not (headers.get("x-goog-api-key") or "key=" in path):
            raise Refused("api_key", "Method doesn't allow unregistered callers. Please use API "
                          "Key or other form of API consumer identity to call this API.", 403)
        model = re.match(r"^/(?:v1beta/)?models/([^/:]+):", path).group(1)
        contents = body.get("contents") or []
        # https://ai.google.dev/api/generate-content#request-body: contents is required
        if not contents:
            raise Refused("contents", "* GenerateContentRequest.contents: contents is not specified")
        for i, content in enumerate(contents):
            # https://ai.google.dev/api/caching#Content: "Must be either 'user' or 'model'"
            if content.get("role") not in ("user", "model"):
                raise Refused("role", f"Please use a valid role: user, model. (contents[{i}])")
            if not content.get("parts"):
                raise Refused("parts", f"* GenerateContentRequest.contents[{i}].parts: contents.parts "
                              "must not be empty.")
        # the conservative reading (multi-turn chat starts with the user's turn):
        # https://ai.google.dev/gemini-api/docs/text-generation#multi-turn-conversations
        if contents[0]["role"] != "user":
            raise Refused("user_first", "Please ensure that multiturn requests alternate between "
                          "user and model, and that the first turn is a user turn.")
        self._check_function_turns(contents)
        if "gemini-3" in model:
            self._check_signatures(contents)
        tools = self._check_tools(body.get("tools") or [])
        schema = self._check_generation_config(first(body, "generationConfig", "generation_config",
                                                     default={}))
        system = " ".join(p.get("text", "") for p in
                          first(body, "systemInstruction", "system_instruction", default={}).get("parts", []))
        return Turn(model=model, system=system, messages=self._messages(contents), tools=tools,
                    schema=schema, raw=body)

    @staticmethod
    def _calls(content: dict[str, Any]) -> list[dict[str, Any]]:
        return [first(p, "functionCall", "function_call") for p in content["parts"]
                if first(p, "functionCall", "function_call")]

    @staticmethod
    def _responses(content: dict[str, Any]) -> list[dict[str, Any]]:
        return [first(p, "functionResponse", "function_response") for p in content["parts"]
                if first(p, "functionResponse", "function_response")]

    def _check_function_turns(self, contents: list[dict[str, Any]]) -> None:
        """https://ai.google.dev/gemini-api/docs/function-calling: a function call turn follows
        a user turn or a function response turn, and the next turn answers every call."""
        for i, content in enumerate(contents):
            calls = self._calls(content)
            if not calls:
                continue
            if i == 0 or contents[i - 1]["role"] != "user":
                raise Refused("call_after_user", "Please ensure that function call turn comes "
                              "immediately after a user turn or after a function response turn.")
            if i + 1 < len(contents):
                answered = self._responses(contents[i + 1])
                if len(answered) != len(calls):
                    raise Refused("responses_match_calls", "Please ensure that the number of "
                                  "function response parts is equal to the number of function "
                                  "call parts of the function call turn.")

    def _check_signatures(self, contents: list[dict[str, Any]]) -> None:
        """https://ai.google.dev/gemini-api/docs/thought-signatures: on Gemini 3 the first
        function call part of each model turn of the current turn carries the signature the
        model sent, unchanged."""
        start = max((i for i, c in enumerate(contents) if c["role"] == "user"
                     and any("text" in p for p in c["parts"])), default=0)
        for content in contents[start:]:
            parts = [p for p in content["parts"] if first(p, "functionCall", "function_call")]
            if content["role"] == "model" and parts:
                signature = first(parts[0], "thoughtSignature", "thought_signature")
                if signature is None:
                    raise Refused("thought_signature", "Function call is missing a "
                                  "thought_signature in functionCall parts. This is required for "
                                  "tools to work correctly.")
                if signature == DUMMY_SIGNATURE:  # documented: skips validation, costs quality
                    with self.lock:
                        self.dummy_signatures += 1
                elif signature not in self.signatures:
                    raise Refused("thought_signature", "Corrupted thought signature.")

    def _check_tools(self, tools: list[dict[str, Any]]) -> list[str]:
        names = []
        for t, tool in enumerate(tools):
            for d, decl in enumerate(first(tool, "functionDeclarations", "function_declarations",
                                           default=[])):
                where = f"GenerateContentRequest.tools[{t}].function_declarations[{d}]"
                # https://ai.google.dev/api/caching#FunctionDeclaration (name rules)
                if not _NAME.match(decl.get("name", "")):
                    raise Refused("function_name", f"* {where}.name: Invalid function name.")
                params = decl.get("parameters")
                # https://ai.google.dev/api/caching#Schema; refused in 2024-25 reports as
                # "properties: should be non-empty for OBJECT type"
                if self.empty_object_refused and isinstance(params, dict) \
                        and str(params.get("type", "")).lower() == "object" and not params.get("properties"):
                    raise Refused("object_properties", f"* {where}.parameters.properties: should be "
                                  "non-empty for OBJECT type")
                names.append(decl["name"])
        return names

    @staticmethod
    def _check_generation_config(config: dict[str, Any]) -> dict[str, Any] | None:
        temperature = config.get("temperature")
        # https://ai.google.dev/api/generate-content#generationconfig: temperature in [0.0, 2.0]
        if temperature is not None and not 0 <= temperature <= 2:
            raise Refused("temperature", "* GenerateContentRequest.generation_config.temperature: "
                          "must be in [0.0, 2.0]")
        json_schema = first(config, "responseJsonSchema", "response_json_schema")
        openapi = first(config, "responseSchema", "response_schema")
        schema = json_schema if json_schema is not None else openapi
        if schema is None:
            return None
        # https://ai.google.dev/gemini-api/docs/structured-output: a schema needs the JSON type
        if first(config, "responseMimeType", "response_mime_type") != "application/json":
            raise Refused("mime_type", "* GenerateContentRequest.generation_config.response_mime_type:"
                          " a response schema requires response_mime_type application/json")
        if json_schema is not None and openapi is not None:
            raise Refused("one_schema", "response_schema and response_json_schema are exclusive")
        if openapi is not None and (problems := schema_rules.gemini_openapi_violations(openapi)):
            raise Refused("openapi_schema", problems[0])
        return schema

    def _messages(self, contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        pending: list[str] = []
        for content in contents:
            texts = [p["text"] for p in content["parts"] if "text" in p and not p.get("thought")]
            if content["role"] == "model":
                calls = [{"id": f"g{len(out)}_{i}", "name": c["name"], "arguments": c.get("args") or {}}
                         for i, c in enumerate(self._calls(content))]
                pending = [c["id"] for c in calls]
                out.append({"role": "assistant", "content": " ".join(texts) or None, "tool_calls": calls})
                continue
            for i, response in enumerate(self._responses(content)):
                out.append({"role": "tool", "tool_call_id": pending[i] if i < len(pending) else "",
                            "name": response.get("name"), "content": json.dumps(response.get("response"))})
            if texts:
                out.append({"role": "user", "content": " ".join(texts)})
        return out

    # -- the answer ------------------------------------------------------------------------
    def encode(self, turn: Turn, answer: Answer) -> tuple[int, dict, Any]:
        usage = {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120}
        if answer.special == "rate_limited":
            return 429, {}, {"error": {"code": 429, "message": "Resource has been exhausted (e.g. "
                                       "check quota).", "status": "RESOURCE_EXHAUSTED", "details": [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo",
                 "retryDelay": f"{answer.retry_s:g}s"}]}}
        if answer.special == "overloaded":
            return 503, {}, {"error": {"code": 503, "message": "The model is overloaded. Please try "
                                       "again later.", "status": "UNAVAILABLE"}}
        if answer.special == "blocked":  # a prompt blocked before generation: no candidate
            return 200, {}, {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": usage}
        if answer.special == "malformed_call":
            return 200, {}, {"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL",
                                             "finishMessage": "Malformed function call: print(get(",
                                             "index": 0}], "usageMetadata": usage}
        parts: list[dict[str, Any]] = []
        if answer.thought:
            parts.append({"text": answer.thought, "thought": True})
        if answer.text:
            parts.append({"text": answer.text})
        for i, (name, arguments) in enumerate(answer.calls):
            part: dict[str, Any] = {"functionCall": {"name": name, "args": arguments}}
            if i == 0:  # as documented: only the first of parallel calls carries the signature
                signature = base64.b64encode(uuid.uuid4().bytes).decode()
                with self.lock:
                    self.signatures.add(signature)
                part["thoughtSignature"] = signature
            parts.append(part)
        finish = "MAX_TOKENS" if answer.special == "cut_in_call" else "STOP"
        return 200, {}, {"candidates": [{"content": {"role": "model", "parts": parts},
                                         "finishReason": finish, "index": 0}],
                         "usageMetadata": usage, "modelVersion": turn.model}
