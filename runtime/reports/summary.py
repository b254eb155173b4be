"""The end-of-run summary: per mode (and critique strategy), the mean of the benchmark's score,
n, errors (rate, and how many were infrastructure's), plan-judge correctness p0 → p1, guard
firings, tokens and cost; the judge's and the critic's answers settled by the verdict rule
(``judge_notes``, ``critic_notes``: a grade that contradicted its flags); warnings when errors could bias the comparison; and the leak figures
(critiques, guard fired, retried, redacted, residual leaks: ``runtime.reports.leaks``) with the
sealed critique's channel capacity in bits (``runtime.reports.channel``); the
provenance audit (unexplained values, episodes affected, rate: ``runtime.reports.provenance``);
``deltas``: every arm against Plan-first with its clustered interval, detectable size, verdict,
variance components and Holm-adjusted p-values (``runtime.reports.deltas``);
episodes with malformed model output; and ``flagged``: scored episodes whose score rests on an
answer that failed validation (``--retry-errors`` runs them again)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from rich.console import Console
from rich.markup import escape

from critique.judge import JudgeResult, read_judgement
from critique.strategies import DEFAULT_STRATEGY, STRATEGIES
from evrcore.critique import Critique
from runtime.reports import categories
from runtime.reports.fit import Col, FitTable
from runtime.reports.stats import arm_errors, error_warnings
from runtime.reports.channel import channel_columns, channel_figures, channel_table
from runtime.reports.leaks import leak_columns, leak_figures, leak_table
from runtime.reports.provenance import beyond_plan_first, provenance_columns, provenance_figures, provenance_table
from runtime.folder.records import BAD_ANSWER, RECORD_MODES, EpisodeRecord, in_flight_words, lost_attempts, lost_spend


def arm(mode: str, strategy: str) -> str:
    """The row label of a (mode, strategy) pair: ``refine`` is the default strategy."""
    if mode != "refine" or not strategy or strategy == DEFAULT_STRATEGY:
        return mode
    return f"refine:{STRATEGIES[strategy].label}" if strategy in STRATEGIES else f"refine:{strategy}"


def judged(stored: dict | None) -> JudgeResult | None:
    """A record's stored judge result, either flag shape, settled by the verdict rule."""
    result = read_judgement(stored)
    return result if result is not None and result.judgement is not None else None


def _verdict_columns(r: EpisodeRecord) -> dict[str, Any]:
    row: dict[str, Any] = {}
    notes = judgements = 0
    for plan in ("p0", "p1"):
        result = judged(getattr(r, f"judge_{plan}"))
        j = result.judgement if result else None
        row[f"{plan}_correct"] = j.is_correct if j else None
        row[f"{plan}_grade"] = j.grade if j else None
        for i, flag in enumerate(j.error_list() if j else [None] * 6):
            row[f"{plan}_E{i + 1}"] = flag
        notes += bool(result and result.note)
        judgements += result is not None
    row["judgements"] = judgements
    row["judge_notes"] = notes
    row["critic_notes"] = int(bool(r.critique_note) or _critique_contradicts(r.critique))
    return row


def _critique_contradicts(stored: dict | None) -> bool:
    """A critique stored before the rule was enforced whose grade contradicts its flags."""
    if not stored or "errors" not in stored:
        return False
    try:
        return Critique.model_validate(stored).contradiction() is not None
    except ValueError:
        return False


def frame(records: list[EpisodeRecord]) -> pd.DataFrame:
    rows = []
    for r in records:
        total = r.usage.get("total", {})
        row = {
            "env": r.key.env, "domain": r.key.domain, "task_id": r.key.task_id, "mode": r.key.mode,
            "strategy": r.key.strategy, "arm": arm(r.key.mode, r.key.strategy),
            "model": r.key.model, "trial": r.key.trial, "status": r.status, "score": r.score,
            "error_kind": r.error.kind if r.error else None,
            "error_cause": r.error.cause if r.error else None, "error_stage": r.error.stage if r.error else None,
            "score_name": r.score_name, "turns": r.turns,
            "cost_usd": total.get("cost_usd", 0.0) + lost_spend(r)[1],  # lost attempts were paid
            "limited": bool(r.termination and r.termination.startswith("limit:")),
            "tokens": total.get("prompt_tokens", 0) + total.get("completion_tokens", 0),
            "guard_fired": bool(r.guard and r.guard.get("fired")),
            **leak_columns(r),
            **channel_columns(r),
            **provenance_columns(r),
            "fingerprint": r.fingerprint or "unrecorded",
            "malformed": bool(r.flags),
            "flagged": r.status == "ok" and bool(set(r.flags) & set(BAD_ANSWER)),
            **_verdict_columns(r),
        }
        rows.append(row)
    return pd.DataFrame(rows)


def _mean(series: pd.Series) -> float | None:
    values = series.dropna().astype(float)
    return float(values.mean()) if len(values) else None


def summarize(records: list[EpisodeRecord]) -> dict[str, Any]:
    df = frame(records)
    by_arm: dict[str, Any] = {}
    if not df.empty:
        order = sorted(set(df["arm"]), key=lambda a: (RECORD_MODES.index(a.split(":")[0]), a))
        for name in order:
            part = df[df["arm"] == name]
            ok = part[part["status"] == "ok"]
            by_arm[name] = {
                "n": int(len(part)),
                "n_scored": int(len(ok)),
                "errors": int((part["status"] == "error").sum()),
                "limited": int((part["limited"] & (part["status"] == "ok")).sum()),
                "mean_score": _mean(ok["score"]),
                "score_name": ok["score_name"].iloc[0] if len(ok) else None,
                "mean_turns": _mean(ok["turns"]),
                "judge_p0_correct": _mean(part["p0_correct"]),
                "judge_p1_correct": _mean(part["p1_correct"]),
                "judge_p0_grade": _mean(part["p0_grade"]),
                "judge_p1_grade": _mean(part["p1_grade"]),
                "tokens": int(part["tokens"].sum()),
                "cost_usd": float(part["cost_usd"].sum()),
                "guard_fired": int(part["guard_fired"].sum()),
                "judge_notes": int(part["judge_notes"].sum()),
                "critic_notes": int(part["critic_notes"].sum()),
                **_error_fields(part),
                **leak_figures(part),
                **channel_figures(part),
                **provenance_figures(part),
                "malformed_output": int(part["malformed"].sum()),
                "flagged": int(part["flagged"].sum()),
            }
    for name, figures in beyond_plan_first(df).items():
        by_arm[name].update(figures)
    result: dict[str, Any] = {"n_records": int(len(df)), "by_arm": by_arm}
    if rerun := re_runs(records):
        result["re_run"] = rerun
    if not df.empty:
        result["error_warnings"] = error_warnings({name: arm_errors(df[df["arm"] == name]) for name in by_arm})
    if not df.empty:
        result["fingerprints"] = {str(k): int(v) for k, v in df["fingerprint"].value_counts().items()}
        if df.groupby(["env", "domain"])["fingerprint"].nunique().max() > 1:  # domains' task sets differ by design
            result["settings_warning"] = mixed_settings(result["fingerprints"])
    if not df.empty:
        from runtime.reports.deltas import comparisons

        # per environment: Δ pairs tasks, and a task of one benchmark never pairs with another's
        result["deltas"] = [{"env": env, **row} for env, part in df.groupby("env", sort=True)
                            for row in comparisons(part)]
    by_cat = categories.by_category(records, group=lambda r: arm(r.key.mode, r.key.strategy))
    if by_cat:  # ToolSandbox: per-category similarity and turns, aggregated as ToolSandbox does
        result["by_category"] = by_cat
    return result


def mixed_settings(counts: dict[str, int]) -> str:
    """The warning for a folder whose records were made with more than one set of settings."""
    listed = ", ".join(f"{fp}: {n}" for fp, n in counts.items())
    return (f"records made with {len(counts)} different settings (fingerprint: records — {listed}); "
            "run.json lists each fingerprint's settings; compare arms within one fingerprint")


def _error_fields(part: pd.DataFrame) -> dict[str, Any]:
    """An arm's errors: the rate over its episodes, and how many were infrastructure failures
    (model endpoint, env server, container) rather than the agent's."""
    errors = arm_errors(part)
    return {"error_rate": errors.rate, "infrastructure_errors": errors.infrastructure,
            "error_causes": dict(errors.causes)}


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


SUMMARY_COLUMNS = [
    Col("arm", left=True), Col("mean score", "score"), Col("n"), Col("errors", "err"),
    Col("error rate", "err%"), Col("infra errors", "infra"),
    Col("ended at a limit", "limit"), Col("judge CR p0 → p1", "CR p0→p1"),
    Col("guard fired", "guard"), Col("tokens"), Col("cost (USD)", "USD"),
]
"""The summary's columns; "ended at a limit": episodes stopped by --episode-max-tokens,
-cost or -timeout (scored unfinished, not errors)."""


def summary_table(summary: dict[str, Any], title: str) -> FitTable:
    rows = []
    for mode, row in summary["by_arm"].items():
        judge = "–"
        if row["judge_p0_correct"] is not None:
            judge = _fmt(row["judge_p0_correct"], 2)
            if row["judge_p1_correct"] is not None:
                judge += f" → {_fmt(row['judge_p1_correct'], 2)}"
        rows.append([mode, _fmt(row["mean_score"]), str(row["n"]), str(row["errors"]),
                     f"{row.get('error_rate', 0.0):.1%}", str(row.get("infrastructure_errors", 0)),
                     str(row.get("limited", 0)), judge, str(row["guard_fired"]), str(row["tokens"]),
                     f"{row['cost_usd']:.4f}"])
    return FitTable(title, SUMMARY_COLUMNS, rows, turnable=True)  # at 80 columns: arms across


def re_runs(records: list[EpisodeRecord]) -> dict[str, Any] | None:
    """What the episodes run again after a lost Ray worker or node spent on their lost attempts
    (``runtime.folder.records.Attempt``); None when none was."""
    again = [r for r in records if lost_attempts(r)]
    if not again:
        return None
    lost = [a for r in again for a in lost_attempts(r)]
    return {"episodes": len(again), "lost_attempts": len(lost),
            "calls": sum(a.calls for a in lost), "in_flight_calls": sum(a.in_flight_calls for a in lost),
            "in_flight_cost_usd": sum(a.in_flight_cost_usd for a in lost),
            "tokens": sum(a.prompt_tokens + a.completion_tokens for a in lost),
            "cost_usd": sum(a.cost_usd for a in lost), "at_least": any(a.at_least for a in lost)}


def re_run_line(rerun: dict[str, Any] | None) -> str | None:
    """``1 episode re-run after a lost worker: +7 calls (1 in flight when lost, ≈$0.0003 by their
    requests), +$0.0012`` (``runtime.folder.records.in_flight_words``)."""
    if not rerun:
        return None
    n = rerun["episodes"]
    flight = in_flight_words(rerun["in_flight_calls"], rerun.get("in_flight_cost_usd", 0.0))
    tries = f" ({rerun['lost_attempts']} lost attempts)" if rerun["lost_attempts"] > n else ""
    return (f"{n} episode{'s' if n != 1 else ''} re-run after a lost Ray worker or node{tries}: "
            f"+{'at least ' if rerun.get('at_least') else ''}{rerun['calls'] + rerun['in_flight_calls']} "
            f"calls{flight}, +{rerun['tokens']} tokens, "
            f"+${rerun['cost_usd']:.4f}, counted in the cost above")


def print_summary(summary: dict[str, Any], console: Console, title: str) -> None:
    console.print(summary_table(summary, title))
    if line := re_run_line(summary.get("re_run")):
        console.print(escape(line))
    warnings = summary.get("error_warnings", []) + ([summary["settings_warning"]]
                                                    if summary.get("settings_warning") else [])
    for warning in warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    for name, row in summary["by_arm"].items():
        if row.get("flagged"):
            console.print(f"[yellow]warning:[/] {escape(name)}: {row['flagged']} scored episode(s) "
                          "rest on an answer that failed validation (unparsable tool call, empty "
                          "message); --retry-errors runs them again")
    for row in summary.get("deltas", []):
        held = f"; {row['correction']}-adjusted p {row['p_holm']:.3g}" if "p_holm" in row else ""
        console.print(escape(f"{row['env']} · {row['treatment']} − {row['control']}: {row['verdict']}{held}"),
                      soft_wrap=True)
    if (leaks := leak_table(summary["by_arm"], title)) is not None:
        console.print(leaks)
    if (channel := channel_table(summary["by_arm"], title)) is not None:
        console.print(channel)
    if (provenance := provenance_table(summary["by_arm"], title)) is not None:
        console.print(provenance)
    if summary.get("by_category"):
        console.print(categories.category_table(summary["by_category"], title=f"{title} — per category"))
