"""The release's own task definitions and agent policy per domain, as JSON, for a results file
in the release's schema (``runtime.reports.export_tau3``). Runs in the τ³ venv:

    python -m envs.tau3.export_tasks --domains airline,mock --out tasks.json

Per domain: ``tasks`` (every task of the domain, the release's ``Task`` dumped as it is, so its
leaderboard check finds them equal to its own), ``base`` (the ids of the ``base`` split, the set
the leaderboard asks for) ``policy`` (the agent's policy, as the runtime's view shows it) and ``user_guidelines`` (the user
simulator's guidelines, as ``tau2 run`` writes them into its results' ``user_info``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from envs.venvs import write_json


def dump(domains: list[str]) -> dict[str, Any]:
    from tau2.registry import registry
    from tau2.user.user_simulator import get_global_user_sim_guidelines

    from envs.tau3.adapter import Tau3Adapter

    adapter = Tau3Adapter()
    known = set(adapter.domains())
    out: dict[str, Any] = {}
    for domain in domains:
        if domain not in known:
            out[domain] = {"missing": f"this tau2 release has no domain {domain!r}"}
            continue
        loader = registry.get_tasks_loader(domain)
        tasks = loader(None)
        try:
            base = [t.id for t in loader("base")]
        except Exception:  # noqa: BLE001 - a domain without a base split names none
            base = []
        view, _ = adapter.load(domain, tasks[0].id)
        out[domain] = {"tasks": [t.model_dump(mode="json") for t in tasks], "base": base,
                       "policy": view.policy, "user_guidelines": get_global_user_sim_guidelines()}
    return out


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m envs.tau3.export_tasks")
    p.add_argument("--domains", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    result = dump([d for d in args.domains.split(",") if d])
    write_json(Path(args.out), result, indent=None)


if __name__ == "__main__":
    main()
