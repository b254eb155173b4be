"""Each time a run folder was reported, and at which size: ``run.json``'s ``looks`` list.

A folder reported, grown with more trials and reported again has been read more than once; a
fixed-size interval read at several sizes claims effects far more often than its level says
(15 % at a nominal 5 % over five reads). The report writes a look each time it is built, so a
later report knows the folder grew since it was read and shows the anytime-valid interval beside
the fixed-size one (``runtime.reports.decision``).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from runtime.folder.store import RUN_INFO, write_json_atomic


def read(folder: Path) -> list[dict[str, Any]]:
    """The looks recorded so far (empty when ``run.json`` is absent or unreadable)."""
    try:
        data = json.loads((Path(folder) / RUN_INFO).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    looks = data.get("looks") if isinstance(data, dict) else None
    return [x for x in looks if isinstance(x, dict) and isinstance(x.get("trials"), int)] if isinstance(looks, list) else []


def earlier_sizes(folder: Path, trials: int) -> list[int]:
    """The smaller trial counts the folder was reported at before (sorted, each once)."""
    return sorted({x["trials"] for x in read(folder) if x["trials"] < trials})


def note(folder: Path, trials: int, episodes: int) -> None:
    """Add a look at ``trials`` trials per task (``episodes`` records); a look at the same size
    as the last one is not repeated. A ``run.json`` that is absent (a folder no run opened: its
    settings unknown, which the next run must still see) or cannot be read is left alone."""
    path = Path(folder) / RUN_INFO
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(data, dict):
        return
    looks = data.get("looks") if isinstance(data.get("looks"), list) else []
    if looks and isinstance(looks[-1], dict) and looks[-1].get("trials") == trials \
            and looks[-1].get("episodes") == episodes:
        return
    looks.append({"at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "trials": trials,
                  "episodes": episodes})
    data["looks"] = looks
    write_json_atomic(path, data)
