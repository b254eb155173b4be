"""The local Ray instance of ``--backend ray`` takes no orders from strangers: Ray's token
authentication is on (a fresh token per driver, in the environment only), so a client without
the token — anyone else who reaches the machine — is refused. The census of the instance's
listening sockets is printed: Ray 2.x binds its gRPC servers to every interface whatever it is
told (see docs/run-folder.md), which is why the token is what keeps them private."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("ray")

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
        stranger = subprocess.run([sys.executable, "-c", STRANGER, info["gcs"]], env=env,
                                  capture_output=True, text=True, timeout=180)
        assert stranger.stdout.strip().startswith("REFUSED"), stranger.stdout + stranger.stderr
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


def test_a_bad_port_range_is_one_line_and_exit_2(tmp_path, capsys):
    from runtime import validate

    assert validate.main(["--env", "tau2", "--backend", "ray", "--ray-port-range", "80-90",
                          "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'80-90' is not a usable port range" in err[0], err
