"""Direct on ToolSandbox sends what ToolSandbox's own OpenAI agent and user roles send.

ToolSandbox's side is its own CLI loop with its stock OpenAI agent and user
(``tests/toolsandbox_cli_driver.py``); the runtime's side is ``runtime.validate --env toolsandbox
--mode direct``. Both talk to the same scripted OpenAI-compatible server on loopback, which keeps
every request body. For each scenario the agent's and the user's requests must be equal, model
name aside (the user picks it), tool-call ids and the ids ToolSandbox's tools draw at random
(uuid4) masked: ToolSandbox's own system prompt (not
τ²'s agent template), tool schemas with scrambled names and distraction tools, and no
temperature, seed or tool_choice (ToolSandbox's roles send none; the runtime sends them only
when the user sets them).

The one documented difference: a model that talks while calling tools. ToolSandbox's agent drops
those words (its messages have no place for them); the runtime keeps them in every later
request, as τ²'s agent does. The test checks that this is the only difference and that the
score is ToolSandbox's either way.

Needs a set-up ToolSandbox (``TOOLSANDBOX_SOURCE``); skips with that instruction otherwise.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import pytest

from tests.test_toolsandbox_agreement import ScriptedOpenAI, _theirs

SCENARIOS = [
    "send_message_with_contact_content_cellular_off_3_distraction_tools_tool_name_scrambled",
    "remove_contact_by_phone_multiple_user_turn",
]
_IDS = re.compile(r"call_[0-9a-f]{12}")
_UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
"""Ids ToolSandbox's tools draw at random (a sent message's id); its fixed ids are uuid5."""


class Talking:
    """The gold play, with words beside every tool call (a test double of a talkative model)."""

    def __init__(self, gold):
        self.gold = gold

    def __call__(self, request: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
        reply = self.gold(request, context)
        if context.get("purpose") == "executor" and reply.get("tool_calls"):
            reply = {**reply, "content": f"Let me run {reply['tool_calls'][0]['function']['name']}."}
        return reply


class RecordingOpenAI(ScriptedOpenAI):
    """The agreement test's scripted server, keeping each request body by play, scenario, role."""

    def __init__(self, scripts: dict[str, Any]):
        super().__init__(scripts)
        self.bodies: list[tuple[str, str, str, dict]] = []

    def reply(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        play, scenario, role, *_ = path.strip("/").split("/")
        self.bodies.append((play, scenario, role, body))  # list.append is atomic
        return super().reply(path, body)

    def take(self, play: str, scenario: str, role: str) -> list[dict]:
        def masked(body: dict) -> dict:
            text = json.dumps({k: v for k, v in body.items() if k != "model"})
            return json.loads(_UUID4.sub("uuid4", _IDS.sub("call_X", text)))

        return [masked(b)
                for p, s, r, b in self.bodies if (p, s, r) == (play, scenario, role)]


def _ours(server: RecordingOpenAI, play: str, scenario: str, out) -> dict:
    from runtime import validate

    base = f"{server.url}/{play}/{scenario}"
    code = validate.main(["--env", "toolsandbox", "--mode", "direct", "--task-ids", scenario,
                          "--model", "openai/scripted", "--api-base", f"{base}/agent/v1",
                          "--user-model", "openai/scripted", "--user-api-base", f"{base}/user/v1",
                          "--no-cache", "--no-judge", "--out", str(out)])
    assert code == 0
    [record] = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]
    assert record["status"] == "ok", record["error"]
    return record


@pytest.fixture(scope="module")
def exchanges(ts_env, ts_python, tmp_path_factory):
    """Both sides' requests for each play; the runtime's are filed under ``rt-<play>``."""
    from testkit.toolsandbox_gold import ToolSandboxGold

    maps = lambda task_id: ts_env.task_info("default", task_id)["tool_name_map"]  # noqa: E731
    gold, talk = ToolSandboxGold(maps), Talking(ToolSandboxGold(maps))
    server = RecordingOpenAI({"gold": gold, "talk": talk, "rt-gold": gold, "rt-talk": talk})
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    plays = [(p, s) for p in ("gold", "talk") for s in SCENARIOS]
    mp = pytest.MonkeyPatch()
    try:
        theirs = _theirs(ts_python, server, [f"{p}:{s}" for p, s in plays],
                         tmp_path_factory.mktemp("toolsandbox-cli"))
        mp.setenv("TOOLSANDBOX_PYTHON", ts_python)
        mp.setenv("OPENAI_API_KEY", "scripted-loopback")
        ours = {(p, s): _ours(server, f"rt-{p}", s, tmp_path_factory.mktemp("rt")) for p, s in plays}
    finally:
        mp.undo()
        server.shutdown()
        server.server_close()
    return server, ours, theirs


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_direct_requests_equal_toolsandbox_own_roles(exchanges, scenario):
    server, ours, theirs = exchanges
    for role in ("agent", "user"):
        stock, mine = server.take("gold", scenario, role), server.take("rt-gold", scenario, role)
        assert stock, f"ToolSandbox's {role} made no request"
        assert mine == stock, f"{role}: {_first_difference(stock, mine)}"
    for body in server.take("rt-gold", scenario, "agent"):
        assert not {"temperature", "seed", "tool_choice"} & set(body)
        assert body["messages"][0]["role"] == "system" and "<policy>" not in body["messages"][0]["content"]
    assert ours[("gold", scenario)]["score"] == theirs[("gold", scenario)]["similarity"] == 1.0


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_only_difference_is_the_words_beside_tool_calls(exchanges, scenario):
    """ToolSandbox's agent sends ``content: ""`` where its model spoke beside a call; the runtime
    sends the words. Blank them and the requests are equal; the scores are ToolSandbox's."""
    server, ours, theirs = exchanges
    stock, mine = server.take("talk", scenario, "agent"), server.take("rt-talk", scenario, "agent")
    spoken = [m for b in mine for m in b["messages"] if m["role"] == "assistant" and m.get("tool_calls")]
    assert spoken and all(m["content"].startswith("Let me run ") for m in spoken)
    assert all(m["content"] == "" for b in stock for m in b["messages"]
               if m["role"] == "assistant" and m.get("tool_calls"))
    blanked = [{**b, "messages": [{**m, "content": ""} if m["role"] == "assistant" and m.get("tool_calls")
                                  else m for m in b["messages"]]} for b in mine]
    assert blanked == stock, _first_difference(stock, blanked)
    assert server.take("rt-talk", scenario, "user") == server.take("talk", scenario, "user")
    assert ours[("talk", scenario)]["score"] == theirs[("talk", scenario)]["similarity"]


def _first_difference(a: list[dict], b: list[dict]) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            keys = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
            pairs = [(p, q) for p, q in zip(x.get("messages", []), y.get("messages", [])) if p != q]
            shown = f"\n  ToolSandbox: {json.dumps(pairs[0][0])[:400]}\n  runtime:     {json.dumps(pairs[0][1])[:400]}" if pairs else ""
            return f"request {i} differs in {keys}{shown}"
    return f"{len(a)} requests vs {len(b)}"
