"""A Ray worker stops calling, then ends, once the head is gone.

Why: a worker on another node outlives the head. Ray's raylet there keeps it running until
``gcs_rpc_server_reconnect_timeout_s`` (60 s by default) has passed without the GCS, and a
worker that kept calling the model in that time would pay for calls that no run folder counts,
even after the command had returned. Two things keep it from that:

* every call first asks the run's ledger, on the driver's node, for a ticket
  (``runtime.backends.ray_ledger.LedgerSink``); a ledger that cannot be reached stops the
  worker's model layer, so no call leaves without the ledger knowing of it;
* :class:`HeadWatch`, a thread in each worker, probes the head's GCS port every ``PING_S`` with a
  plain TCP connect, as the driver does (``runtime.backends.ray_workers.ClusterWatch``). After
  ``MISSES`` misses in a row it stops the model layer and, ``EXIT_AFTER_S`` later (time for the
  worker's environment to close), ends the process.

The clusters the runtime starts itself are also told to give up on a lost GCS after
``RECONNECT_S`` instead of 60 s (:data:`RAY_SETTINGS`), so their raylets end their workers too.
"""

from __future__ import annotations

import os
import socket
import threading
from typing import Callable

PING_S = 1.0
MISSES = 3
"""Probes in a row that find nothing at the GCS port before the head counts as lost (the
driver's rule too: it ends the run at the same moment)."""
EXIT_AFTER_S = 10.0
RECONNECT_S = 10
RAY_SETTINGS = {"gcs_rpc_server_reconnect_timeout_s": RECONNECT_S, "worker_niceness": 0}
"""Ray's own settings for the instances the runtime starts: a raylet (and so its workers) ends
``RECONNECT_S`` after its GCS stopped answering, as nothing can bring the GCS back; and the
workers run at the driver's priority, not Ray's default of 15 nicer. The episode workers are the
run's work: at +15 anything else on the machine starved them (a local instance's 18 episodes took
145-172 s instead of 20 s beside two busy processes on 2 cores), and their head watch with them."""


def ray_environment() -> dict[str, str]:
    """:data:`RAY_SETTINGS` as the environment of ``ray start`` (Ray reads ``RAY_<name>``)."""
    return {f"RAY_{name}": str(value) for name, value in RAY_SETTINGS.items()}


def gcs_answers(address: str | None, timeout_s: float = PING_S) -> bool:
    """Whether something listens at the GCS ``host:port`` (True when the address is unknown:
    then Ray's own timeouts apply). A head on this machine may listen on loopback only."""
    host, _, port = (address or "").rpartition(":")
    if not host or not port.isdigit():
        return True
    hosts = [host, *(["127.0.0.1"] if host != "127.0.0.1" and is_local(host) else [])]
    for name in hosts:
        try:
            socket.create_connection((name, int(port)), timeout=timeout_s).close()
            return True
        except OSError:
            continue
    return False


def is_local(host: str) -> bool:
    """Whether ``host`` is an address of this machine (one can bind to it)."""
    try:
        with socket.socket() as s:
            s.bind((host, 0))
        return True
    except OSError:
        return False


class HeadWatch:
    """In a worker: ``stop_calls(reason)`` once the GCS at ``gcs`` stops answering, then
    ``close()`` and the end of the process after ``exit_after_s``."""

    def __init__(self, gcs: str | None, stop_calls: Callable[[str], object],
                 close: Callable[[], None] = lambda: None, exit_after_s: float = EXIT_AFTER_S,
                 end: Callable[[], None] = lambda: os._exit(1)):
        self.gcs, self.stop_calls, self.close = gcs, stop_calls, close
        self.exit_after_s, self.end = exit_after_s, end
        self.lost: str | None = None
        self.stopped = threading.Event()
        threading.Thread(target=self._watch, name="ray-head-watch", daemon=True).start()

    def _watch(self) -> None:
        misses = 0
        while not self.stopped.wait(PING_S):
            misses = 0 if gcs_answers(self.gcs) else misses + 1
            if misses >= MISSES:
                break
        if self.stopped.is_set():
            return
        self.lost = (f"lost the Ray head node (nothing answers at its GCS address {self.gcs} for "
                     f"{MISSES * PING_S:g} s): this worker makes no more model calls")
        self.stop_calls(self.lost)
        closer = threading.Thread(target=self.close, daemon=True)
        closer.start()
        closer.join(self.exit_after_s)
        self.end()

    def stop(self) -> None:
        self.stopped.set()
