"""Re-grade a finished run's episodes against τ³'s tasks, in the τ³ venv, as the release's
``tau2 evaluate-trajs --fresh-tasks`` does: each recorded conversation becomes the release's
``SimulationRun`` again and is scored by the release's evaluator against the release's task of
the same id. The records are read, never written.

    python -m envs.tau3.regrade --records records.jsonl --out regraded.json

Per record (by ``record_id``): the τ³ score, its breakdown, the release's reward info, or why it could not be re-graded
(an errored episode, a task id the release does not have, a domain it has not).
"""

from __future__ import annotations

import argparse
from pathlib import Path
import json
from typing import Any

from envs.base import Trajectory
from envs.venvs import write_json


def simulation(record: dict[str, Any]) -> dict[str, Any]:
    """The recorded conversation as the release's ``SimulationRun`` (JSON)."""
    messages, requestor_of = [], {}
    for m in record.get("messages") or []:
        role = m.get("role")
        if role == "tool":
            call = m.get("tool_call_id")
            messages.append({"role": "tool", "id": call, "content": m.get("content"),
                             "requestor": requestor_of.get(call, "assistant")})
        elif role in ("assistant", "user"):
            calls = []
            for tc in m.get("tool_calls") or []:
                requestor_of[tc.get("id")] = role
                raw = tc["function"].get("arguments")
                try:
                    arguments = json.loads(raw) if isinstance(raw, str) and raw else (raw or {})
                except ValueError:
                    arguments = {"__unparsable_arguments__": raw}
                calls.append({"id": tc.get("id"), "name": tc["function"]["name"], "arguments": arguments,
                              "requestor": role})
            messages.append({"role": role, "content": m.get("content"), "tool_calls": calls or None})
    return {"id": record["record_id"], "task_id": record["key"]["task_id"], "start_time": "",
            "end_time": "", "duration": 0.0, "termination_reason": record.get("termination") or "agent_error",
            "messages": messages}


def regrade(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    from envs.tau3.adapter import Tau3Adapter

    adapter = Tau3Adapter()
    domains = set(adapter.domains())
    out: dict[str, dict[str, Any]] = {}
    for record in records:
        key = record["key"]
        if record.get("status") != "ok" or record.get("score") is None:
            out[record["record_id"]] = {"skipped": "not scored in the run (an errored episode)"}
            continue
        if key["domain"] not in domains:
            out[record["record_id"]] = {"skipped": f"τ³ has no domain {key['domain']!r}"}
            continue
        try:
            trajectory = Trajectory(messages=record["messages"], termination=record.get("termination") or "",
                                    turns=record.get("turns") or 0,
                                    native={"simulation": simulation(record),
                                            "opening_request": record.get("opening_request") or ""})
            score = adapter.score(key["domain"], key["task_id"], trajectory)
        except Exception as exc:  # noqa: BLE001 - one record that cannot be re-graded says why
            out[record["record_id"]] = {"skipped": f"{type(exc).__name__}: {str(exc)[:300]}"}
            continue
        out[record["record_id"]] = {"score": score.value, "breakdown": score.breakdown,
                                    "ungraded": score.info.get("ungraded", []),
                                    "reward_info": score.info.get("reward_info")}
    return out


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m envs.tau3.regrade")
    p.add_argument("--records", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    with open(args.records, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    result = regrade(records)
    write_json(Path(args.out), result, indent=None)


if __name__ == "__main__":
    main()
