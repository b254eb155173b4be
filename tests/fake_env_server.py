"""A tiny environment served over the env-server protocol, for lifecycle tests without a benchmark.

Run as a script (``python tests/fake_env_server.py``). Its tasks misbehave on purpose:

* ``ok``     — asks the agent once (and the user once if the agent called a tool), scores 1.0
               when the agent's final text is ``done``;
* ``crash``  — answers the first agent callback, then the process dies (exit code 3);
* ``hang``   — stops answering (sleeps) after the first agent callback;
* ``noisy``  — prints to stdout mid-play (must not corrupt the protocol).

``FAKE_ENV_FAIL_START=1`` makes building the environment fail (a ``startup_failed`` answer).
``--slow-exit SECONDS`` (or ``FAKE_ENV_SLOW_EXIT``) gives the process a teardown that takes that
long, as a real benchmark's has (τ²: seconds to tear down its import graph).
"""

from __future__ import annotations

import os
import sys
import time

from envs.base import (
    EnvError,
    Score,
    Supervision,
    TaskSelection,
    TaskView,
    Trajectory,
    UnknownTaskError,
)
from envs.protocol import main

TASKS = ("ok", "crash", "hang", "noisy")
TOOLS = [{"type": "function", "function": {"name": "ping", "description": "Ping.",
                                           "parameters": {"type": "object", "properties": {}}}}]


class FakeEnvironment:
    name = "fake"

    def __init__(self) -> None:
        if os.environ.get("FAKE_ENV_FAIL_START"):
            raise ImportError("No module named 'fake_benchmark'")

    def domains(self) -> list[str]:
        return ["default"]

    def select(self, selection: TaskSelection) -> list[str]:
        if selection.domain != "default":
            raise UnknownTaskError(f"unknown fake domain {selection.domain!r}; accepted: default")
        for task_id in selection.ids or []:
            self._check(task_id)
        return list(selection.ids or TASKS)

    def _check(self, task_id: str) -> None:
        if task_id not in TASKS:
            raise UnknownTaskError(f"unknown fake task {task_id!r}; accepted: {', '.join(TASKS)}")

    def load(self, domain: str, task_id: str) -> tuple[TaskView, Supervision]:
        self._check(task_id)
        view = TaskView(env="fake", domain=domain, task_id=task_id, policy="Be brief.", tools=TOOLS,
                        categories=["FAKE"])
        return view, Supervision(task_id=task_id, expected_outcomes=["The agent says done."])

    def task_info(self, domain: str, task_id: str) -> dict:
        return {"categories": ["FAKE"], "pid": os.getpid()}

    def opening_request(self, domain, task_id, user, seed) -> str:
        reply = user("You are a user.", [{"role": "user", "content": "Hi! How can I help?"}], None)
        return reply.get("content") or "help"

    def play(self, domain, task_id, opening_request, agent, user, seed, max_steps) -> Trajectory:
        self._check(task_id)
        messages = [{"role": "user", "content": opening_request}]
        reply = agent(messages, TOOLS)
        messages.append(reply)
        if task_id == "crash":
            sys.stderr.write("fake server: simulated crash\n")
            sys.stderr.flush()
            os._exit(3)
        if task_id == "hang":
            time.sleep(3600)
        if task_id == "noisy":
            print("stray output from the benchmark")
        if reply.get("tool_calls"):
            messages.append({"role": "tool", "tool_call_id": reply["tool_calls"][0]["id"], "content": "pong"})
            said = user("You are a user.", [{"role": "user", "content": "pinged"}], None)
            messages.append({"role": "user", "content": said.get("content")})
            reply = agent(messages, TOOLS)
            messages.append(reply)
        return Trajectory(messages=messages, termination="done", turns=len(messages),
                          native={"final": reply.get("content")})

    def score(self, domain, task_id, trajectory) -> Score:
        if "final" not in trajectory.native:
            raise EnvError("trajectory has no final message")
        value = 1.0 if trajectory.native["final"] == "done" else 0.0
        return Score(value=value, name="fake", info={"categories": ["FAKE"]})


def _slow_exit() -> float:
    if "--slow-exit" in sys.argv:
        return float(sys.argv[sys.argv.index("--slow-exit") + 1])
    return float(os.environ.get("FAKE_ENV_SLOW_EXIT") or 0)


if __name__ == "__main__":
    if _slow_exit():
        import atexit

        atexit.register(time.sleep, _slow_exit())
    main(FakeEnvironment)
