"""One writer per run folder (``runtime.folder.lock``), with real processes: a second run on a
busy folder is refused at once in one line naming the holder (exit 2, nothing written), one
told to wait runs after it and finds its records done, and a SIGKILLed holder leaves no lock."""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path

import pytest

from tests.test_resume_and_cli import _scripted_cli

TAU2_IMPORT_NOISE = re.compile(r"^\d{4}-\d\d-\d\d .*\| tau2\.|^ |^[\[\]{}]")
"""τ²'s own loguru lines at import (a subprocess's stderr before the runtime quiets them)."""
ARGS = ("--task-ids", "1,2,3", "--mode", "direct", "--concurrency", "1")


def _wait_for(predicate, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _lines(out: Path) -> list[dict]:
    path = out / "records.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def test_a_second_run_on_a_busy_folder_is_refused_or_waits(tmp_path):
    out = tmp_path / "run"
    first = _scripted_cli(out, *ARGS, latency=0.6)
    _wait_for(lambda: (out / "run.json").exists() or first.poll() is not None)
    assert first.poll() is None, "the first run should still be running"
    # Stopped, it holds the folder however long the second run takes to start on a loaded machine
    first.send_signal(signal.SIGSTOP)

    refused = _scripted_cli(out, *ARGS)
    started = time.monotonic()
    stdout, stderr = refused.communicate(timeout=120)
    assert refused.returncode == 2, (stdout, stderr)
    assert time.monotonic() - started < 60
    lines = [x for x in stderr.strip().splitlines() if not TAU2_IMPORT_NOISE.match(x)]
    assert len(lines) == 1, stderr
    assert f"pid {first.pid} on " in lines[0] and "since " in lines[0] and "--wait-for-lock" in lines[0]
    assert len(json.loads((out / "run.json").read_text())["invocations"]) == 1  # nothing written

    waiting = _scripted_cli(out, *ARGS, "--wait-for-lock", "300")
    first.send_signal(signal.SIGCONT)
    assert first.wait(timeout=300) == 0
    stdout, stderr = waiting.communicate(timeout=300)
    assert waiting.returncode == 0, stderr
    assert "3 episodes (3 already done)" in " ".join(stdout.split())
    records = _lines(out)
    assert len(records) == 3 and len({r["record_id"] for r in records}) == 3


@pytest.mark.slow
def test_a_sigkilled_holder_leaves_no_lock(tmp_path):
    out = tmp_path / "run"
    first = _scripted_cli(out, *ARGS, latency=0.25)
    _wait_for(lambda: bool(_lines(out)) or first.poll() is not None)
    assert first.poll() is None
    first.send_signal(signal.SIGKILL)
    first.wait()
    done = len(_lines(out))
    second = _scripted_cli(out, *ARGS)
    stdout, stderr = second.communicate(timeout=300)
    assert second.returncode == 0, stderr
    assert f"({done} already done)" in " ".join(stdout.split())
    assert len({r["record_id"] for r in _lines(out)}) == 3
