"""The τ² tasks and databases the generators and scorers read, loaded once a process: below
the task loader (``leakbench.adversary.tasks``) and the ID scorer (``leakbench.fragments``),
which both need them."""

from __future__ import annotations

import functools
import json


@functools.lru_cache(maxsize=None)
def environment():
    from envs.tau2 import Tau2Environment

    return Tau2Environment()


@functools.lru_cache(maxsize=None)
def db(domain: str) -> dict:
    from envs.tau2 import tasks

    return json.loads(json.dumps(tasks.reference_env(domain).tools.db.model_dump(), default=str))


def task_ids(domain: str) -> list[str]:
    from envs.base import TaskSelection

    return environment().select(TaskSelection(domain=domain))
