"""Ray's own lines leave the console: the filter on descriptor 2 sends lines in Ray's C++ log
format to ``run.log`` (with our note next to Ray's ``max_restarts`` warning) and passes
everything else through at once, partial lines included. A real Ray run is checked in
``tests/test_ray_private.py``."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from runtime.backends.ray_loopback import is_loopback

ROOT = Path(__file__).resolve().parents[1]

PRELUDE = textwrap.dedent("""
    import importlib.util, logging, os, sys, time
    from loguru import logger
    logger.remove()
    logger.add(sys.argv[1], level="INFO", format="{message}")
    # the module alone (the package's __init__ imports the batch loop: seconds)
    spec = importlib.util.spec_from_file_location("ray_logs", "runtime/backends/ray_logs.py")
    ray_logs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ray_logs)
""")
"""What both scripts start with: loguru writing to the log file named first, ``ray_logs`` loaded."""

SCRIPT = PRELUDE + textwrap.dedent("""
    f = ray_logs.Fd2Filter()
    os.write(2, b"[2026-12-02 05:55:31,274 E 1086 1086] core_worker.cc:2465: Actor ... "
                b"has constructor arguments in the object store and max_restarts > 0. ...\\n")
    os.write(2, b"a line of ours\\n")
    sys.stderr.write("prompt without newline")
    sys.stderr.flush()
    time.sleep(0.5)
    print("passed at once:", "prompt" in open(sys.argv[2]).read(), flush=True)
    os.write(2, b"\\n[2026-12-02 05:55:32,001 W 1086 1090] raylet_client.cc:9: first half, ")
    time.sleep(0.2)
    os.write(2, b"second half\\n[not Ray] stays\\n")
    f.close()
    sys.stderr.write("after close\\n")
""")


def test_rays_lines_go_to_run_log_and_the_rest_through(tmp_path):
    log, err = tmp_path / "run.log", tmp_path / "stderr"
    with open(err, "wb") as stderr:
        done = subprocess.run([sys.executable, "-c", SCRIPT, str(log), str(err)], cwd=ROOT,
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                              stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=60)
    console = err.read_text()
    assert done.returncode == 0, console
    assert "passed at once: True" in done.stdout, "a partial line of ours must not wait"
    assert console == "a line of ours\nprompt without newline\n[not Ray] stays\nafter close\n"
    kept = log.read_text().splitlines()
    assert kept[0].startswith("ray: [2026-12-02 05:55:31,274 E 1086 1086] core_worker.cc:2465")
    assert kept[1].startswith("ray: (ours) Ray's warning above is about the workers' start")
    assert kept[2].endswith("raylet_client.cc:9: first half, second half"), kept
    assert len(kept) == 3


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.3.0.1", True), ("::1", True), ("::ffff:127.0.0.1", True),
    ("[::1]", True), ("0.0.0.0", False), ("::", False), ("192.0.2.2", False),
    ("::ffff:192.0.2.2", False), ("example.org", False)])
def test_loopback_addresses(host, loopback):
    assert is_loopback(host) is loopback


LOGGERS = PRELUDE + textwrap.dedent("""
    import ray
    theirs = list(logging.getLogger("ray").handlers)
    ray_logs.start()
    logging.getLogger("ray._private.worker").warning("a warning of Ray's")
    ray_logs.worker_lines({"pid": 41, "actor_name": "EpisodeWorker", "is_err": True,
                            "lines": ["a worker's line"]})
    ray_logs.worker_lines({"pid": "raylet", "lines": ["the raylet's line"]})
    ray_logs.stop()
    print("given back:", logging.getLogger("ray").handlers == theirs)
""")


def test_rays_python_loggers_and_workers_lines_go_to_run_log(tmp_path):
    log = tmp_path / "run.log"
    done = subprocess.run([sys.executable, "-c", LOGGERS, str(log)], cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "given back: True"
    assert "a warning of Ray's" not in done.stderr and "line" not in done.stderr, done.stderr
    assert log.read_text().splitlines() == [
        "ray: WARNING ray._private.worker: a warning of Ray's",
        "ray: (EpisodeWorker pid=41 stderr) a worker's line",
        "ray: (raylet) the raylet's line"]
