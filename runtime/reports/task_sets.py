"""Which task set a run played, for the report's header: read from the settings fingerprints
``run.json`` keeps (package, version, digest of the task file; τ³ banking's retrieval), so a
reader can tell a run of the paper's τ² tasks from one of τ³'s corrected ones."""

from __future__ import annotations

import json
from pathlib import Path

from runtime.folder.store import RUN_INFO


def recorded(folder: Path) -> list[dict]:
    """Each distinct (scope, task set, retrieval) the folder's invocations recorded."""
    try:
        invocations = json.loads((Path(folder) / RUN_INFO).read_text(encoding="utf-8")).get("invocations", [])
    except (OSError, ValueError, AttributeError):
        return []
    seen, out = set(), []
    for info in invocations if isinstance(invocations, list) else []:
        fingerprint = (info or {}).get("fingerprint") or {}
        settings = fingerprint.get("settings") or {}
        if not settings.get("task_set"):
            continue
        scope = str(fingerprint.get("scope", "")).split("|")
        row = {"env": scope[1] if len(scope) > 2 else "?", "domain": scope[2] if len(scope) > 2 else "?",
               **settings["task_set"], "retrieval": settings.get("retrieval")}
        key = json.dumps(row, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out


def header(folder: Path) -> str:
    """One line per task set, or nothing for a folder made before task sets were recorded."""
    lines = []
    for row in recorded(folder):
        retrieval = f", retrieval {row['retrieval']}" if row.get("retrieval") else ""
        lines.append(f"Task set: {row['env']} {row['domain']} from {row.get('package')} "
                     f"{row.get('version')} ({row.get('tasks')} tasks, task file sha256 "
                     f"{row.get('tasks_sha256')}{retrieval}).")
    return "\n\n".join(lines) + "\n\n" if lines else ""
