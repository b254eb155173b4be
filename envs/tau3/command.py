"""How the τ³ env server is started: below the adapter and its set-up, which both start one.

The server is the generic one (``python -m envs.protocol``) serving :class:`envs.tau3.adapter.
Tau3Adapter` in the τ³ venv, with ``TAU2_DATA_DIR`` naming the release's data folder (tau2 reads
it when it is imported) and the banking retrieval configuration in ``EVR_TAU3_RETRIEVAL``.
"""

from __future__ import annotations

from typing import Optional

from envs.server_client import ServerCommand
from envs.shim import envs_only_path

SERVERS_VAR = "TAU3_SERVERS"
ADAPTER = "envs.tau3.adapter:Tau3Adapter"


def server_command(python: str, data_dir: str, retrieval: Optional[str] = None,
                   embeddings_cache: Optional[str] = None) -> ServerCommand:
    """How to start one τ³ env server with the τ³ venv's interpreter ``python``;
    ``embeddings_cache``: the runtime answers its embeddings, whose disk cache goes there."""
    env = {"PYTHONPATH": envs_only_path(), "TAU2_DATA_DIR": data_dir, "PYTHONHASHSEED": "0",
           "TQDM_DISABLE": "1"}
    if retrieval:
        env["EVR_TAU3_RETRIEVAL"] = retrieval
    if embeddings_cache:
        env["EVR_TAU3_EMBEDDINGS"] = "1"
        env["EVR_TAU3_EMBEDDINGS_CACHE"] = embeddings_cache
    return ServerCommand(name="tau3", argv=[python, "-m", "envs.protocol", ADAPTER], env=env)
