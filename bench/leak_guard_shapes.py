"""The four shapes of honest critique the guard once flagged, and their leak twins: how many
honest sentences pass and how many twins are caught, per class (``leakbench/shapes.py``).

    python bench/leak_guard_shapes.py --tasks 20 --per-task 3

Prints one line per class; exit 0. Run with another checkout's ``PYTHONPATH`` (and this file's
``leakbench/shapes.py`` copied there) to measure another guard on the same sentences.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def measure(tasks_per_domain: int, per_task: int, seed: int = 0, show: int = 0) -> dict[str, Counter]:
    from critique.guard.leak_guard import LeakGuard
    from evrcore.plan import Plan
    from leakbench import shapes
    from leakbench.adversary_corpus import tasks_for

    tally: dict[str, Counter] = {}
    shown = 0
    for domain in ("airline", "retail", "telecom"):
        for task in tasks_for(domain, seed, tasks_per_domain):
            guard = LeakGuard(task.view, task.sup, Plan.model_validate(task.p0))
            rng = random.Random(f"{seed}:{domain}:{task.task_id}")
            for _ in range(per_task):
                for cls, text, leak in shapes.cases(task, rng):
                    flagged = bool(guard.scan(text))
                    t = tally.setdefault(cls, Counter())
                    t["leak" if leak else "honest"] += 1
                    t["caught" if leak else "flagged"] += flagged
                    if show and shown < show and flagged != leak:
                        shown += 1
                        print(f"[{'miss' if leak else 'false alarm'}] {domain}/{task.task_id}: {text}")
    return tally


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python bench/leak_guard_shapes.py", description=__doc__.split("\n")[0])
    p.add_argument("--tasks", type=int, default=20, help="tasks per domain (seeded sample)")
    p.add_argument("--per-task", type=int, default=3, help="sentences of each class per task")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--show", type=int, default=0, help="print this many false alarms and misses")
    args = p.parse_args(argv)
    if args.tasks < 1 or args.per_task < 1:
        print(f"error: --tasks and --per-task must be positive, not {args.tasks} and {args.per_task}", file=sys.stderr)
        return 2
    tally = measure(args.tasks, args.per_task, args.seed, args.show)
    print(f"{'class':14s} {'honest':>7s} {'flagged':>8s} {'twins':>6s} {'caught':>7s}")
    for cls, t in tally.items():
        print(f"{cls:14s} {t['honest']:7d} {t['flagged'] / max(1, t['honest']):8.1%} "
              f"{t['leak']:6d} {t['caught'] / max(1, t['leak']):7.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
