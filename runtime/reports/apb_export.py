"""Judged plans in the Agent Planning Benchmark's record shape, so APB's own scorer reads them.

APB's judge stage writes one JSON line per judged plan: the task record (``id``, ``split``,
``planning_regime``, ``task_family``, ``task_category``, ``query``…) plus ``tested_model``,
``model_response`` (the plan as the model's text), ``judge_model`` and ``judgement``
(``is_correct``, ``grade``, ``error_list``, ``reasoning``). Its scorer keeps the records whose
``split`` is one of its splits and groups them by ``split``, ``planning_regime``,
``task_family`` and ``task_category``. Each episode's p0 and p1 become one such line each (a p0
shared by Plan-first and Refine is written once); our own fields ride along under names APB
does not read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from evrcore.plan import Plan
from runtime.records import EpisodeRecord
from runtime.store import RUN_INFO, write_text_atomic

SPLIT = "holistic_planning"
"""APB's split for a holistic plan judged for correctness (a plan + tool chain per task)."""
REGIME = "Holistic"


def judge_model(folder: Path) -> str:
    """The judge model of the run's latest invocation, as ``run.json`` recorded it."""
    path = Path(folder) / RUN_INFO
    try:
        invocations = json.loads(path.read_text(encoding="utf-8")).get("invocations", [])
    except (OSError, ValueError):
        return "unknown"
    for info in reversed(invocations):
        model = (info.get("models") or {}).get("judge_model", {}).get("model")
        if model:
            return model
    return "unknown"


def apb_records(records: Iterable[EpisodeRecord], judge: str) -> list[dict[str, Any]]:
    """One APB judgement record per judged plan, p0 before p1, each id once."""
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        for stage in ("p0", "p1"):
            judged, plan = getattr(r, f"judge_{stage}"), getattr(r, stage)
            if not judged or not judged.get("judgement") or not plan:
                continue
            plan_id = plan_id_of(r, stage)
            if plan_id in out:
                continue
            k = r.key
            out[plan_id] = {
                "id": plan_id,
                "split": SPLIT,
                "planning_regime": REGIME,
                "task_family": k.env,
                "task_category": k.domain,
                "source": k.env,
                "source_subset": k.domain,
                "query": r.opening_request or "",
                "tested_model": k.model,
                "model_response": json.dumps(Plan.model_validate(plan).to_apb(), ensure_ascii=False),
                "judge_model": judge,
                "judgement": judged["judgement"],
                "runtime": {"plan": stage, "task_id": k.task_id, "trial": k.trial,
                            "mode": k.mode, "strategy": k.strategy, "record_id": r.record_id,
                            "judge_note": judged.get("note")},
            }
    return list(out.values())


def plan_id_of(record: EpisodeRecord, stage: str) -> str:
    """A stable id per plan: p0 is shared by the task's trial, p1 belongs to one strategy."""
    k = record.key
    base = f"{k.env}/{k.domain}/{k.task_id}/trial-{k.trial}/{stage}"
    return f"{base}/{k.strategy or 'anti-leak'}" if stage == "p1" else base


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> None:
    write_text_atomic(Path(path), "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
