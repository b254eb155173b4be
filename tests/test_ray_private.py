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
        info = json.loads(driver.stdout.readline())
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
