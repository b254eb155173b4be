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
    or fail their digest are left out: ``skipped_note`` names them)."""
    held = {a.id for r in records for a in r.attempts if a.id}
    pending: dict[str, list[Attempt]] = defaultdict(list)
    for record_id, attempt in _read(Path(root))[0]:
        if attempt.id not in held and all(a.id != attempt.id for a in pending[record_id]):
            pending[record_id].append(attempt)
    return {k: v for k, v in pending.items() if v}


def skipped_note(root: Path) -> str | None:
    """One line naming the lines of ``lost_attempts.jsonl`` that cannot be used (torn, edited,
    not a lost attempt), or None: their calls are not counted."""
    skipped = _read(Path(root))[1]
    if not skipped:
        return None
    shown = ", ".join(map(str, skipped[:10])) + (", …" if len(skipped) > 10 else "")
    return (f"{len(skipped)} line(s) of {Path(root) / FILE} are not a lost attempt this runtime "
            f"wrote (torn, edited or not JSON) and are left out, their calls uncounted "
            f"(line{'s' if len(skipped) > 1 else ''} {shown})")


def _read(root: Path) -> tuple[list[tuple[str, Attempt]], list[int]]:
    """(record id, attempt) of each usable line, and the numbers of the others."""
    path = root / FILE
    if not path.exists():
        return [], []
    good, skipped = [], []
    for number, raw in enumerate(path.read_bytes().splitlines(), 1):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw.decode("utf-8"))
            if not isinstance(data, dict) or not integrity.has_digest(data) or integrity.problem(data):
                raise ValueError("unsealed or altered")
            good.append((str(data["record_id"]), Attempt.model_validate(data["attempt"])))
        except (ValueError, KeyError, TypeError):
            skipped.append(number)
    return good, skipped
