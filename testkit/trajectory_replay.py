"""Replaying τ²-bench trajectories (``tau2 run``'s results file) through the runtime, turn by turn.

A scripted model that answers the runtime's executor with the recorded agent messages and its
user model with the recorded user messages, in order, and checks that every request it gets
holds exactly the history τ²'s own agent and user simulator would have sent at that point (built
with τ²'s own ``is_valid_*_history_message``, ``flip_roles`` and ``to_litellm_messages``; keys
whose value is None are dropped on both sides, as litellm drops them on the wire). Differences
are collected in :attr:`TrajectoryReplay.mismatches`, never raised: the replay goes on with the
recorded answer, so one difference does not hide the next.

What it proves: the runtime's Direct plays a recorded conversation as τ² does (same requests,
same tool results, same reward). Not anything about a model. Works on any results file in τ²'s
shape, so published real-model runs can be checked the same way.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from testkit.scripted import register_script


def simulations(results: dict[str, Any]) -> list[Any]:
    """The ``SimulationRun`` objects of a τ² results dict (``{"simulations": [...]}``)."""
    from tau2.data_model.simulation import SimulationRun

    return [SimulationRun.model_validate(s) for s in results["simulations"]]


def reply_of(message: Any) -> dict[str, Any]:
    """A recorded τ² message as the chat reply a model would have given."""
    calls = [{"id": tc.id, "type": "function",
              "function": {"name": tc.name, "arguments": json.dumps(tc.arguments)}}
             for tc in (message.tool_calls or [])]
    return {"content": message.content, "tool_calls": calls}


def _clean(value: Any) -> Any:
    """Drop None-valued keys (litellm does not send them) and normalise through JSON."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


class TrajectoryReplay:
    """``runs``: (task id, trial) → recorded ``SimulationRun``; the runtime's trial ``k`` plays
    the recording filed under ``k``."""

    def __init__(self, domain: str, runs: dict[tuple[str, int], Any]):
        from tau2.registry import registry

        self.domain = domain
        self.runs = runs
        self.tasks = {t.id: t for t in registry.get_tasks_loader(domain)()}
        self.mismatches: list[dict[str, Any]] = []
        self.checked = 0
        self._lock = threading.Lock()
        self._prompts: dict[str, str] = {}

    def model_name(self, name: str = "trajectory-replay") -> str:
        return register_script(name, self)

    def __call__(self, request: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
        key = (context["task_id"], int(context.get("trial") or 0))
        purpose = context.get("purpose")
        if purpose not in ("executor", "user"):
            raise ValueError(f"the trajectory replay plays executor and user, not {purpose!r}")
        sim = self.runs[key]
        sent = [m for m in request["messages"] if m.get("role") != "system"]
        own = "assistant"  # the role the answering side's own turns have in its request
        replies = [i for i, m in enumerate(sim.messages)
                   if m.role == ("assistant" if purpose == "executor" else "user")]
        if purpose == "executor":
            replies = replies[1:]  # the first assistant message is τ²'s fixed greeting
        done = sum(1 for m in sent if m.get("role") == own)
        if purpose == "executor":
            done -= 1  # the greeting is in the agent's own history too
        if done >= len(replies):
            self._note(key, purpose, done, "the runtime asked for a turn the recording does not have")
            return {"content": "###STOP###", "tool_calls": []}
        position = replies[done]
        expected = self.expected(purpose, sim, position)
        got = _clean(json.loads(json.dumps(request["messages"])))
        with self._lock:
            self.checked += 1
        if got != expected:
            self._note(key, purpose, done, _first_difference(expected, got))
        return reply_of(sim.messages[position])

    def expected(self, purpose: str, sim: Any, position: int) -> list[dict[str, Any]]:
        """What τ²'s own agent (or user simulator) sends before the recorded message at
        ``position``: its system prompt, then its view of the history, τ²-converted."""
        from tau2.agent.base import is_valid_agent_history_message
        from tau2.user.base import UserState, is_valid_user_history_message
        from tau2.utils.llm_utils import to_litellm_messages

        before = sim.messages[:position]
        if purpose == "executor":
            view = [m for m in before if is_valid_agent_history_message(m)]
        else:
            mine = [m for m in before if is_valid_user_history_message(m)]
            view = UserState(messages=mine, system_messages=[]).flip_roles()
        system = {"role": "system", "content": self._system_prompt(purpose, sim.task_id)}
        return _clean([system, *to_litellm_messages(view)])

    def _system_prompt(self, purpose: str, task_id: str) -> str:
        name = f"{purpose}:{task_id if purpose == 'user' else ''}"
        with self._lock:
            if name in self._prompts:
                return self._prompts[name]
        from tau2.agent.llm_agent import LLMAgent
        from tau2.registry import registry
        from tau2.user.user_simulator import UserSimulator

        env = registry.get_env_constructor(self.domain)()
        if purpose == "executor":
            prompt = LLMAgent(tools=env.get_tools(), domain_policy=env.get_policy(), llm="x").system_prompt
        else:
            try:
                tools = env.get_user_tools()
            except Exception:  # noqa: BLE001 - τ² raises when a domain has no user tools
                tools = None
            prompt = UserSimulator(tools=tools or None, instructions=str(self.tasks[task_id].user_scenario),
                                   llm="x").system_prompt
        with self._lock:
            self._prompts[name] = prompt
        return prompt

    def _note(self, key: tuple[str, int], purpose: str, turn: int, what: str) -> None:
        with self._lock:
            self.mismatches.append({"task_id": key[0], "trial": key[1], "purpose": purpose,
                                    "turn": turn, "difference": what})


def _first_difference(expected: list[dict], got: list[dict]) -> str:
    for i, (e, g) in enumerate(zip(expected, got)):
        if e != g:
            return f"message {i}: expected {json.dumps(e)[:300]} got {json.dumps(g)[:300]}"
    return f"{len(expected)} messages expected, {len(got)} sent"
