"""A command's process ends at once when done, yet loses nothing the interpreter's teardown
would have done for it: threads finished, exit handlers run, buffered output written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CHILD = r"""
import atexit, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from runtime.cli.process_end import end

out = Path(sys.argv[1])
def late_writer():
    time.sleep(0.3)
    (out / "thread.txt").write_text("thread done")
threading.Thread(target=late_writer).start()          # a non-daemon thread still working
pool = ThreadPoolExecutor(2); pool.submit(lambda: 1)   # idle workers, never shut down
atexit.register(lambda: (out / "atexit.txt").write_text("handler ran"))
sys.stdout.write("buffered, no newline")               # a pipe: block-buffered
big = [dict(a=list(range(20))) for _ in range(50_000)] # objects a teardown would free one by one
end(int(sys.argv[2]))
"""


def _run(tmp_path: Path, code: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), str(code)], cwd=REPO,
                          capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})


def test_end_keeps_the_code_threads_handlers_and_output(tmp_path):
    done = _run(tmp_path, 3)
    assert done.returncode == 3, done.stderr
    assert done.stdout == "buffered, no newline"
    assert (tmp_path / "thread.txt").read_text() == "thread done"
    assert (tmp_path / "atexit.txt").read_text() == "handler ran"
