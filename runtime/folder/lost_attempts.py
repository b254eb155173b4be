"""Lost attempts not in any record yet: ``lost_attempts.jsonl`` in the run folder.

Why: a lost attempt's calls are kept in the record of its episode's re-run (``attempts``), but a
run may stop before that re-run ends — no node to run it on, the head lost, the cost limit
reached. Each lost attempt is therefore appended here (one whole, sealed line) the moment it is
known; the resume attaches the ones no record holds yet to the episode's next record, and the
budget counts them meanwhile. An attempt is in a record or pending here, never both: each has
an ``id``, and one that a record of its episode holds is no longer pending.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from pathlib import Path

from runtime.folder import integrity
from runtime.folder.durable import append_whole
from runtime.folder.records import Attempt, EpisodeRecord
from runtime.folder.scrub import scrub

FILE = "lost_attempts.jsonl"


def new_id() -> str:
    return uuid.uuid4().hex


def note(root: Path, record_id: str, attempt: Attempt) -> None:
    line = integrity.sealed_line(scrub(json.dumps({"record_id": record_id, "attempt": attempt.model_dump()})))
    append_whole(Path(root) / FILE, (line + "\n").encode("utf-8"))


def unrecorded(root: Path, records: list[EpisodeRecord]) -> dict[str, list[Attempt]]:
    """The lost attempts, by episode, that no record in ``records`` holds (lines that are torn
    or fail their digest are left out)."""
    path = Path(root) / FILE
    if not path.exists():
        return {}
    held = {a.id for r in records for a in r.attempts if a.id}
    pending: dict[str, list[Attempt]] = defaultdict(list)
    for raw in path.read_bytes().splitlines():
        try:
            data = json.loads(raw.decode("utf-8"))
            if not isinstance(data, dict) or integrity.FIELD not in data or integrity.problem(data):
                continue
            attempt = Attempt.model_validate(data["attempt"])
        except (ValueError, KeyError, TypeError):
            continue
        if attempt.id not in held and all(a.id != attempt.id for a in pending[data["record_id"]]):
            pending[data["record_id"]].append(attempt)
    return {k: v for k, v in pending.items() if v}
