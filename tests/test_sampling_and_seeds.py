"""What each request carries beside its messages: τ²'s trial seeds, ToolSandbox's bare roles,
the executor's system prompt. Fast checks of the pieces the end-to-end fidelity tests rely on."""

from __future__ import annotations

import pytest

from envs.base import TaskView
from evrcore.plan import Plan
from runtime.episode.executor import Executor
from runtime.episode.spec import trial_seed
from runtime.llm.layer import Meter, ModelLayer, ModelSpec
from testkit.scripted import register_script, text


def test_tau2_seeding_gives_the_seeds_tau2_run_sends():
    # tau2 run: random.seed(300); [random.randint(0, 1000000) for _ in range(num_trials)]
    assert [trial_seed(300, k, "tau2") for k in range(3)] == [626729, 373753, 361454]
    assert trial_seed(300, 0) != 626729  # the runtime's own derivation is another one


def test_a_bad_seeding_is_one_line_and_exit_2(capsys):
    from runtime import validate

    with pytest.raises(SystemExit) as exit_:
        validate.parser().parse_args(["--seeding", "numpy"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert "--seeding" in err and "'runtime'" in err and "'tau2'" in err and "numpy" in err
    assert len(err.strip().splitlines()) == 1


def _sent(spec: ModelSpec, purpose: str) -> dict:
    model = register_script("sampling-echo", lambda request, context: text("ok"))
    spec = ModelSpec(**{**spec.__dict__, "model": model})
    layer = ModelLayer({"model": spec})
    seen = []
    layer.observers.append(lambda p, request: seen.append(request))
    client = layer.client("model", purpose, Meter(), seed=7)
    client.complete([{"role": "user", "content": "hi"}],
                    tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}])
    return {k: v for k, v in seen[0].items() if v is not None}


def test_bare_purposes_send_only_what_the_user_set():
    tau2_like = _sent(ModelSpec(model="x"), "executor")
    assert tau2_like["temperature"] == 0.0 and tau2_like["seed"] == 7 and tau2_like["tool_choice"] == "auto"
    bare = ModelSpec(model="x", bare_purposes=("executor", "user"))
    assert not {"temperature", "seed", "tool_choice"} & set(_sent(bare, "executor"))
    assert not {"temperature", "seed", "tool_choice"} & set(_sent(bare, "user"))
    planner = _sent(bare, "planner")  # the runtime's own roles keep their settings
    assert planner["temperature"] == 0.0 and planner["seed"] == 7
    chosen = _sent(ModelSpec(model="x", temperature=0.7, bare_purposes=("executor",),
                             user_set=("temperature",)), "executor")
    assert chosen["temperature"] == 0.7 and "seed" not in chosen and "tool_choice" not in chosen


def test_toolsandbox_runs_are_bare_and_tau2_runs_are_not():
    from runtime.compose.build import model_specs
    from runtime.compose.config import RunConfig

    ts, _ = model_specs(RunConfig(env="toolsandbox", model="openai/x"))
    assert ts["model"].bare_purposes == ("executor", "user") and ts["model"].user_set == ()
    ts, _ = model_specs(RunConfig(env="toolsandbox", model="openai/x", temperature=0.5, seed=3))
    assert set(ts["model"].user_set) == {"temperature", "seed"}
    tau2, _ = model_specs(RunConfig(env="tau2", model="openai/x"))
    assert tau2["model"].bare_purposes == ()


def _view(**extra) -> TaskView:
    return TaskView(env="e", domain="d", task_id="t", policy="Be kind.", tools=[], **extra)


def test_the_benchmark_own_system_prompt_is_sent_as_it_is():
    own = "Don't make assumptions about what values to plug into functions."
    assert Executor(_view(system_prompt=own), None, None).system_prompt == own
    plan = Plan(plan="Look the contact up, then send the message.", tool_chain=[])
    with_plan = Executor(_view(system_prompt=own), plan, None).system_prompt
    assert with_plan.startswith(own + "\n<plan>\n") and with_plan.endswith("</plan>")
    tau2 = Executor(_view(instructions="Follow the policy."), None, None).system_prompt
    assert tau2 == "<instructions>\nFollow the policy.\n</instructions>\n<policy>\nBe kind.\n</policy>"


def test_toolsandbox_history_gets_the_words_back_beside_their_calls():
    from envs.toolsandbox.server import with_words

    chat = [{"role": "user", "content": "Text Fredrik"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call_a", "type": "function",
             "function": {"name": "search_contacts", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_a", "content": "[]"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "call_b", "type": "function",
             "function": {"name": "send_message", "arguments": "{}"}}]}]
    out = with_words(chat, {"call_a": "Let me find Fredrik first."})
    assert out[1]["content"] == "Let me find Fredrik first." and out[1]["tool_calls"] == chat[1]["tool_calls"]
    assert out[3]["content"] == "" and out[0] == chat[0] and chat[1]["content"] == ""
