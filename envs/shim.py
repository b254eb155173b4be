"""A folder holding just the runtime's ``envs`` package, for an env server that runs in a
benchmark's own interpreter (a virtualenv with the benchmark's pins).

Pointing that interpreter's PYTHONPATH at the runtime's site-packages would drag pydantic
2.x-latest, litellm, ... into it; a one-link folder brings ``envs`` alone.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Optional

_SHIM: Optional[str] = None
_SHIM_LOCK = threading.Lock()


def envs_only_path() -> str:
    """A folder holding just our ``envs`` package, for the server's PYTHONPATH.

    Pointing PYTHONPATH at the runtime's site-packages would drag pydantic 2.x-latest,
    litellm, ... into ToolSandbox's interpreter; a one-link folder brings ``envs`` alone.
    """
    global _SHIM
    with _SHIM_LOCK:
        if _SHIM is None or not Path(_SHIM).exists():
            shim = tempfile.mkdtemp(prefix="evr-envs-path-")
            os.symlink(Path(__file__).resolve().parent, Path(shim) / "envs")
            atexit.register(shutil.rmtree, shim, True)
            _SHIM = shim
        return _SHIM
