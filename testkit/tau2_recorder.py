"""Conversations recorded with τ²'s own runner (``tau2.run.run_task``: its ``LLMAgent``, user
simulator, orchestrator and evaluator), written by scripted models that behave the ways real
models do, so a replay can check the runtime against τ² on something other than a clean gold path.

Each conversation follows a :class:`Variant` drawn from a seed: the agent speaks beside its tool
calls or not, sends several calls at once, gets an argument wrong, asks the user to confirm (and
the user may quit there), stops early, or hands off with ``transfer_to_human_agents``. The
scripted agent reads its place from the history it is sent (one recorded step per assistant
message), so it needs no memory. Test doubles: they prove plumbing, never a model.
"""

from __future__ import annotations

import json
import random
import threading
from dataclasses import dataclass
from typing import Any

from testkit.scripted import register_script

DONE = "That completes your request."
TRANSFER_TEXT = "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON."
QUESTION = "Before I go on: shall I proceed with the next step?"


@dataclass(frozen=True)
class Variant:
    talk: bool = False
    parallel: int = 1
    wrong: int | None = None
    """Index of the reference action whose first argument is given wrong."""
    ask_after: int | None = None
    """Ask the user to confirm after this many call groups."""
    user_quits: bool = False
    stop_after: int | None = None
    """Stop after this many reference actions (an early stop)."""
    transfer: bool = False

    @staticmethod
    def draw(rng: random.Random) -> "Variant":
        return Variant(
            talk=rng.random() < 0.6,
            parallel=rng.choice([1, 1, 2, 3]),
            wrong=rng.choice([None, None, 0, 1, 2]),
            ask_after=rng.choice([None, 1, 2]),
            user_quits=rng.random() < 0.15,
            stop_after=rng.choice([None, None, None, 1, 2]),
            transfer=rng.random() < 0.15,
        )


def _wrong(arguments: dict[str, Any]) -> dict[str, Any]:
    args = dict(arguments)
    for k, v in args.items():
        if isinstance(v, str):
            args[k] = v + "_WRONG"
            return args
    return {**args, "unexpected": 1}


def steps(task: Any, variant: Variant) -> list[dict[str, Any]]:
    """The agent's turns in order: call groups, an optional question, then a closing message."""
    actions = [a for a in (task.evaluation_criteria.actions or []) if a.requestor == "assistant"]
    if variant.stop_after is not None:
        actions = actions[: variant.stop_after]
    calls = [(a.name, _wrong(a.arguments) if i == variant.wrong else dict(a.arguments))
             for i, a in enumerate(actions)]
    if variant.transfer:
        calls.append(("transfer_to_human_agents", {"summary": "The user needs a human agent."}))
    groups = [calls[i:i + variant.parallel] for i in range(0, len(calls), variant.parallel)]
    out: list[dict[str, Any]] = []
    for g, group in enumerate(groups):
        if variant.ask_after is not None and g == variant.ask_after:
            out.append({"content": QUESTION, "tool_calls": []})
        words = f"Let me run {', '.join(n for n, _ in group)}." if variant.talk else None
        out.append({"content": words, "tool_calls": [
            {"id": f"call_{g}_{j}_{random.getrandbits(32):08x}", "type": "function",
             "function": {"name": n, "arguments": json.dumps(a)}} for j, (n, a) in enumerate(group)]})
    if variant.transfer:
        out.append({"content": TRANSFER_TEXT, "tool_calls": []})
    else:
        info = " ".join(task.evaluation_criteria.communicate_info or [])
        out.append({"content": f"{info} {DONE}".strip(), "tool_calls": []})
    return out


class Recorder:
    """Scripted agent and user for τ²'s own ``run_task``, one conversation at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._task: Any = None
        self._variant = Variant()
        self._steps: list[dict[str, Any]] = []
        self.agent_model = register_script("recorder-agent", self._agent)
        self.user_model = register_script("recorder-user", self._user)

    def record(self, domain: str, task: Any, variant: Variant, seed: int = 300) -> Any:
        """One conversation of ``task`` by τ²'s runner: its ``SimulationRun`` with reward."""
        from tau2.run import run_task

        with self._lock:
            self._task, self._variant, self._steps = task, variant, steps(task, variant)
        return run_task(domain=domain, task=task, agent="llm_agent", user="user_simulator",
                        llm_agent=self.agent_model, llm_args_agent={"temperature": 0.0},
                        llm_user=self.user_model, llm_args_user={"temperature": 0.0},
                        max_steps=200, seed=seed)

    def _agent(self, request: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
        done = sum(1 for m in request["messages"] if m.get("role") == "assistant") - 1  # greeting
        return self._steps[min(done, len(self._steps) - 1)]

    def _user(self, request: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
        convo = [m for m in request["messages"] if m.get("role") != "system"]
        if not any(m.get("role") == "assistant" for m in convo):
            reason = getattr(self._task.user_scenario.instructions, "reason_for_call", None)
            return {"content": f"Hi, I need help. {reason or self._task.user_scenario}".strip(), "tool_calls": []}
        last = next(m.get("content") or "" for m in reversed(convo) if m.get("role") == "user")
        if TRANSFER_TEXT in last:
            return {"content": "###TRANSFER###", "tool_calls": []}
        if DONE in last or (QUESTION in last and self._variant.user_quits):
            return {"content": "###STOP###", "tool_calls": []}
        return {"content": "Yes, please go ahead.", "tool_calls": []}


def record_many(domain: str, task_ids: list[str], seed: int) -> dict[str, Any]:
    """Conversations of ``task_ids`` in τ²'s results shape (``{"simulations": [...]}``), one
    :class:`Variant` per task drawn from ``seed``."""
    from tau2.registry import registry

    tasks = {t.id: t for t in registry.get_tasks_loader(domain)()}
    recorder = Recorder()
    rng = random.Random(seed)
    sims = []
    for task_id in task_ids:
        sim = recorder.record(domain, tasks[task_id], Variant.draw(rng))
        sim.trial = 0
        sims.append(sim.model_dump(mode="json"))
    return {"simulations": sims}
