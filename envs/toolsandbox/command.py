"""How the ToolSandbox env server is started: below the adapter and its set-up, which both
start one."""

from __future__ import annotations

from envs.server_client import ServerCommand
from envs.shim import envs_only_path

SERVERS_VAR = "TOOLSANDBOX_SERVERS"


def server_command(python: str) -> ServerCommand:
    """How to start the ToolSandbox env server with ToolSandbox's interpreter ``python``."""
    return ServerCommand(
        name="toolsandbox",
        argv=[python, "-m", "envs.toolsandbox.server"],
        env={"PYTHONPATH": envs_only_path(), "TQDM_DISABLE": "1", "PYTHONHASHSEED": "0",
             "TOKENIZERS_PARALLELISM": "false"},
    )
