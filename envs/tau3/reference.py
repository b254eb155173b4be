"""τ³'s reference solutions as plain JSON, read in the τ³ venv for the runtime's process, which
cannot import the release (its ``tau2`` is the paper's τ²): what scripted replays play, and
what re-grading and the changed-task table compare.

    python -m envs.tau3.reference --out FILE airline retail banking_knowledge

Per task: the reference actions (name, arguments, requestor), ``communicate_info``, the user's
reason for calling, the reward basis, the NL assertions, and ``last_write``: the index of the
last reference write whose omission changes the gold end state (the sabotaged replay drops it;
None when no write matters), found by replaying on the release's own environments.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Optional

from envs.venvs import write_json


def _end_state(adapter: Any, domain: str, task: Any, actions: list) -> tuple:
    from tau2.registry import registry

    env = registry.get_env_constructor(domain)(**adapter.env_kwargs(domain, task))
    state = task.initial_state
    env.set_state(initialization_data=state.initialization_data if state else None,
                  initialization_actions=state.initialization_actions if state else None,
                  message_history=[])
    for action in actions:
        try:
            env.make_tool_call(tool_name=action.name, requestor=action.requestor, **action.arguments)
        except Exception:  # noqa: BLE001 - failing reference calls are part of some tasks
            pass
    return env.get_db_hash(), env.get_user_db_hash()


def _is_write(env: Any, action: Any) -> bool:
    if action.name.startswith("transfer_to_human"):
        return False
    toolkit = env.tools if action.requestor == "assistant" else env.user_tools
    if toolkit is None or not toolkit.has_tool(action.name):
        return False
    return str(toolkit.tool_type(action.name).value).lower() == "write"


def last_write(adapter: Any, domain: str, task: Any) -> Optional[int]:
    from tau2.registry import registry

    actions = list(task.evaluation_criteria.actions or []) if task.evaluation_criteria else []
    env = registry.get_env_constructor(domain)(**adapter.env_kwargs(domain, task))
    full = _end_state(adapter, domain, task, actions)
    for i in reversed(range(len(actions))):
        if _is_write(env, actions[i]) and _end_state(adapter, domain, task, actions[:i] + actions[i + 1:]) != full:
            return i
    return None


def describe(adapter: Any, domain: str, task: Any, sabotage: bool = True) -> dict[str, Any]:
    criteria = task.evaluation_criteria
    instructions = task.user_scenario.instructions
    return {
        "actions": [{"name": a.name, "arguments": a.arguments, "requestor": a.requestor}
                    for a in (criteria.actions or [] if criteria else [])],
        "communicate_info": list(criteria.communicate_info or []) if criteria else [],
        "nl_assertions": list(criteria.nl_assertions or []) if criteria else [],
        "reward_basis": [getattr(b, "value", str(b)) for b in (criteria.reward_basis or [])] if criteria else [],
        # None where the instructions are free text (banking): they hold the simulator's stop words
        "reason_for_call": getattr(instructions, "reason_for_call", None),
        "last_write": last_write(adapter, domain, task) if sabotage else None,
    }


def dump(domains: list[str], retrieval: Optional[str] = None, task_ids: Optional[list[str]] = None,
         sabotage: bool = True) -> dict[str, dict[str, Any]]:
    from envs.tau2 import tasks
    from envs.tau3.adapter import Tau3Adapter

    adapter = Tau3Adapter(retrieval)
    out: dict[str, dict[str, Any]] = {}
    for domain in domains:
        out[domain] = {}
        for task_id in adapter.select(tasks.TaskSelection(domain=domain)):
            if task_ids is None or task_id in task_ids:
                out[domain][task_id] = describe(adapter, domain, tasks.task(domain, task_id), sabotage)
    return out


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m envs.tau3.reference")
    p.add_argument("domains", nargs="+")
    p.add_argument("--out", required=True)
    p.add_argument("--retrieval")
    p.add_argument("--task-ids", help="comma-separated: only these tasks")
    p.add_argument("--no-sabotage", action="store_true", help="skip finding each task's last write")
    args = p.parse_args()
    ids = args.task_ids.split(",") if args.task_ids else None
    data = dump(args.domains, args.retrieval, ids, not args.no_sabotage)
    write_json(Path(args.out), data, indent=None)


if __name__ == "__main__":
    main()
