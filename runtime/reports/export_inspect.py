"""A run folder as inspect_ai eval logs (``--export inspect DIR``): one log per arm (environment,
domain, mode, critique strategy, tested model), one sample per episode, written with inspect's
own log types (``EvalLog``, ``write_eval_log``) so ``inspect_ai.log.read_eval_log`` reads them
and ``inspect view`` shows them.

A sample is an episode: its id the task (a number where every task id of the arm is one, so
samples sort 2 before 10), its epoch the trial (from 1), its input the opening request, its
messages the conversation (a simulated user's tool call, which inspect's user message cannot
hold, is written into that message's text), its events the same conversation as inspect's
transcript shows it (a model event per agent turn, a tool event per tool result, the score), its
score the benchmark's own, and
as metadata what only this runtime has: p0, the critique (grade, E1–E6, rationale), what the
leak guard did, p1, the plan judge's verdicts, the provenance audit's unexplained values,
tokens and cost. An errored episode is a sample with its error and no score. The target is left
empty: the hidden supervision is not written.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional

from runtime.folder.records import EpisodeRecord
from runtime.reports import episode_view
from runtime.reports.export_common import ArmKey, Export, Folder, tokens_and_cost

SCORER = "benchmark"


def available() -> Optional[str]:
    """None when inspect_ai can be imported, else why not (with the fix)."""
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError as exc:
        return f"inspect_ai is not installed ({exc}); `make install` installs it (the `inspect` extra)"
    return None


def _messages(record: EpisodeRecord) -> list[Any]:
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall

    names = {c.get("id"): (c.get("function") or {}).get("name") for m in record.messages
             for c in m.get("tool_calls") or []}
    out: list[Any] = []
    for m in record.messages:
        role, content = m.get("role"), m.get("content")
        text = content if isinstance(content, str) else ("" if content is None else json.dumps(content))
        calls = m.get("tool_calls") or []
        if role == "assistant":
            out.append(ChatMessageAssistant(content=text, tool_calls=[
                ToolCall(id=c.get("id") or "", function=(c.get("function") or {}).get("name", ""),
                         arguments=_arguments((c.get("function") or {}).get("arguments")))
                for c in calls] or None, source="generate"))
        elif role == "user":
            said = [text] if text else []
            said += [f"[user tool call] {(c.get('function') or {}).get('name', '')}"
                     f"({(c.get('function') or {}).get('arguments', '')})" for c in calls]
            out.append(ChatMessageUser(content="\n".join(said)))
        elif role == "tool":
            call = m.get("tool_call_id")
            out.append(ChatMessageTool(content=text, tool_call_id=call, function=names.get(call)))
        elif role == "system":
            out.append(ChatMessageSystem(content=text))
    return out


def events(record: EpisodeRecord, key: ArmKey, messages: list[Any], scores: Optional[dict]) -> list[Any]:
    """The conversation as inspect's transcript shows it: each agent turn a model event (the
    conversation so far in, the turn out), each tool result a tool event, then the score."""
    from inspect_ai.event import ModelEvent, ScoreEvent, ToolEvent
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, GenerateConfig, ModelOutput

    out: list[Any] = []
    calls: dict[str, Any] = {}
    stamp = record.started_at
    for i, message in enumerate(messages):
        if isinstance(message, ChatMessageAssistant):
            out.append(ModelEvent(model=key.model, role="executor", input=messages[:i], tools=[], tool_choice="auto",
                                  config=GenerateConfig(), output=ModelOutput.from_message(message),
                                  timestamp=stamp))
            calls.update({c.id: c for c in message.tool_calls or []})
        elif isinstance(message, ChatMessageTool):
            call = calls.get(message.tool_call_id or "")
            out.append(ToolEvent(id=message.tool_call_id or "", function=message.function or "",
                                 arguments=call.arguments if call else {}, result=message.text,
                                 timestamp=stamp))
    for score in (scores or {}).values():
        out.append(ScoreEvent(score=score, timestamp=record.finished_at))
    return out


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {"__unparsable_arguments__": raw}
    return value if isinstance(value, dict) else {"__unparsable_arguments__": raw}


def metadata(record: EpisodeRecord, key: ArmKey) -> dict[str, Any]:
    """What the runtime adds to an episode, as the sample's metadata."""
    critique = episode_view.critique(record)
    prompt, completion, cost = tokens_and_cost(record)
    return {
        "record_id": record.record_id, "arm": key.label, "mode": key.mode, "strategy": key.strategy,
        "saw_supervision": key.saw_supervision, "trial": record.key.trial, "seed": record.seed,
        "termination": record.termination, "turns": record.turns,
        "p0": record.p0, "critique": None if critique is None else {
            "grade": critique["grade"], "rationale": critique["rationale"], "note": critique["note"],
            **{f["code"]: f["on"] for f in critique["flags"]}},
        "guard": record.guard, "p1": record.p1,
        "judge_p0": episode_view.judgement(record.judge_p0), "judge_p1": episode_view.judgement(record.judge_p1),
        "provenance": record.provenance, "breakdown": record.breakdown,
        "tokens": {"prompt": prompt, "completion": completion, "total": prompt + completion},
        "cost_usd": cost, "usage_by_purpose": (record.usage or {}).get("by_purpose") or {},
    }


def sample(record: EpisodeRecord, key: ArmKey, numeric: bool = False) -> Any:
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ModelUsage
    from inspect_ai.scorer import Score

    prompt, completion, cost = tokens_and_cost(record)
    scores = None
    if record.status == "ok" and record.score is not None:
        scores = {SCORER: Score(value=record.score, answer=record.termination,
                                explanation=json.dumps(record.breakdown, ensure_ascii=False),
                                metadata={"score_name": record.score_name, "breakdown": record.breakdown})}
    error = None
    if record.error is not None:
        error = EvalError(message=f"{record.error.stage}: {record.error.type}: {record.error.message}",
                          traceback="", traceback_ansi="")
    messages = _messages(record)
    return EvalSample(
        id=int(record.key.task_id) if numeric else record.key.task_id, epoch=record.key.trial + 1,
        input=record.opening_request or "", target="", messages=messages, scores=scores,
        events=events(record, key, messages, scores), metadata=metadata(record, key), error=error,
        model_usage={key.model: ModelUsage(input_tokens=prompt, output_tokens=completion,
                                           total_tokens=prompt + completion, total_cost=cost)},
        started_at=record.started_at, completed_at=record.finished_at)


def eval_log(key: ArmKey, records: list[EpisodeRecord], folder: Folder) -> Any:
    from inspect_ai.log import (EvalConfig, EvalDataset, EvalLog, EvalMetric, EvalResults, EvalScore, EvalSpec,
                                EvalStats)
    from inspect_ai.model import ModelUsage

    numeric = all(r.key.task_id.isdigit() for r in records)
    samples = [sample(r, key, numeric) for r in records]
    scored = [r.score for r in records if r.status == "ok" and r.score is not None]
    started = min((r.started_at for r in records), default=_now())
    finished = max((r.finished_at for r in records), default=started)
    prompt = completion = 0
    cost = 0.0
    for r in records:
        p, c, d = tokens_and_cost(r)
        prompt, completion, cost = prompt + p, completion + c, cost + d
    task = f"{key.env}/{key.domain}/{key.label}"
    spec = EvalSpec(
        created=started, task=task, task_id=f"{key.file_stem()}", run_id=folder.path.name,
        dataset=EvalDataset(name=f"{key.env}/{key.domain}", samples=len({r.key.task_id for r in records})),
        model=key.model, config=EvalConfig(epochs=max(r.key.trial for r in records) + 1),
        solver=f"exec-validation-runtime {key.label}",
        metadata={"arm": key.label, "mode": key.mode, "strategy": key.strategy,
                  "saw_supervision": key.saw_supervision, "run_folder": folder.path.name})
    results = EvalResults(total_samples=len(samples), completed_samples=len(scored), scores=[
        EvalScore(name=SCORER, scorer=SCORER, scored_samples=len(scored), metrics={
            "mean": EvalMetric(name="mean", value=sum(scored) / len(scored) if scored else 0.0)})])
    stats = EvalStats(started_at=started, completed_at=finished, model_usage={key.model: ModelUsage(
        input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion, total_cost=cost)})
    return EvalLog(eval=spec, status="success", results=results, stats=stats, samples=samples)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def export(folder: Folder, out: Path, arms: Optional[Callable[[ArmKey], bool]] = None) -> Export:
    """One ``.eval`` log per arm of ``folder`` (those ``arms`` accepts) under ``out``."""
    from inspect_ai.log import write_eval_log

    done = Export(left_out=list(folder.left_out))
    Path(out).mkdir(parents=True, exist_ok=True)
    for key, records in folder.arms().items():
        if arms is not None and not arms(key):
            continue
        path = Path(out) / f"{key.file_stem()}.eval"
        tmp = path.with_name(f".{path.name}.tmp.eval")
        write_eval_log(eval_log(key, records, folder), str(tmp), format="eval")
        tmp.replace(path)  # whole or not at all, as every file the runtime writes
        done.written.append(path)
    return done
