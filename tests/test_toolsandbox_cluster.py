"""ToolSandbox under ``--backend ray`` on a real 2-node Ray cluster (``testkit.ray_cluster``): the
same records and scores as with threads, all three modes, each worker starting its own env
server on its node. Needs a set-up ToolSandbox (skips with the reason otherwise; CI's
``scripts/ci-toolsandbox.sh`` runs it with none skipped)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("ray", reason="the Ray cluster tests need Ray: pip install -e '.[ray]'")
pytestmark = pytest.mark.ray  # one xdist worker for every test that starts Ray

from tests.conftest import comparable, read_records
from tests.test_ray_cluster import ROOT, driver_env, end, finish, new_cluster


@pytest.fixture(scope="module")
def cluster(ts_python, tmp_path_factory):
    """Started only once ToolSandbox is known to be set up (``ts_python`` skips otherwise)."""
    c = new_cluster(tmp_path_factory.mktemp("cluster"), "n2")
    yield c
    end(c)


def test_toolsandbox_on_a_two_node_cluster_gives_the_threads_records(tmp_path, ts_env, cluster, validate,
                                                                     monkeypatch):
    from testkit.toolsandbox_gold import register_roles

    tasks = ["cellular_off", "wifi_off_10_distraction_tools"]
    maps = {t: ts_env.task_info("default", t)["tool_name_map"] for t in tasks}
    model = register_roles("ts-cluster-roles", maps)
    monkeypatch.setenv("TOOLSANDBOX_SERVERS", "1")
    args = ["--env", "toolsandbox", "--mode", "all", "--model", model, "--tasks", ",".join(tasks),
            "--concurrency", "2", "--no-cache"]
    code_t, threads = validate(*args, out=tmp_path / "threads")
    script = ("import functools, json, sys\n"
              "from runtime import validate\n"
              "from runtime.backends import add_worker_setup\n"
              "from testkit.toolsandbox_gold import register_roles\n"
              "setup = functools.partial(register_roles, 'ts-cluster-roles', json.loads(sys.argv[1]))\n"
              "setup(); add_worker_setup(setup)\n"
              "sys.exit(validate.main(sys.argv[2:]))\n")
    cmd = [sys.executable, "-c", script, json.dumps(maps), *args, "--backend", "ray", "--ray-address",
           cluster.address, "--ray-workers", "2", "--out", str(tmp_path / "ray")]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**driver_env(), "TOOLSANDBOX_SERVERS": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    code, _, err = finish(proc, timeout=900)
    assert code_t == code == 0, err[-2000:]
    on_ray = read_records(tmp_path / "ray")
    assert len(on_ray) == len(threads) == 3 * len(tasks)
    assert comparable(on_ray) == comparable(threads)
    assert {r["score"] for r in on_ray} == {1.0}
