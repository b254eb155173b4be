"""The run folder the explorer's tests read: a real scripted ``validate --mode all`` run on
τ²-bench airline tasks 0 and 1, plus one errored episode recorded the way the runner records one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from runtime.folder.records import EpisodeKey, EpisodeRecord, StageError
from runtime.folder.store import RunStore

ERROR_MESSAGE = "429 from the provider after 5 retries"


def scripted_run(out: Path) -> Path:
    proc = subprocess.run(
        [sys.executable, "-m", "testkit.run_scripted", "--", "--env", "tau2", "--mode", "all",
         "--domain", "airline", "--task-ids", "0,1", "--model", "scripted/roles", "--out", str(out),
         "--no-cache"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    key = EpisodeKey(env="tau2", domain="airline", task_id="0", mode="refine", model="scripted/roles",
                     trial=1, strategy="anti-leak")
    RunStore(out).append(EpisodeRecord(
        run_id="errored", key=key, record_id=key.id(), status="error", seed=7,
        error=StageError(stage="critique", type="RateLimitError", message=ERROR_MESSAGE),
        started_at="2026-01-01T00:00:00+00:00", finished_at="2026-01-01T00:00:01+00:00"))
    return out
