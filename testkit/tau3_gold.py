"""The gold replay (:class:`testkit.gold.GoldReplay`) on τ³'s tasks, which live in the τ³ venv:
their reference solutions are read there once (``python -m envs.tau3.reference``) and played
from plain data here. Proves plumbing (executor path, the release's orchestrator and evaluator
agree), never a model."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Optional

from envs.shim import envs_only_path
from envs.tau3.setup import installed
from testkit.gold import GoldReplay


def reference(domains: list[str], task_ids: Optional[list[str]] = None, retrieval: Optional[str] = None,
              sabotage: bool = True, timeout: float = 900) -> dict[str, dict[str, Any]]:
    """τ³'s reference solutions ({domain: {task id: facts}}), read in the τ³ venv."""
    record = installed()
    with tempfile.TemporaryDirectory(prefix="evr-tau3-ref-") as tmp:
        out = Path(tmp) / "reference.json"
        argv = [record["python"], "-m", "envs.tau3.reference", *domains, "--out", str(out)]
        argv += ["--task-ids", ",".join(task_ids)] if task_ids else []
        argv += ["--retrieval", retrieval] if retrieval else []
        argv += [] if sabotage else ["--no-sabotage"]
        env = {**os.environ, "PYTHONPATH": envs_only_path(), "TAU2_DATA_DIR": record["data_dir"]}
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"reading τ³'s reference solutions failed: {proc.stderr.strip()[-1500:]}")
        return json.loads(out.read_text(encoding="utf-8"))


def as_task(facts: dict[str, Any]) -> Any:
    """Facts shaped like a tau2 Task as far as the gold replay reads one."""
    actions = [SimpleNamespace(**a) for a in facts["actions"]]
    return SimpleNamespace(
        evaluation_criteria=SimpleNamespace(actions=actions, communicate_info=facts["communicate_info"]),
        # free-text instructions (banking) carry the simulator's stop words: not the opening's
        user_scenario=SimpleNamespace(instructions=SimpleNamespace(
            reason_for_call=facts["reason_for_call"] or "I have a question about my account.")),
        last_write=facts.get("last_write"),
    )


class Tau3GoldReplay(GoldReplay):
    """``facts``: :func:`reference`'s answer for the tasks to be played."""

    def __init__(self, facts: dict[str, dict[str, Any]], **kwargs: Any):
        super().__init__(**kwargs)
        self.tasks = {(d, t): as_task(f) for d, by_id in facts.items() for t, f in by_id.items()}

    def task_of(self, domain: str, task_id: str) -> Any:
        return self.tasks[(domain, task_id)]

    def sabotage_index(self, domain: str, task: Any) -> int | None:
        return task.last_write
