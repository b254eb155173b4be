"""CPU of the provenance audit per episode, replayed from run folders' records.

Every episode record keeps its conversation and its audit; this rebuilds each episode's view and
supervision from τ², runs ``critique.provenance.record_audit`` again and checks that it gives the
recorded audit (a faster audit must not change a record). Run it with the code to compare on the
path, e.g. against a checkout of an earlier commit:

    python bench/provenance_audit.py runs/airline-30 runs/retail-30
    PYTHONPATH=../earlier python bench/provenance_audit.py runs/airline-30 runs/retail-30
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def main(folders: list[str], rounds: int = 3) -> int:
    from critique.provenance import record_audit
    from envs.base import Trajectory
    from envs.tau2 import Tau2Environment

    env, cases = Tau2Environment(), []
    for folder in folders:
        for line in (Path(folder) / "records.jsonl").read_text().splitlines():
            r = json.loads(line)
            view, supervision = env.load(r["key"]["domain"], r["key"]["task_id"])
            view = view.model_copy(update={"opening_request": r["opening_request"]})
            trajectory = Trajectory(messages=r["messages"], termination=r["termination"] or "",
                                    turns=r["turns"] or 0)
            cases.append((view, supervision, trajectory, r["provenance"]))
    per_round, mismatches = [], 0
    for _ in range(rounds):  # the first round includes reading each domain's policy once
        start = time.process_time()
        for view, supervision, trajectory, recorded in cases:
            mismatches += record_audit(view, supervision, trajectory) != recorded
        per_round.append(1000 * (time.process_time() - start) / len(cases))
    print(f"{len(cases)} episodes: {per_round[0]:.1f} ms CPU an episode in the first round, "
          f"median of {rounds} rounds {statistics.median(per_round):.1f} ms; "
          f"audits differing from the records: {mismatches}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: python bench/provenance_audit.py RUN_FOLDER [RUN_FOLDER ...]", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
