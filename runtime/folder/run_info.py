"""``run.json`` read back: every invocation's config and settings fingerprint.

Read by the run's opening (``runtime.compose.opening``: a file that is not what the runtime
writes is refused in one line) and by the summary and the report, which name the settings of
the records' fingerprints rather than those of the last invocation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runtime.folder.store import RUN_INFO


class RunInfoError(ValueError):
    """``run.json`` cannot be read, or is not what the runtime writes."""


def read_run_info(folder: Path) -> dict[str, Any] | None:
    """``run.json``, checked (None when absent); ``RunInfoError`` naming the file and the cause."""
    path = Path(folder) / RUN_INFO
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise RunInfoError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError
        raise RunInfoError(f"{path} is not JSON ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("invocations"), list):
        raise RunInfoError(f"{path} is not a run.json (no list of invocations)")
    return data


def known_settings(info: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Fingerprint id → fingerprint (id, scope, settings), from every recorded invocation."""
    out = {}
    for item in (info or {}).get("invocations", []):
        fp = item.get("fingerprint") if isinstance(item, dict) else None
        if isinstance(fp, dict) and isinstance(fp.get("id"), str):
            out[fp["id"]] = fp
    return out


def settings_or_none(folder: Path) -> dict[str, dict[str, Any]]:
    """``known_settings`` of ``folder``, empty when ``run.json`` is absent or unreadable (a
    report still describes the records; their settings are then unknown)."""
    try:
        return known_settings(read_run_info(folder))
    except RunInfoError:
        return {}
