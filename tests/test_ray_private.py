"""The local Ray instance of ``--backend ray`` is private. Every socket its processes listen on
is on loopback: a real run is watched from start to end. Ray's token authentication is on (a
fresh token per driver, in the environment only), so a client without the token is refused.
Its ports stay in ``--ray-port-range``. Ray's own log lines go to ``run.log``, not the console
(see docs/run-folder.md)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytestmark = pytest.mark.ray  # one xdist worker for every test that starts Ray
psutil = pytest.importorskip("psutil", reason="the census of listening sockets needs psutil")

from runtime.backends.ray_loopback import is_loopback  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

DRIVER = textwrap.dedent("""
    import json, os, sys
    import psutil
    from runtime.backends import ray_backend   # imports ray before the token is set: refreshed
    import ray

    ray_backend.start_local(1)

    @ray.remote
    def pid():
        return os.getpid()

    ray.get(pid.remote())
    me = psutil.Process()
    listening = []
    for p in [me, *me.children(recursive=True)]:
        try:
            for c in p.net_connections(kind="inet"):
                if c.status == psutil.CONN_LISTEN:
                    listening.append([p.name(), c.laddr.ip, c.laddr.port])
        except psutil.Error:
            pass
    gcs = ray.get_runtime_context().gcs_address
    print(json.dumps({"gcs": gcs, "listening": listening, "mode": os.environ["RAY_AUTH_MODE"],
                      "token_file": os.path.exists(os.path.expanduser("~/.ray/auth_token"))}))
    sys.stdout.flush()
    sys.stdin.readline()   # stay up while the stranger tries
    ray_backend.stop_local()
""")

STRANGER = textwrap.dedent("""
    import sys, ray
    try:
        ray.init(address=sys.argv[1], log_to_driver=False, configure_logging=False)
        print("JOINED")
    except Exception as exc:
        print("REFUSED", type(exc).__name__)
""")


def routable_addresses() -> list[str]:
    """This machine's addresses other than loopback (where another machine would knock)."""
    return [a.address for addrs in psutil.net_if_addrs().values() for a in addrs
            if a.family == socket.AF_INET and not is_loopback(a.address)]


@pytest.mark.slow
def test_a_client_without_the_token_is_refused(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    env["PYTHONPATH"] = os.getcwd() + os.pathsep + env.get("PYTHONPATH", "")
    token_file_before = os.path.exists(os.path.expanduser("~/.ray/auth_token"))
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        line = ""
        while not line.startswith("{"):  # Ray may say something of its own first
            line = driver.stdout.readline()
            assert line, "the driver ended before it said where its instance is"
        info = json.loads(line)
        print("listening:", info["listening"])
        assert info["mode"] == "token"
        assert info["token_file"] == token_file_before, "the token is never written to a file"
        # a local stranger: Ray's local-only switch, or it would look for the instance on this
        # machine's routable address, where nothing listens
        local = {**env, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
        stranger = subprocess.run([sys.executable, "-c", STRANGER, info["gcs"]], env=local,
                                  capture_output=True, text=True, timeout=180)
        assert stranger.stdout.strip().startswith("REFUSED"), stranger.stdout + stranger.stderr
        port = int(info["gcs"].rpartition(":")[2])
        for address in routable_addresses():
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection((address, port), timeout=10).close()
    finally:
        driver.stdin.write("\n")
        driver.stdin.flush()
        driver.wait(timeout=120)


CENSUS = textwrap.dedent("""
    import json, os, sys
    import psutil
    from runtime.backends import ray_backend, ray_reaper
    import ray

    ray_backend.start_local(1, sys.argv[1])

    @ray.remote
    def pid():
        return os.getpid()

    ray.get([pid.remote() for _ in range(3)])
    mark = os.environ[ray_reaper.MARK]
    procs = {}
    for p in psutil.process_iter():
        try:
            if p.pid == os.getpid() or p.environ().get(ray_reaper.MARK) == mark:
                for q in [p, *p.children(recursive=True)]:
                    procs[q.pid] = q
        except psutil.Error:
            pass
    listening = []
    for p in procs.values():
        try:
            listening += [[p.name(), c.laddr.ip, c.laddr.port] for c in p.net_connections(kind="inet")
                          if c.status == psutil.CONN_LISTEN]
        except psutil.Error:
            pass
    print(json.dumps(listening))
    ray_backend.stop_local()
""")


def _free_range(size: int = 40) -> tuple[int, int]:
    import random
    import socket

    for _ in range(50):
        lo = random.randrange(30000, 60000 - size)
        try:
            for port in range(lo, lo + size):
                with socket.socket() as s:
                    s.bind(("0.0.0.0", port))
        except OSError:
            continue
        return lo, lo + size - 1
    pytest.skip("no free range of ports found")


@pytest.mark.slow
def test_every_port_of_a_local_instance_is_in_the_range_given():
    lo, hi = _free_range()
    env = {**os.environ, "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", CENSUS, f"{lo}-{hi}"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    listening = json.loads(done.stdout.strip().splitlines()[-1])
    print("listening:", listening)
    assert listening, "the census found no Ray socket"
    outside = [entry for entry in listening if not lo <= entry[2] <= hi]
    assert not outside, f"outside {lo}-{hi}: {outside}"
    open_to_all = [entry for entry in listening if not is_loopback(entry[1])]
    assert not open_to_all, f"not on loopback: {open_to_all}"


def test_a_bad_port_range_is_one_line_and_exit_2(tmp_path, capsys):
    from runtime import validate

    assert validate.main(["--env", "tau2", "--backend", "ray", "--ray-port-range", "80-90",
                          "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'80-90' is not a usable port range" in err[0], err


# ---- a real run: what listens, and what reaches the console -------------------------------------

RAY_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:,]+ [DIWEF] \d+ \d+\]|core_worker|raylet|"
                      r"max_restarts|\(\w+ pid=|autoscaler|Ray instance|ray\.init", re.M)


def ray_processes(driver: int) -> list:
    """The driver, everything below it and every process marked as its instance's."""
    try:
        procs = [psutil.Process(driver), *psutil.Process(driver).children(recursive=True)]
    except psutil.Error:
        return []
    marks = set()
    for p in procs[1:]:
        try:
            marks.add(p.environ().get("EVR_RAY_OWNER"))
        except psutil.Error:
            pass
    marks.discard(None)
    if marks:
        for p in psutil.process_iter():
            try:
                if p.environ().get("EVR_RAY_OWNER") in marks:
                    procs += [p, *p.children(recursive=True)]
            except psutil.Error:
                pass
    return procs


@pytest.fixture(scope="module")
def watched_run(tmp_path_factory):
    """One real run on a local instance (the scripted model, with a response cache: Ray warns
    about the cache actor's handle in the workers' arguments with its ``max_restarts`` line),
    its listening sockets sampled throughout."""
    out = tmp_path_factory.mktemp("ray-run") / "run"
    cmd = [sys.executable, "-m", "testkit.run_scripted", "--latency", "0.3", "--", "--env", "tau2",
           "--domain", "mock", "--model", "scripted/roles", "--mode", "direct", "--tasks", "2",
           "--trials", "1", "--backend", "ray", "--ray-workers", "2",
           "--cache-dir", str(out.parent / "cache"), "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env = {k: v for k, v in env.items() if k != "EVR_RAY_OWNER" and not k.startswith("RAY_AUTH")}
    console = out.parent / "console"
    listening: dict[tuple, str] = {}
    with open(console, "w") as sink:
        driver = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                  start_new_session=True)
        deadline = time.monotonic() + 400
        try:
            while driver.poll() is None and time.monotonic() < deadline:
                for p in ray_processes(driver.pid):
                    try:
                        for c in p.net_connections(kind="inet"):
                            if c.status == psutil.CONN_LISTEN:
                                listening[(p.pid, c.laddr.ip, c.laddr.port)] = p.name()
                    except psutil.Error:
                        pass
                time.sleep(0.3)
        finally:
            if driver.poll() is None:
                os.killpg(driver.pid, 9)
            driver.wait(60)
    return driver.returncode, listening, console.read_text(), out


@pytest.mark.slow
def test_every_socket_a_local_ray_run_listens_on_is_on_loopback(watched_run):
    code, listening, console, _ = watched_run
    assert code == 0, console[-3000:]
    found = sorted((name, ip, port) for (_, ip, port), name in listening.items())
    print(f"{len(found)} listening sockets:", found)
    names = {name for name, _, _ in found}
    assert {"gcs_server", "raylet"} <= names and any(n.startswith("ray::") for n in names), names
    open_to_all = [entry for entry in found if not is_loopback(entry[1])]
    assert not open_to_all, f"{len(open_to_all)} of {len(found)} not on loopback: {open_to_all}"


@pytest.mark.slow
def test_rays_own_lines_go_to_run_log_not_the_console(watched_run):
    code, _, console, out = watched_run
    assert code == 0, console[-3000:]
    spilled = [line for line in console.splitlines() if RAY_LINE.search(line)]
    assert not spilled, f"Ray's lines on the console: {spilled[:5]}"
    run_log = (out / "run.log").read_text()
    ray_lines = [line for line in run_log.splitlines() if " - ray: " in line]
    assert any("max_restarts" in line for line in ray_lines), ray_lines[:5]
    assert any("(ours) Ray's warning above" in line for line in ray_lines)
    assert any("(EpisodeWorker pid=" in line for line in ray_lines), "the workers' own output"


def test_the_switch_is_put_back_once_the_local_instance_stops(monkeypatch):
    from ray._private import ray_constants

    from runtime.backends.ray_loopback import SWITCH, check_on_loopback, keep_on_loopback

    monkeypatch.delenv(SWITCH, raising=False)
    before = ray_constants.ENABLE_RAY_CLUSTER
    restore = keep_on_loopback()
    assert os.environ[SWITCH] == "0" and ray_constants.ENABLE_RAY_CLUSTER is False
    restore()
    assert SWITCH not in os.environ and ray_constants.ENABLE_RAY_CLUSTER is before
    check_on_loopback("127.0.0.1:6379")
    with pytest.raises(RuntimeError, match="came up on 192.0.2.2, not on loopback"):
        check_on_loopback("192.0.2.2:6379")


UNSWITCHED = textwrap.dedent("""
    import sys
    from runtime.backends import ray_backend, ray_loopback
    from runtime.compose.config import UsageError
    import ray

    ray_loopback.keep_on_loopback = lambda: (lambda: None)   # as if Ray ignored its switch
    try:
        ray_backend.start_local(1)
        print("STARTED")
    except UsageError as exc:
        print("REFUSED", exc, "| still up:", ray.is_initialized())
""")


@pytest.mark.slow
def test_an_instance_that_is_not_on_loopback_is_refused():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("EVR_RAY_OWNER", None)
    done = subprocess.run([sys.executable, "-c", UNSWITCHED], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    said = done.stdout.strip().splitlines()[-1:]
    assert said and said[0].startswith("REFUSED --backend ray: the local Ray instance came up on"), \
        done.stdout + done.stderr[-2000:]
    assert "not on loopback" in said[0] and said[0].endswith("still up: False")
