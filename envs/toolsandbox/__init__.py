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

import os
from typing import Optional

from envs.server_client import RemoteEnvironment, ServerPool
from envs.toolsandbox.command import SERVERS_VAR, server_command
from envs.toolsandbox.setup import python_path


class ToolSandboxEnvironment(RemoteEnvironment):
    """The ToolSandbox adapter (``envs.base.Environment``). Raises ``EnvUnavailableError``
    naming the fix when ToolSandbox is not set up."""

    def __init__(self, python: Optional[str] = None, max_servers: Optional[int] = None,
                 start_timeout: float = 300.0, reply_timeout: float = 600.0):
        python = python or python_path()
        size = max_servers or int(os.environ.get(SERVERS_VAR) or 4)
        pool = ServerPool(server_command(python), max_size=size, start_timeout=start_timeout,
                          reply_timeout=reply_timeout)
        super().__init__("toolsandbox", pool, domains=["default"])


__all__ = ["ToolSandboxEnvironment", "server_command"]
