"""A scripted executor + user pair that replays a τ²-bench task's reference solution.

What it proves: the plumbing — the runtime's executor path, τ²'s orchestrator and τ²'s evaluator
agree, so replaying the reference actions (and saying the ``communicate_info``) scores 1.0, and
leaving out the last write scores 0.0. What it does not prove: anything about a model.

The script keeps a cursor per episode (task, trial, mode) over the reference actions, shared by
its two roles: the agent plays ``assistant`` actions as tool calls, and when the next action is
the user's (telecom: toggling airplane mode, ...) it asks the user, who plays it on their device.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from dataclasses import dataclass, field
from typing import Any

from envs.tau2 import tasks as tau2_tasks
from testkit.scripted import register_script, text, tool_call

STOP = "###STOP###"
HANDOFF = "Please do the next step on your device and tell me when it is done."


@dataclass
class _Cursor:
    actions: list[Any]
    position: int = 0
    final_sent: bool = False


@dataclass
class GoldReplay:
    """``drop_last_write``: leave out the last action that changes state (a sabotaged replay).
    ``talk``: the agent speaks beside every tool call, as real models do ("Let me look that up"
    + a call), and says the task's ``communicate_info`` beside its last call rather than in its
    closing message — so the score depends on the text of tool-calling turns being kept."""

    drop_last_write: bool = False
    talk: bool = False
    _cursors: dict[tuple, _Cursor] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def model_name(self, name: str = "gold") -> str:
        return register_script(name, self)

    def task_of(self, domain: str, task_id: str) -> Any:
        """The task whose reference solution is played (τ²'s, in this process)."""
        return tau2_tasks.task(domain, task_id)

    def sabotage_index(self, domain: str, task: Any) -> int | None:
        """Which reference action the sabotaged replay leaves out."""
        return last_state_changing_write(domain, task)

    def __call__(self, request: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
        task = self.task_of(context["domain"], context["task_id"])
        purpose = context.get("purpose")
        if purpose == "user" and _is_opening(request):
            return text(opening_words(task))
        # one cursor per episode: an ablation runs refine once per strategy, at the same time
        episode = (context["domain"], context["task_id"], context.get("trial"), context.get("mode"),
                   context.get("strategy"))
        with self._lock:
            if purpose == "executor" and _is_first_agent_turn(request):
                self._cursors[episode] = _Cursor(actions=self._actions(context["domain"], task))
            cursor = self._cursors.setdefault(episode, _Cursor(actions=self._actions(context["domain"], task)))
            if purpose == "executor":
                return self._agent(cursor, task, self.talk)
            if purpose == "user":
                return self._user(cursor)
        raise ValueError(f"the gold replay only plays executor and user, not {purpose!r}")

    def _actions(self, domain: str, task: Any) -> list[Any]:
        actions = list(task.evaluation_criteria.actions or []) if task.evaluation_criteria else []
        if self.drop_last_write:
            index = self.sabotage_index(domain, task)
            if index is not None:
                del actions[index]
        return actions

    @staticmethod
    def _agent(cursor: _Cursor, task: Any, talk: bool = False) -> dict[str, Any]:
        info = task.evaluation_criteria.communicate_info if task.evaluation_criteria else None
        if cursor.position < len(cursor.actions):
            action = cursor.actions[cursor.position]
            if action.requestor == "assistant":
                cursor.position += 1
                reply = tool_call(action.name, action.arguments)
                if talk:
                    last = not any(a.requestor == "assistant" for a in cursor.actions[cursor.position:])
                    words = f"Let me run {action.name} for you."
                    reply["content"] = f"{' '.join(info)}. {words}" if last and info else words
                return reply
            return text(HANDOFF)
        cursor.final_sent = True
        if talk:
            return text("Your request has been handled.")
        return text(" ".join(info) if info else "Your request has been handled.")

    @staticmethod
    def _user(cursor: _Cursor) -> dict[str, Any]:
        if cursor.position < len(cursor.actions) and cursor.actions[cursor.position].requestor == "user":
            action = cursor.actions[cursor.position]
            cursor.position += 1
            return tool_call(action.name, action.arguments)
        if cursor.final_sent:
            return text(STOP)
        return text("Done. What next?")


def is_write(domain: str, action: Any) -> bool:
    """Whether a reference action changes state, by τ²'s own tool-type annotations.

    Hand-offs (``transfer_to_human_agents``) are typed as writes but change no state, so
    dropping one proves nothing; they do not count.
    """
    if action.name.startswith("transfer_to_human"):
        return False
    return _tool_type(domain, action.requestor, action.name) == "write"


def last_state_changing_write(domain: str, task: Any) -> int | None:
    """Index of the last reference write whose omission changes τ²'s gold end state.

    Some reference writes fail by design (the policy forbids them) and leave the state as it
    was; leaving those out proves nothing, so the sabotage drops the last one that matters.
    """
    actions = list(task.evaluation_criteria.actions or []) if task.evaluation_criteria else []
    full = _end_state(domain, task, actions)
    for i in reversed(range(len(actions))):
        if is_write(domain, actions[i]) and _end_state(domain, task, actions[:i] + actions[i + 1:]) != full:
            return i
    return None


def _end_state(domain: str, task: Any, actions: list[Any]) -> tuple[str, str]:
    """τ²'s DB hashes after replaying ``actions`` the way its evaluator replays the gold ones."""
    from tau2.registry import registry

    env = registry.get_env_constructor(domain)()
    state = task.initial_state
    env.set_state(
        initialization_data=state.initialization_data if state else None,
        initialization_actions=state.initialization_actions if state else None,
        message_history=[],
    )
    for action in actions:
        try:
            env.make_tool_call(tool_name=action.name, requestor=action.requestor, **action.arguments)
        except Exception:  # noqa: BLE001 - failing reference calls are part of some tasks
            pass
    return env.get_db_hash(), env.get_user_db_hash()


@lru_cache(maxsize=None)
def _tool_type(domain: str, requestor: str, name: str) -> str | None:
    toolkit = _env(domain).tools if requestor == "assistant" else _env(domain).user_tools
    if toolkit is None or not toolkit.has_tool(name):
        return None
    return str(toolkit.tool_type(name).value).lower()


@lru_cache(maxsize=None)
def _env(domain: str) -> Any:
    from tau2.registry import registry

    return registry.get_env_constructor(domain)()


def _is_opening(request: dict[str, Any]) -> bool:
    """The user's first turn: its side of the conversation holds only τ²'s greeting."""
    convo = [m for m in request["messages"] if m.get("role") != "system"]
    return len(convo) == 1


def _is_first_agent_turn(request: dict[str, Any]) -> bool:
    convo = [m for m in request["messages"] if m.get("role") != "system"]
    return sum(1 for m in convo if m.get("role") == "user") == 1 and not any(
        m.get("role") == "tool" for m in convo
    )


def opening_words(task: Any) -> str:
    instructions = task.user_scenario.instructions
    reason = getattr(instructions, "reason_for_call", None) or str(instructions)
    return f"Hi, I need help. {reason}".strip()
