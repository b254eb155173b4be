"""What episodes of one (task, trial) share in memory: the opening request, ``p0`` and its
judgement, made once by the first episode that needs them and reused by the rest.

Per process, never on disk: an executor seeds it with what the run folder already holds, and
what an episode made goes back with its record, for the batch layer to write.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from typing import Any, Callable

from runtime.folder.scrub import scrub_data

Artifact = dict[str, Any]
"""``{"kind", "key", "value"}``: an artifact as the run folder stores it."""


JUDGE_INPUTS = "judge_inputs"
"""The tool schemas and reference plan the plan judge read, kept once per task (not per trial:
they do not change), for the APB export."""


def judge_inputs_key(env: str, domain: str, task_id: str) -> dict[str, Any]:
    return {"env": env, "domain": domain, "task_id": task_id}


def identity(kind: str, key: dict[str, Any]) -> str:
    return json.dumps([kind, key], sort_keys=True, default=str)


def group_of(key: dict[str, Any]) -> tuple[Any, Any, Any]:
    """The (domain, task, trial) an artifact or episode belongs to: the unit that shares."""
    return key.get("domain"), key.get("task_id"), key.get("trial")


class ArtifactMemo:
    """``get_or_create`` for shared artifacts; concurrent callers for one artifact wait for the
    first. Values are kept as the run folder keeps them (JSON, scrubbed), so reuse reads back
    exactly what a resumed run would read from disk."""

    def __init__(self) -> None:
        self._data: dict[str, Artifact] = {}
        self._locks: dict[str, threading.Lock] = defaultdict(threading.Lock)
        self._guard = threading.Lock()

    def seed(self, artifacts: list[Artifact]) -> None:
        with self._guard:
            for data in artifacts:
                self._data.setdefault(identity(data["kind"], data["key"]), data)

    def get_or_create(self, kind: str, key: dict[str, Any],
                      make: Callable[[], Any]) -> tuple[Any, Artifact | None]:
        """(value, the artifact if this call made it, else None)."""
        name = identity(kind, key)
        with self._guard:
            lock = self._locks[name]
        with lock:
            if name in self._data:
                return _copy(self._data[name]["value"]), None
            value = make()
            data = scrub_data(_copy({"kind": kind, "key": key, "value": value}))
            with self._guard:
                self._data[name] = data
            return value, data


def _copy(data: Any) -> Any:
    return json.loads(json.dumps(data, default=str))
