"""Each provider fake refuses what its provider documents as invalid, with the provider's own
status and error shape, and accepts a valid request: so the fakes can fail the runtime.

Requests are built by hand here (the runtime would never send most of them); which rule refused
is read from the fake's ``refusals``.
"""

from __future__ import annotations

import copy
import json
import urllib.error
import urllib.request

import pytest

from tests.provider_fakes import AnthropicFake, Answer, DashScopeFake, GeminiFake, OpenAIFake


def post(url: str, body: dict, headers: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def answer(turn):
    return Answer(text="ok")


# ---- Gemini ---------------------------------------------------------------------------------

GEMINI_OK = {
    "contents": [{"role": "user", "parts": [{"text": "hi"}]},
                 {"role": "model", "parts": [{"functionCall": {"name": "get", "args": {"id": "1"}},
                                              "thoughtSignature": "SIG"}]},
                 {"role": "user", "parts": [{"functionResponse": {"name": "get", "response": {"r": 1}}}]}],
    "systemInstruction": {"parts": [{"text": "sys"}]},
    "tools": [{"functionDeclarations": [{"name": "get", "parameters": {
        "type": "object", "properties": {"id": {"type": "string"}}}}, {"name": "list_all"}]}],
    "generationConfig": {"temperature": 0},
}


def _gemini(mutate):
    body = copy.deepcopy(GEMINI_OK)
    mutate(body)
    return body


GEMINI_RULES = {
    "contents": lambda b: b.update(contents=[]),
    "role": lambda b: b["contents"][0].update(role="assistant"),
    "parts": lambda b: b["contents"][0].update(parts=[]),
    "user_first": lambda b: b["contents"].insert(0, {"role": "model", "parts": [{"text": "Hello!"}]}),
    "call_after_user": lambda b: b["contents"].insert(1, {"role": "model", "parts": [{"text": "x"}]}),
    "responses_match_calls": lambda b: b["contents"][2]["parts"].append(
        {"functionResponse": {"name": "get", "response": {}}}),
    "thought_signature": lambda b: b["contents"][1]["parts"][0].pop("thoughtSignature"),
    "function_name": lambda b: b["tools"][0]["functionDeclarations"][0].update(name="1-bad name"),
    "object_properties": lambda b: b["tools"][0]["functionDeclarations"][1].update(
        parameters={"type": "object"}),
    "temperature": lambda b: b["generationConfig"].update(temperature=3),
    "mime_type": lambda b: b["generationConfig"].update(responseJsonSchema={"type": "object"}),
    "openapi_schema": lambda b: b["generationConfig"].update(
        responseMimeType="application/json",
        responseSchema={"type": "OBJECT", "properties": {"g": {"type": "NUMBER", "enum": [0, 1]}}}),
}


@pytest.fixture(scope="module")
def gemini():
    with GeminiFake(answer) as fake:
        fake.signatures.add("SIG")
        yield fake


def test_gemini_accepts_a_valid_request(gemini):
    status, body = post(gemini.url + "/models/gemini-3-pro-preview:generateContent", GEMINI_OK,
                        {"x-goog-api-key": "k"})
    assert status == 200 and body["candidates"][0]["content"]["parts"] == [{"text": "ok"}]


@pytest.mark.parametrize("rule", sorted(GEMINI_RULES))
def test_gemini_refuses_what_its_docs_call_invalid(gemini, rule):
    before = len(gemini.refusals)
    status, body = post(gemini.url + "/models/gemini-3-pro-preview:generateContent",
                        _gemini(GEMINI_RULES[rule]), {"x-goog-api-key": "k"})
    assert status == 400 and body["error"]["status"] == "INVALID_ARGUMENT", body
    assert body["error"]["code"] == 400 and body["error"]["message"]
    assert [r.rule for r in gemini.refusals[before:]] == [rule]


def test_gemini_without_a_key_is_refused(gemini):
    status, body = post(gemini.url + "/models/gemini-2.5-pro:generateContent", GEMINI_OK, {})
    assert status == 403 and body["error"]["code"] == 403


# ---- Anthropic ------------------------------------------------------------------------------

ANTHROPIC_OK = {
    "model": "claude-sonnet-4-5", "max_tokens": 256, "temperature": 0,
    "system": [{"type": "text", "text": "sys"}],
    "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                 {"role": "assistant", "content": [{"type": "text", "text": "Looking."},
                                                   {"type": "tool_use", "id": "toolu_1", "name": "get",
                                                    "input": {"id": "1"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                               "content": "r"}]}],
    "tools": [{"name": "get", "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}}}],
}
SCHEMA_OK = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
             "additionalProperties": False}

ANTHROPIC_RULES = {
    "max_tokens": lambda b: b.pop("max_tokens"),
    "temperature": lambda b: b.update(temperature=1.5),
    "messages": lambda b: b.update(messages=[]),
    "role": lambda b: b["messages"].insert(0, {"role": "system", "content": "sys"}),
    "user_first": lambda b: b["messages"].insert(0, {"role": "assistant", "content": "Hello!"}),
    "empty_text": lambda b: b["messages"][0]["content"][0].update(text=""),
    "tool_result_follows": lambda b: b["messages"][2].update(content=[{"type": "text", "text": "?"}]),
    "tool_result_known": lambda b: b["messages"][2]["content"].append(
        {"type": "tool_result", "tool_use_id": "toolu_9", "content": "r"}),
    "tool_name": lambda b: b["tools"][0].update(name="bad name!"),
    "input_schema": lambda b: b["tools"][0].pop("input_schema"),
    "output_format": lambda b: b.update(output_config={"format": {"type": "json"}}),
    "beta_header": lambda b: b.update(output_format={"type": "json_schema", "schema": SCHEMA_OK}),
    "schema_subset": lambda b: b.update(output_config={"format": {"type": "json_schema", "schema": {
        **SCHEMA_OK, "properties": {"a": {"type": "array", "items": {"type": "integer"},
                                          "minItems": 6, "maxItems": 6}}}}}),
}


@pytest.fixture(scope="module")
def anthropic():
    with AnthropicFake(answer) as fake:
        yield fake


HEADERS = {"x-api-key": "k", "anthropic-version": "2023-06-01"}


def test_anthropic_accepts_a_valid_request(anthropic):
    status, body = post(anthropic.url + "/v1/messages", ANTHROPIC_OK, HEADERS)
    assert status == 200 and body["content"] == [{"type": "text", "text": "ok"}]
    with_schema = {**ANTHROPIC_OK, "output_config": {"format": {"type": "json_schema", "schema": SCHEMA_OK}}}
    assert post(anthropic.url + "/v1/messages", with_schema, HEADERS)[0] == 200


@pytest.mark.parametrize("rule", sorted(ANTHROPIC_RULES))
def test_anthropic_refuses_what_its_docs_call_invalid(anthropic, rule):
    before = len(anthropic.refusals)
    body = copy.deepcopy(ANTHROPIC_OK)
    ANTHROPIC_RULES[rule](body)
    status, error = post(anthropic.url + "/v1/messages", body, HEADERS)
    assert status == 400 and error["type"] == "error", error
    assert error["error"]["type"] == "invalid_request_error" and error["error"]["message"]
    assert [r.rule for r in anthropic.refusals[before:]] == [rule]


def test_anthropic_without_a_key_or_version_is_refused(anthropic):
    assert post(anthropic.url + "/v1/messages", ANTHROPIC_OK, {"anthropic-version": "2023-06-01"})[0] == 401
    status, error = post(anthropic.url + "/v1/messages", ANTHROPIC_OK, {"x-api-key": "k"})
    assert status == 400 and anthropic.refusals[-1].rule == "version"


# ---- OpenAI and DashScope -------------------------------------------------------------------

OPENAI_OK = {
    "model": "gpt-4o", "temperature": 0, "seed": 7,
    "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
                 {"role": "assistant", "content": None, "tool_calls": [
                     {"id": "c1", "type": "function", "function": {"name": "get", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": "c1", "content": "r"}],
    "tools": [{"type": "function", "function": {"name": "get", "parameters": {"type": "object",
                                                                              "properties": {}}}},
              {"type": "function", "function": {"name": "list_all"}}],
    "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA_OK,
                                                               "strict": True}},
}

OPENAI_RULES = {
    "messages": lambda b: b.update(messages=[]),
    "role": lambda b: b["messages"][1].update(role="human"),
    "tool_follows_call": lambda b: b["messages"][3].update(tool_call_id="c9"),
    "calls_answered": lambda b: b["messages"].pop(3) and b["messages"].append(
        {"role": "user", "content": "and?"}),
    "tool_name": lambda b: b["tools"][0]["function"].update(name="bad name"),
    "parameters": lambda b: b["tools"][0]["function"].update(parameters={"type": "string"}),
    "response_format": lambda b: b.update(response_format={"type": "xml"}),
    "schema_name": lambda b: b["response_format"]["json_schema"].pop("name"),
    "schema": lambda b: b["response_format"]["json_schema"].pop("schema"),
    "strict_schema": lambda b: b["response_format"]["json_schema"].update(
        schema={**SCHEMA_OK, "required": []}),
}
DASHSCOPE_RULES = {
    **OPENAI_RULES,
    "json_word": lambda b: b.update(response_format={"type": "json_object"}),
    "seed": lambda b: b.update(seed=2**31),
    "temperature": lambda b: b.update(temperature=2.0),
    "user_message": lambda b: b.update(messages=[{"role": "system", "content": "sys"}]),
}


COMPAT = {"openai": (OpenAIFake, OPENAI_RULES), "dashscope": (DashScopeFake, DASHSCOPE_RULES)}


@pytest.fixture(scope="module")
def compat():
    fakes = {name: fake_class(answer) for name, (fake_class, _) in COMPAT.items()}
    yield fakes
    for fake in fakes.values():
        fake.close()


@pytest.mark.parametrize("provider", sorted(COMPAT))
def test_openai_compatible_fakes_accept_a_valid_request(compat, provider):
    status, body = post(compat[provider].url + "/chat/completions", OPENAI_OK,
                        {"Authorization": "Bearer k"})
    assert status == 200 and body["choices"][0]["message"]["content"] == "ok"


@pytest.mark.parametrize("provider,rule", [(p, r) for p, (_, rules) in COMPAT.items() for r in sorted(rules)])
def test_openai_compatible_fakes_refuse_what_their_docs_call_invalid(compat, provider, rule):
    fake = compat[provider]
    before = len(fake.refusals)
    body = copy.deepcopy(OPENAI_OK)
    COMPAT[provider][1][rule](body)
    status, error = post(fake.url + "/chat/completions", body, {"Authorization": "Bearer k"})
    assert status == 400 and error["error"]["type"] == "invalid_request_error", error
    assert error["error"]["message"]
    assert [r.rule for r in fake.refusals[before:]] == [rule]
    if provider == "dashscope":
        assert error["error"]["code"] == "invalid_parameter_error" and error["request_id"]
