"""Sampling parameters outside a provider's documented range are refused before the first
request, in one line naming the role, the model, the value and the range (exit 2), instead of
every episode becoming an infrastructure error."""

from __future__ import annotations

import pytest

from runtime import validate


def _validate(tmp_path, *extra: str) -> int:
    return validate.main(["--env", "tau2", "--domain", "mock", "--mode", "direct", "--tasks", "1",
                          "--out", str(tmp_path / "run"), "--no-cache", *extra])


@pytest.mark.parametrize("model,temperature,word", [
    ("anthropic/claude-sonnet-4-5-20250929", "1.5", "Anthropic's range 0 to 1"),
    ("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0", "1.2", "Anthropic's range 0 to 1"),
    ("mistral/mistral-large-latest", "1.8", "Mistral's range 0 to 1.5"),
])
def test_a_temperature_outside_the_providers_range_is_refused_at_once(tmp_path, monkeypatch, capsys,
                                                                        model, temperature, word):
    for key in ("ANTHROPIC_API_KEY", "MISTRAL_API_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "unused-0000000000")
    assert _validate(tmp_path, "--model", model, "--temperature", temperature) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--model {model}: temperature {temperature}" in err[0], err
    assert word in err[0]
    assert not (tmp_path / "run").exists()


def test_an_answer_budget_above_the_models_output_limit_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    assert _validate(tmp_path, "--model", "openai/gpt-4o", "--max-tokens", "1000000") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "max tokens 1000000 is above the model's output limit 16384" in err[0], err


def test_values_within_the_ranges_pass():
    from runtime.llm.param_ranges import range_problems

    assert range_problems("anthropic/claude-sonnet-4-5-20250929", temperature=1.0, max_tokens=4096) == []
    assert range_problems("openai/gpt-4o", temperature=2.0, max_tokens=16384) == []
    assert range_problems("gemini/gemini-2.5-pro", temperature=1.5) == []
    assert range_problems("openai/some-local-model", temperature=1.7, max_tokens=10**7) == []
