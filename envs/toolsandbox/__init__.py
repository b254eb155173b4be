"""ToolSandbox (github.com/apple/ToolSandbox), played behind the env-server protocol.

The benchmark runs in its own virtualenv (see :mod:`envs.toolsandbox.setup`) as a server
(:mod:`envs.toolsandbox.server`); this side is a :class:`envs.server_client.RemoteEnvironment`
over a pool of such servers, one per concurrent episode (ToolSandbox keeps its world state in a
process global). Scores are ToolSandbox's own: ``similarity = milestone similarity ×
[minefield similarity == 0]``, with its effective turn count in ``Score.breakdown``/``info``.

Tasks are the 728 offline scenarios (the rest need RapidAPI), domain ``default``; ``split``
picks by category (``multiple_user_turn``, ``insufficient_information+no_distraction_tools``, ...).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Optional

from envs.server_client import RemoteEnvironment, ServerCommand, ServerPool

SERVERS_VAR = "TOOLSANDBOX_SERVERS"
_SHIM: Optional[str] = None
_SHIM_LOCK = threading.Lock()


def _envs_only_path() -> str:
    """A folder holding just our ``envs`` package, for the server's PYTHONPATH.

    Pointing PYTHONPATH at the runtime's site-packages would drag pydantic 2.x-latest,
    litellm, ... into ToolSandbox's interpreter; a one-link folder brings ``envs`` alone.
    """
    global _SHIM
    with _SHIM_LOCK:
        if _SHIM is None or not Path(_SHIM).exists():
            shim = tempfile.mkdtemp(prefix="evr-envs-path-")
            os.symlink(Path(__file__).resolve().parent.parent, Path(shim) / "envs")
            atexit.register(shutil.rmtree, shim, True)
            _SHIM = shim
        return _SHIM


def server_command(python: str) -> ServerCommand:
    """How to start the ToolSandbox env server with ToolSandbox's interpreter ``python``."""
    return ServerCommand(
        name="toolsandbox",
        argv=[python, "-m", "envs.toolsandbox.server"],
        env={"PYTHONPATH": _envs_only_path(), "TQDM_DISABLE": "1", "PYTHONHASHSEED": "0",
             "TOKENIZERS_PARALLELISM": "false"},
    )


class ToolSandboxEnvironment(RemoteEnvironment):
    """The ToolSandbox adapter (``envs.base.Environment``). Raises ``EnvUnavailableError``
    naming the fix when ToolSandbox is not set up."""

    def __init__(self, python: Optional[str] = None, max_servers: Optional[int] = None,
                 start_timeout: float = 300.0, reply_timeout: float = 600.0):
        from envs.toolsandbox.setup import python_path

        python = python or python_path()
        size = max_servers or int(os.environ.get(SERVERS_VAR) or 4)
        pool = ServerPool(server_command(python), max_size=size, start_timeout=start_timeout,
                          reply_timeout=reply_timeout)
        super().__init__("toolsandbox", pool, domains=["default"])


__all__ = ["ToolSandboxEnvironment", "server_command"]
