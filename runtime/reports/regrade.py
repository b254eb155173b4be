"""Re-grade a finished τ² run against τ³'s corrected tasks (``runtime.report RUN --regrade tau3``).

The run's conversations are scored again by the release's own evaluator in the τ³ venv
(:mod:`envs.tau3.regrade`); this side lists the verdicts that flip per task (a pass is a score
of 1.0, τ²'s and τ³'s success) and puts the Refine − Plan-first Δ on both task sets side by
side. It reads the folder and writes nothing into it: the table goes to stdout, the per-record
scores to ``--regrade-out`` when given.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path
from statistics import mean
from typing import Any, Optional

from runtime.folder.store import RunStore
from runtime.reports.summary import arm

TARGETS = ("tau3",)


def rescore(store: RunStore, timeout: float = 1800) -> tuple[list[Any], dict[str, dict[str, Any]]]:
    """The folder's records and their τ³ scores by record id."""
    from envs.shim import envs_only_path
    from envs.tau3.setup import installed

    record = installed()
    records = store.records()
    with tempfile.TemporaryDirectory(prefix="evr-regrade-") as tmp:
        given, out = Path(tmp) / "records.jsonl", Path(tmp) / "regraded.json"
        given.write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
        import os

        env = {**os.environ, "PYTHONPATH": envs_only_path(), "TAU2_DATA_DIR": record["data_dir"]}
        env = {k: v for k, v in env.items() if not any(s in k.upper() for s in ("API_KEY", "TOKEN", "SECRET"))}
        proc = subprocess.run([record["python"], "-m", "envs.tau3.regrade", "--records", str(given),
                               "--out", str(out)], capture_output=True, text=True, env=env, timeout=timeout)
        if proc.returncode != 0:
            tail = [line for line in proc.stderr.strip().splitlines() if line.strip()][-1:] or ["(no output)"]
            raise ValueError(f"re-grading in the τ³ venv failed: {tail[0][:300]}")
        return records, json.loads(out.read_text(encoding="utf-8"))


def passed(score: Optional[float]) -> Optional[bool]:
    return None if score is None else score >= 1.0


def label(record: Any) -> str:
    """The record's arm: its mode, and a Refine's critique strategy (``refine``,
    ``refine:self-critique``, …): each strategy is its own row, Δ and flips."""
    return arm(record.key.mode, record.key.strategy)


def flips(records: list[Any], regraded: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each record whose verdict differs between the run's task set and τ³'s."""
    out = []
    for r in records:
        new = regraded.get(r.record_id, {})
        if "score" not in new or passed(r.score) == passed(new["score"]):
            continue
        out.append({"task_id": r.key.task_id, "domain": r.key.domain, "mode": r.key.mode,
                    "strategy": r.key.strategy if r.key.mode == "refine" else "", "arm": label(r),
                    "trial": r.key.trial, "tau2": r.score, "tau3": new["score"],
                    "tau3_breakdown": new.get("breakdown", {})})
    return sorted(out, key=lambda f: (f["domain"], _order(f["task_id"]), f["arm"], f["trial"]))


def _order(task_id: str) -> tuple:
    return (0, int(task_id), "") if task_id.isdigit() else (1, 0, task_id)


def deltas(records: list[Any], regraded: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Mean score per arm and each Refine strategy − Plan-first (paired over tasks, trials
    averaged) on the run's task set and on τ³'s, over the records both scored. ``delta`` is the
    default Refine's (``refine``); ``deltas`` holds every strategy's, by arm."""
    by: dict[str, dict[str, dict[str, list[float]]]] = {"tau2": defaultdict(lambda: defaultdict(list)),
                                                         "tau3": defaultdict(lambda: defaultdict(list))}
    for r in records:
        new = regraded.get(r.record_id, {})
        if r.score is None or "score" not in new:
            continue
        by["tau2"][label(r)][r.key.task_id].append(r.score)
        by["tau3"][label(r)][r.key.task_id].append(new["score"])
    out = {}
    for name, arms in by.items():
        means = {a: mean(mean(v) for v in tasks.values()) for a, tasks in arms.items()}
        base = arms.get("plan-first", {})
        each, paired_of = {}, {}
        for a in sorted(x for x in arms if x.startswith("refine")):
            paired = sorted(set(arms[a]) & set(base))
            each[a] = mean(mean(arms[a][t]) - mean(base[t]) for t in paired) if paired else None
            paired_of[a] = len(paired)
        out[name] = {"means": means, "delta": each.get("refine"), "deltas": each,
                     "paired_tasks": paired_of.get("refine", 0), "paired_tasks_by_arm": paired_of}
    return out


def with_nl_assertions(regraded: dict[str, dict[str, Any]]) -> int:
    """Episodes whose task has NL assertions that no judge graded (the τ³ side counts a task
    only when it has some: ``envs.tau3.adapter``)."""
    return sum(1 for v in regraded.values() if v.get("ungraded"))


NL_JUDGE_NOTE = ("τ³'s evaluator grades NL assertions with an LLM judge (gpt-4.1 by default, through "
                 "litellm): `tau2 evaluate-trajs --fresh-tasks` on these episodes needs that judge's key "
                 "(OPENAI_API_KEY) and exits 1 without it")


def markdown(folder: Path, records: list[Any], regraded: dict[str, dict[str, Any]]) -> str:
    flipped = flips(records, regraded)
    scored = sum(1 for r in records if "score" in regraded.get(r.record_id, {}))
    skipped = len(records) - scored
    ungraded = with_nl_assertions(regraded)
    d = deltas(records, regraded)
    lines = [f"# Re-graded against τ³: {folder.name}", "",
             f"{scored} of {len(records)} records re-scored by tau2 1.0.1's evaluator"
             + (f" ({skipped} not: errored or not in τ³)" if skipped else "")
             + (f"; {ungraded} episode(s) whose task has NL assertions left them ungraded (no LLM judge)"
                if ungraded else "") + ".", ""]
    if ungraded:
        lines += [f"Note: {NL_JUDGE_NOTE}.", ""]
    lines += ["| arm | mean on the run's tasks | mean on τ³'s tasks |", "|---|---|---|"]
    for a in sorted(set(d["tau2"]["means"]) | set(d["tau3"]["means"])):
        lines.append(f"| {a} | {_f(d['tau2']['means'].get(a))} | {_f(d['tau3']['means'].get(a))} |")
    for a in sorted(set(d["tau2"]["deltas"]) | set(d["tau3"]["deltas"])) or ["refine"]:
        name = "Refine" if a == "refine" else a
        lines.append(f"| Δ {name} − Plan-first | {_f(d['tau2']['deltas'].get(a), True)} | "
                     f"{_f(d['tau3']['deltas'].get(a), True)} |")
    lines += ["", f"## Flipped verdicts ({len(flipped)})", ""]
    if flipped:
        lines += ["| domain | task | arm | trial | run's score | τ³ score | τ³ breakdown |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {f['domain']} | {f['task_id']} | {f['arm']} | {f['trial']} | {_f(f['tau2'])} | "
                  f"{_f(f['tau3'])} | {json.dumps(f['tau3_breakdown'])} |" for f in flipped]
    else:
        lines.append("None: every re-scored verdict is the same on both task sets.")
    return "\n".join(lines) + "\n"


def _f(value: Optional[float], signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.3f}" if signed else f"{value:.3f}"
