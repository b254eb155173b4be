"""The Ray reaper ends what a killed driver leaves behind, including processes started without
the token whose marked parent has already gone (as the raylet's agents are when the raylet exits
first). No Ray needed: a small driver builds that process tree itself."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runtime.backends import ray_reaper

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="the reaper reads /proc")

# driver -> middle (marked, exits after a while) -> orphan (clean environment: no token)
DRIVER = r"""
import subprocess, sys, time
from runtime.backends import ray_reaper
ray_reaper.start()
middle = subprocess.Popen([sys.executable, "-c", '''
import subprocess, sys, time
orphan = subprocess.Popen([sys.argv[1], "300"], env={}, start_new_session=True)
print(orphan.pid, flush=True)
time.sleep(float(sys.argv[2]))
''', sys.argv[1], sys.argv[2]], stdout=subprocess.PIPE, text=True)
print(middle.stdout.readline().strip(), middle.pid, flush=True)
middle.wait()
print("middle gone", flush=True)
time.sleep(300)
"""


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_sigkilled_driver_leaves_no_orphan_of_an_exited_marked_parent():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(ray_reaper.MARK, None)
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, shutil.which("sleep"), "2"], cwd=ROOT,
                              env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)
    orphan = None
    try:
        orphan, middle = map(int, driver.stdout.readline().split())
        assert driver.stdout.readline().strip() == "middle gone"
        assert not running(middle) and running(orphan)
        environ = Path(f"/proc/{orphan}/environ").read_bytes()
        assert ray_reaper.MARK.encode() not in environ, "the orphan must not carry the token"
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(10)
        assert gone_within(orphan, 20), "the reaper left the orphan running"
    finally:
        if driver.poll() is None:
            driver.kill()
        if orphan and running(orphan):
            os.kill(orphan, signal.SIGKILL)


def test_ledger_never_names_a_reused_pid():
    child = subprocess.Popen([shutil.which("sleep"), "30"])
    try:
        started = ray_reaper.start_time(child.pid)
        assert started is not None
        assert ray_reaper.still_running({child.pid: started}) == [child.pid]
        assert ray_reaper.still_running({child.pid: started + 1}) == []  # same pid, another process
    finally:
        child.kill()
        child.wait()
    assert ray_reaper.still_running({child.pid: started}) == []
