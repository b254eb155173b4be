"""A Ray worker's own stop when the head goes (``runtime.backends.ray_lease``), without Ray: the
"GCS" is a listening socket on loopback that the test closes, as a SIGKILLed head's port is."""

from __future__ import annotations

import socket
import threading
import time

from runtime.backends import ray_lease


def test_the_watch_stops_calls_then_ends_the_worker_once_the_gcs_stops_answering(monkeypatch):
    monkeypatch.setattr(ray_lease, "PING_S", 0.05)
    gcs = socket.socket()
    gcs.bind(("127.0.0.1", 0))
    gcs.listen(16)
    address = f"127.0.0.1:{gcs.getsockname()[1]}"
    said: list[str] = []
    closed, ended = threading.Event(), threading.Event()
    watch = ray_lease.HeadWatch(address, said.append, close=closed.set, exit_after_s=5.0, end=ended.set)
    time.sleep(0.5)
    assert said == [] and not ended.is_set(), "a GCS that answers is not lost"
    gcs.close()
    assert ended.wait(5), "the worker must end once the GCS stops answering"
    assert closed.is_set(), "its environment is closed before it ends"
    assert len(said) == 1 and address in said[0] and "no more model calls" in said[0], said
    assert watch.lost == said[0]


def test_a_stopped_watch_never_ends_the_worker(monkeypatch):
    monkeypatch.setattr(ray_lease, "PING_S", 0.05)
    ended = threading.Event()
    watch = ray_lease.HeadWatch("127.0.0.1:1", lambda reason: None, end=ended.set)
    watch.stop()  # the run closed its workers first
    assert not ended.wait(0.5)


def test_the_clusters_the_runtime_starts_give_up_on_a_lost_gcs_soon():
    assert ray_lease.ray_environment() == {"RAY_gcs_rpc_server_reconnect_timeout_s": str(ray_lease.RECONNECT_S),
                                           "RAY_worker_niceness": "0"}
    assert ray_lease.RECONNECT_S < 60, "Ray's default: a raylet keeps its workers a minute"
    assert ray_lease.gcs_answers(None) is True, "an unknown address: Ray's own timeouts apply"


def test_the_drivers_probe_sees_the_head_go_while_a_cluster_read_is_stuck(monkeypatch):
    """The driver's watch (``runtime.backends.ray_workers.ClusterWatch``): a read of the cluster's
    state caught by the head's death blocks until Ray's own 60-s exit; the probe must see the
    loss in a few seconds all the same. The read here never returns, as such a read does."""
    import pytest

    pytest.importorskip("ray")
    from runtime.backends import ray_workers

    monkeypatch.setattr(ray_workers, "PING_S", 0.05)
    gcs = socket.socket()
    gcs.bind(("127.0.0.1", 0))
    gcs.listen(16)
    stuck, reading = threading.Event(), threading.Event()

    class Pool:  # its state read blocks, as ray.nodes() on a GCS that just died
        ledger = None

        def placed(self):
            reading.set()
            stuck.wait(60)
            return set()

    watch = ray_workers.ClusterWatch(Pool(), f"127.0.0.1:{gcs.getsockname()[1]}")
    try:
        assert reading.wait(5), "a GCS that answers is read"
        gcs.close()  # the head dies while the read is in progress
        deadline = time.monotonic() + 5
        while not watch.head_lost and time.monotonic() < deadline:
            time.sleep(0.05)
        assert watch.head_lost, "the probe was held up by the stuck read"
    finally:
        stuck.set()
        watch.stop()
