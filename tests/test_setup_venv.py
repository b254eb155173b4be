"""``make run``'s set-up (scripts/setup-venv.sh) says "done" once per step, when the step is
done: run on a venv whose interpreter is a stand-in that logs each command it is given and
succeeds, so the script's own step lines are what is checked, in a second."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "setup-venv.sh"


def test_each_step_says_done_once_after_its_last_command(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    calls = tmp_path / "calls.log"
    stand_in = venv / "bin" / "python"
    stand_in.write_text(f'#!/bin/sh\necho "$*" >> {calls}\necho "[ran] $*"\nexit 0\n')
    stand_in.chmod(0o755)

    done = subprocess.run(["bash", str(SCRIPT), "python3", str(venv)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    steps = [i for i, line in enumerate(lines) if re.search(r"\[\d/\d\]", line)]
    dones = [i for i, line in enumerate(lines) if "done in" in line]
    assert len(steps) == 4 and len(dones) == 4, done.stdout  # one "done" per step, not per command
    assert all(a < d < b for a, d, b in zip(steps, dones, steps[1:] + [len(lines)])), done.stdout
    ran = calls.read_text().splitlines()
    assert ran[0].endswith("install --upgrade pip") and ".[test,ray,inspect]" in ran[1]  # both in step 1
