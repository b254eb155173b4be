"""Judged plans in the Agent Planning Benchmark's record shape, so APB's own scorer reads them.

APB's judge stage writes one JSON line per judged plan: the task record (``id``, ``split``,
``planning_regime``, ``task_family``, ``task_category``, ``query``…) plus ``tested_model``,
``model_response`` (the plan as the model's text), ``judge_model`` and ``judgement``
(``is_correct``, ``grade``, ``error_list``, ``reasoning``). Its scorer keeps the records whose
``split`` is one of its splits and groups them by ``split``, ``planning_regime``,
``task_family`` and ``task_category``. Each episode's p0 and p1 become one such line each (a p0
shared by Plan-first and Refine is written once); our own fields ride along under names APB
does not read.

Each line also carries what APB's judge stage builds its payload from, so
``run_benchmark.py --stage judge`` can re-judge our plans with APB's own judge: ``query``,
``tools_json`` (the full tool schemas the project's judge read), ``tool_names_json``, the
reference as ``plan`` and ``tool_chain_json`` (``critique.reference``, as the project's judge
read it, kept once per task in the run folder), and empty ``extraneous_tool_names_json`` /
``trajectory_prefix_json``. The judgement is written in APB's ``error_list`` shape here and
only here (records keep six named flags), settled by the verdict rule as the reports read it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from critique.judge import read_judgement
from evrcore.plan import Plan
from runtime.episode.artifacts import JUDGE_INPUTS, judge_inputs_key
from runtime.folder.records import EpisodeKey, EpisodeRecord
from runtime.folder.store import RUN_INFO, artifact_relpath, write_text_atomic

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


def judge_inputs(folder: Path | None, key: EpisodeKey) -> dict[str, Any] | None:
    """The tool schemas and reference plan the judge read for this task (``None`` for a run
    made before they were kept)."""
    if folder is None:
        return None
    path = Path(folder) / artifact_relpath(JUDGE_INPUTS, judge_inputs_key(key.env, key.domain, key.task_id))
    try:
        return json.loads(path.read_text(encoding="utf-8"))["value"]
    except (OSError, ValueError, KeyError):
        return None


def _task_fields(inputs: dict[str, Any] | None) -> dict[str, Any]:
    """APB's task-record fields its judge payload reads, as JSON strings like its dataset's."""
    if inputs is None:
        return {}
    tools = inputs.get("tools") or []
    reference = inputs.get("reference") or {}
    return {"tools_json": json.dumps(tools, ensure_ascii=False),
            "tool_names_json": json.dumps([t["function"]["name"] for t in tools], ensure_ascii=False),
            "plan": reference.get("plan", ""),
            "tool_chain_json": json.dumps(reference.get("tool_chain", []), ensure_ascii=False),
            "extraneous_tool_names_json": "[]", "trajectory_prefix_json": "[]", "unsolvable_type": None}


def apb_records(records: Iterable[EpisodeRecord], judge: str, folder: Path | None = None) -> list[dict[str, Any]]:
    """One APB judgement record per judged plan, p0 before p1, each id once; with the run
    ``folder``, each carries the judge's inputs for APB's own judge stage."""
    out: dict[str, dict[str, Any]] = {}
    inputs: dict[tuple[str, str, str], dict[str, Any] | None] = {}
    for r in records:
        for stage in ("p0", "p1"):
            result, plan = read_judgement(getattr(r, f"judge_{stage}")), getattr(r, stage)
            if result is None or result.judgement is None or not plan:
                continue
            plan_id = plan_id_of(r, stage)
            if plan_id in out:
                continue
            k = r.key
            task = (k.env, k.domain, k.task_id)
            if task not in inputs:
                inputs[task] = judge_inputs(folder, k)
            out[plan_id] = {
                "id": plan_id,
                "split": SPLIT,
                "planning_regime": REGIME,
                "task_family": k.env,
                "task_category": k.domain,
                "source": k.env,
                "source_subset": k.domain,
                "query": r.opening_request or "",
                **_task_fields(inputs[task]),
                "tested_model": k.model,
                "model_response": json.dumps(Plan.model_validate(plan).to_apb(), ensure_ascii=False),
                "judge_model": judge,
                "judgement": result.judgement.to_apb(),
                "runtime": {"plan": stage, "task_id": k.task_id, "trial": k.trial,
                            "mode": k.mode, "strategy": k.strategy, "record_id": r.record_id,
                            "judge_note": result.note},
            }
    return list(out.values())


def without_inputs(rows: list[dict[str, Any]]) -> int:
    """Exported lines that lack the judge's inputs (APB's judge would see no tools for them)."""
    return sum("tools_json" not in row for row in rows)


def plan_id_of(record: EpisodeRecord, stage: str) -> str:
    """A stable id per plan: p0 is shared by the task's trial, p1 belongs to one strategy."""
    k = record.key
    base = f"{k.env}/{k.domain}/{k.task_id}/trial-{k.trial}/{stage}"
    return f"{base}/{k.strategy or 'anti-leak'}" if stage == "p1" else base


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> None:
    write_text_atomic(Path(path), "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
