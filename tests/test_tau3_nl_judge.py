"""Which model answers τ³'s NL-assertion judge (``runtime.compose.build.add_nl_judge``): τ³'s
own by default, when it can be reached; a named one on the judge's endpoint; none on purpose;
and one clear line whenever NL assertions stay ungraded. (That the judge's requests and verdicts
equal ``tau2 run``'s is tests/test_tau3_fidelity.py's retail agreement.)"""

from __future__ import annotations

import pytest

from runtime.compose.build import add_nl_judge, model_specs
from runtime.compose.config import RunConfig, UsageError


def _judge(monkeypatch, key: str | None, **settings):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    if key:
        monkeypatch.setenv("OPENAI_API_KEY", key)
    config = RunConfig(**{"env": "tau3", "model": "openai/m", "api_base": "http://127.0.0.1:9/v1", **settings})
    specs, _ = model_specs(config)
    said: list[str] = []
    add_nl_judge(config, specs, said.append)
    return specs.get("nl_judge_model"), said


def test_tau3s_own_judge_model_at_its_provider_by_default(monkeypatch):
    spec, said = _judge(monkeypatch, "sk-test-0000")
    assert (spec.model, spec.api_base, spec.temperature, said) == ("gpt-4.1-2025-04-14", None, 0.0, [])
    assert spec.public()["model"] == "gpt-4.1-2025-04-14"  # recorded with the run's models


def test_without_its_key_nl_assertions_stay_ungraded_and_one_line_says_so(monkeypatch):
    spec, said = _judge(monkeypatch, None)
    assert spec is None and len(said) == 1 and "NL assertions ungraded" in said[0], said
    assert "OPENAI_API_KEY" in said[0] and "--nl-judge-model" in said[0]


def test_a_named_judge_model_goes_to_the_judges_endpoint(monkeypatch):
    spec, said = _judge(monkeypatch, None, nl_judge_model="openai/grader",
                        critic_api_base="http://127.0.0.1:8/v1")
    assert (spec.model, spec.api_base, said) == ("openai/grader", "http://127.0.0.1:8/v1", [])


def test_none_leaves_them_ungraded_on_purpose(monkeypatch):
    spec, said = _judge(monkeypatch, "sk-test-0000", nl_judge_model="none")
    assert spec is None and said and "--nl-judge-model none" in said[0]


def test_an_environment_without_a_judge_of_its_own_refuses_one(monkeypatch):
    config = RunConfig(env="tau2", model="openai/m", nl_judge_model="openai/grader")
    specs, _ = model_specs(config)
    with pytest.raises(UsageError, match="--nl-judge-model openai/grader: --env tau2"):
        add_nl_judge(config, specs, print)
    add_nl_judge(RunConfig(env="tau2", model="openai/m"), specs, print)
    assert "nl_judge_model" not in specs
