"""How long a run takes to fail on a broken endpoint, end to end (process start included).

Each scenario runs ``python -m runtime.validate`` on 4 tasks of τ²'s mock domain against a
loopback endpoint (``testkit/loopback.py``) and records the exit code, the wall time, the
number of HTTP requests the endpoint saw and the last line on stderr:

* ``dead``: every connection is dropped (the circuit breaker should stop the run);
* ``rejected-key``: 401 on every call (the first one should stop the run);
* ``keyless``: no key in the environment, a server that wants none (a placeholder is sent).

    python bench/fail_fast.py            # writes bench/FAIL_FAST.md
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from testkit.loopback import EchoServer, FaultProxy  # noqa: E402


def run(url: str, out: Path, env: dict[str, str]) -> tuple[int, float, str]:
    cmd = [sys.executable, "-m", "runtime.validate", "--env", "tau2", "--domain", "mock",
           "--mode", "direct", "--tasks", "4", "--concurrency", "1", "--model", "openai/m",
           "--api-base", url, "--out", str(out), "--no-cache", "--max-steps", "4"]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    return proc.returncode, time.perf_counter() - started, (lines[-1] if lines else "")[:160]


def main() -> None:
    import tempfile

    base = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(ROOT)}
    keyed = {**base, "OPENAI_API_KEY": "sk-bench-0000000000"}
    keyless = {k: v for k, v in base.items() if k != "OPENAI_API_KEY"}
    rows = []
    with tempfile.TemporaryDirectory() as tmp, EchoServer(status=200) as ok:
        with FaultProxy(ok.url, lambda n, b: "reset") as dead:
            code, secs, line = run(dead.url + "/v1", Path(tmp) / "dead", keyed)
            rows.append(("dead", code, secs, len(dead.requests), line))
        with EchoServer(status=401) as reject:
            code, secs, line = run(reject.url + "/v1", Path(tmp) / "rejected", keyed)
            rows.append(("rejected-key", code, secs, len(reject.requests), line))
        code, secs, line = run(ok.url + "/v1", Path(tmp) / "keyless", keyless)
        rows.append(("keyless", code, secs, len(ok.requests), line))
    text = ["# Failing fast: time to stop on a broken endpoint", "",
            "`python bench/fail_fast.py` — 4 episodes of τ²'s mock domain, concurrency 1, wall time "
            "including interpreter start and imports.", "",
            "Wall times vary with machine load (these were taken while two other test suites ran "
            "on the same 2 cores); the request counts and the breaker's own span in the stderr "
            "line are the stable figures.", "",
            "| scenario | exit code | seconds | requests | last line on stderr |", "| --- | --- | --- | --- | --- |"]
    text += [f"| {name} | {code} | {secs:.1f} | {n} | {line.replace('|', '/')} |" for name, code, secs, n, line in rows]
    (ROOT / "bench" / "FAIL_FAST.md").write_text("\n".join(text) + "\n", encoding="utf-8")
    print("\n".join(text))


if __name__ == "__main__":
    main()
