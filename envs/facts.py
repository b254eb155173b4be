"""Small facts remembered between commands, so the next one can answer before the heavy
libraries load (``envs.catalogue``: a benchmark's domains and task ids; ``runtime.llm.credentials``:
which API keys a model was missing). A cache in the user's cache folder: each fact carries the
key of what produced it and is ignored when that key changed; a folder that cannot be read or
written costs the next command its head start, nothing else. Never a secret: names, not values.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

HOME_VAR = "EVR_FACTS_HOME"
"""Where remembered facts live (default ``~/.cache/exec-validation-runtime/facts``)."""


def home() -> Path:
    return Path(os.environ.get(HOME_VAR) or "~/.cache/exec-validation-runtime/facts").expanduser()


def read(name: str, key: str | None) -> dict[str, Any] | None:
    """The fact ``name`` if it was written under ``key`` (None: absent, stale or unreadable)."""
    if key is None:
        return None
    try:
        data = json.loads((home() / f"{name}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key or not isinstance(data.get("fact"), dict):
        return None
    return data["fact"]


def write(name: str, key: str | None, fact: dict[str, Any]) -> None:
    """Keep ``fact`` under ``key``, atomically (a reader sees the old file or the new one)."""
    if key is None:
        return
    path = home() / f"{name}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"key": key, "fact": fact}, fh)
        os.replace(tmp, path)
    except OSError:
        pass
