"""The project's ToolSandbox score equals ToolSandbox's own, for the same scripted trajectory.

ToolSandbox's side is its own command-line loop (``run_sandbox``) with its stock OpenAI agent and
OpenAI user, in its venv (``tests/toolsandbox_cli_driver.py``); their OpenAI clients talk to a
scripted OpenAI-compatible server on loopback (below), which replays the same gold or wrong
plays (``testkit.toolsandbox_gold``) that the project's side gets through its env server.
Nothing leaves the machine. The plays cover single and multiple tool calls, multiple user turns,
insufficient information, scrambled tool names and distraction tools, and include wrong plays
(a partial score, a minefield set off) so that agreement is checked away from 1.0 too.

Needs a set-up ToolSandbox (``TOOLSANDBOX_SOURCE``); skips with that instruction otherwise.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

DRIVER = Path(__file__).with_name("toolsandbox_cli_driver.py")
GOLD_PLAYS = [
    "cellular_off",                                                              # single tool call
    "send_message_with_contact_content_cellular_off_3_distraction_tools_tool_name_scrambled",
    "remove_contact_by_phone_multiple_user_turn",                                # multiple user turns
    "update_contact_relationship_with_relationship_multiple_user_turn_3_distraction_tools_tool_name_scrambled",
    "find_days_till_holiday_insufficient_information",                           # insufficient info
    "wifi_off_10_distraction_tools",
]
WRONG_PLAYS = [
    "cellular_off",                                                     # a wrong value: partial score
    "send_message_with_contact_content_cellular_off",                   # a missed state dependency
    "send_message_with_contact_content_cellular_off_insufficient_information",  # a minefield
]
COMPARED = ("similarity", "milestone_similarity", "minefield_similarity", "turn_count",
            "milestone_mapping", "minefield_mapping", "exception_type")


class ScriptedOpenAI(ThreadingHTTPServer):
    """An OpenAI-compatible chat endpoint on loopback answering from scripts (a test double).

    Path ``/<play>/<scenario>/<agent|user>/v1/chat/completions``: ``play`` picks the script,
    ``scenario`` and the role are what a ``testkit.scripted`` script receives as its context."""

    def __init__(self, scripts: dict[str, Any]):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.scripts = scripts
        self.calls: list[tuple[str, str, str]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def reply(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        play, scenario, role, *_ = path.strip("/").split("/")
        self.calls.append((play, scenario, role))
        purpose = {"agent": "executor", "user": "user"}[role]
        message = self.scripts[play]({"messages": body["messages"], "tools": body.get("tools")},
                                     {"task_id": scenario, "purpose": purpose})
        calls = message.get("tool_calls") or None
        return {
            "id": f"chatcmpl-{len(self.calls)}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "finish_reason": "tool_calls" if calls else "stop",
                         "message": {"role": "assistant", "content": message.get("content"),
                                     "tool_calls": calls}}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }


class _Handler(BaseHTTPRequestHandler):
    server: ScriptedOpenAI

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        try:
            status, payload = 200, self.server.reply(self.path, body)
        except Exception as exc:  # noqa: BLE001 - reported to the client, and by the test below
            status, payload = 500, {"error": {"message": f"{type(exc).__name__}: {exc}"}}
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def _scripts(env) -> dict[str, Any]:
    from testkit.toolsandbox_gold import ToolSandboxGold

    maps = lambda task_id: env.task_info("default", task_id)["tool_name_map"]  # noqa: E731
    return {"gold": ToolSandboxGold(maps), "wrong": ToolSandboxGold(maps, wrong=True)}


def _ours(env, script, task_id: str) -> dict[str, Any]:
    """The project's score: the same script played through the project's env server."""
    def agent(messages, tools):
        return script({"messages": messages, "tools": tools}, {"task_id": task_id, "purpose": "executor"})

    def user(system, messages, tools):
        return script({"messages": [{"role": "system", "content": system}, *messages], "tools": tools},
                      {"task_id": task_id, "purpose": "user"})

    opening = env.opening_request("default", task_id, user, 0)
    trajectory = env.play("default", task_id, opening, agent, user, 0, 10_000)
    score = env.score("default", task_id, trajectory)
    return {"similarity": score.value, **score.info}


def _theirs(ts_python: str, server: ScriptedOpenAI, plays: list[str], out: Path) -> dict[tuple[str, str], dict]:
    """ToolSandbox's own results, from its CLI loop in its venv talking to ``server``."""
    from envs.toolsandbox import server_command

    env = {**server_command(ts_python).environment(), "OPENAI_API_KEY": "scripted-loopback"}
    env.pop("OPENAI_BASE_URL", None)
    proc = subprocess.run([ts_python, str(DRIVER), server.url, str(out), *plays], capture_output=True,
                          text=True, env=env, cwd=out, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return {(r["play"], r["name"]): r for r in rows}


@pytest.fixture(scope="module")
def agreement(ts_env, ts_python, tmp_path_factory):
    scripts = _scripts(ts_env)
    server = ScriptedOpenAI(scripts)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    plays = [f"gold:{t}" for t in GOLD_PLAYS] + [f"wrong:{t}" for t in WRONG_PLAYS]
    try:
        theirs = _theirs(ts_python, server, plays, tmp_path_factory.mktemp("toolsandbox-cli"))
    finally:
        server.shutdown()
        server.server_close()
    ours = {tuple(p.split(":", 1)): _ours(ts_env, scripts[p.split(":", 1)[0]], p.split(":", 1)[1])
            for p in plays}
    return ours, theirs, server.calls


def _normal(result: dict[str, Any]) -> dict[str, Any]:
    out = {k: result.get(k) for k in COMPARED}
    for k in ("milestone_mapping", "minefield_mapping"):
        out[k] = {str(i): list(v) for i, v in (out[k] or {}).items()}
    for k in ("similarity", "milestone_similarity", "minefield_similarity"):
        out[k] = round(float(out[k]), 9)
    out["turn_count"] = int(out["turn_count"])
    return out


def test_toolsandbox_own_loop_really_played_the_scripts(agreement):
    ours, theirs, calls = agreement
    assert set(theirs) == set(ours)
    for play, scenario in ours:
        roles = {role for p, s, role in calls if (p, s) == (play, scenario)}
        assert "agent" in roles, f"{play}:{scenario}: ToolSandbox's agent never called the scripted server"
        assert "user" in roles, f"{play}:{scenario}: ToolSandbox's user never called the scripted server"
        assert theirs[(play, scenario)]["traceback"] is None, theirs[(play, scenario)]["traceback"]


def test_scores_equal_toolsandbox_own_evaluation(agreement):
    ours, theirs, _ = agreement
    for key in sorted(ours):
        assert _normal(ours[key]) == _normal(theirs[key]), key


def test_agreement_is_checked_away_from_one(agreement):
    """Known values, so that a scoring broken the same way on both sides fails too."""
    ours, theirs, _ = agreement
    for scenario in GOLD_PLAYS:
        assert theirs[("gold", scenario)]["similarity"] == 1.0, scenario
    assert 0.0 < theirs[("wrong", "cellular_off")]["similarity"] < 1.0
    assert 0.0 < theirs[("wrong", "send_message_with_contact_content_cellular_off")]["similarity"] < 1.0
    mine = theirs[("wrong", "send_message_with_contact_content_cellular_off_insufficient_information")]
    assert mine["similarity"] == 0.0 and mine["minefield_similarity"] > 0.0
    categories = {c for (_, s), r in theirs.items() for c in r["categories"]}
    assert {"SINGLE_TOOL_CALL", "MULTIPLE_TOOL_CALL", "MULTIPLE_USER_TURN", "INSUFFICIENT_INFORMATION",
            "TOOL_NAME_SCRAMBLED", "THREE_DISTRACTION_TOOLS", "TEN_DISTRACTION_TOOLS"} <= {
                str(c).rsplit(".", 1)[-1] for c in categories}
