"""τ³-bench (tau2-bench 1.0.1, the benchmark's current release), played behind the env-server
protocol.

The release runs in its own virtualenv (:mod:`envs.tau3.setup`) as an env server
(:mod:`envs.tau3.adapter`: the τ² adapter on the release's own orchestrator, user simulator and
evaluator); this side is a :class:`envs.server_client.RemoteEnvironment` over a pool of such
servers. Domains: airline, retail, telecom, mock (the corrected task sets) and
banking_knowledge, whose retrieval configuration is the run's ``--retrieval``
(:mod:`envs.tau3.retrieval`: the offline ones; the others are refused in one line).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Optional

from envs.base import Embed
from envs.server_client import RemoteEnvironment, ServerPool
from envs.tau3 import retrieval as retrieval_configs
from envs.tau3.command import SERVERS_VAR, server_command
from envs.tau3.setup import installed


class Tau3Environment(RemoteEnvironment):
    """The τ³ adapter (``envs.base.Environment``). Raises ``EnvUnavailableError`` naming the
    fix when τ³ is not set up, ``UnknownTaskError`` for a retrieval configuration it cannot run."""

    def __init__(self, retrieval: Optional[str] = None, max_servers: Optional[int] = None,
                 start_timeout: float = 300.0, reply_timeout: float = 600.0,
                 embeddings: Optional[Embed] = None):
        """``embeddings``: the runtime's embeddings endpoint (``envs.Embed``, with a ``name``
        naming endpoint and model), for the configurations that need one; None: refused."""
        if retrieval is not None:
            retrieval_configs.check(retrieval, retrieval_configs.DOMAIN, embeddings=embeddings is not None)
        self.record = installed()
        self.retrieval = retrieval
        size = max_servers or int(os.environ.get(SERVERS_VAR) or 4)
        cache = None
        if embeddings is not None and retrieval in retrieval_configs.EMBEDDINGS:
            name = getattr(embeddings, "name", "") or "runtime"
            digest = hashlib.sha256(name.encode()).hexdigest()[:16]
            cache = str(Path(self.record["venv"]).parent / "embeddings-cache" / digest)
        command = server_command(self.record["python"], self.record["data_dir"], retrieval, cache)
        pool = ServerPool(command, max_size=size, start_timeout=start_timeout, reply_timeout=reply_timeout)
        super().__init__("tau3", pool, domains=sorted(self.record.get("task_sets") or {}) or None,
                         embed=embeddings if cache else None)

    def task_set(self, domain: str) -> dict:
        """The release and the digest of ``domain``'s task file, as the set-up recorded them."""
        return dict((self.record.get("task_sets") or {}).get(domain) or {})

    def retrieval_for(self, domain: str) -> Optional[str]:
        """The retrieval configuration a run of ``domain`` uses (None outside banking)."""
        if domain != retrieval_configs.DOMAIN:
            return None
        return retrieval_configs.check(self.retrieval, domain, embeddings=self.embed is not None)


__all__ = ["Tau3Environment", "server_command"]
