"""How much of Refine's gain needs the critic's free text: Refine(anti-leak) − Refine(sealed).

Both arms revise the same p0 that Plan-first executes, so their difference isolates what the
free-text rationale carries beyond the sealed channel (grade, E1–E6 and findings that point into
p0, written up by a model that never saw the supervision). A gain that survives sealing came
through the diagnosis; a gain that disappears needed the free text. The difference is paired
over tasks with the interval, detectable size and p-value every Δ of the report has
(``runtime.reports.stats.task_delta``), and read in one sentence from its interval.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import pandas as pd

from runtime.reports.stats import PairedDelta, task_delta

TREATMENT, CONTROL = "anti-leak", "sealed"
"""Refine under the free-text strategy minus Refine under the sealed one."""

TITLE = "Refine(anti-leak) − Refine(sealed): how much of the gain needs free text"


def reading(d: PairedDelta, *, digits: int = 3, scale: float = 1.0) -> str:
    """What the difference says, worded from its interval against the size the run detects."""
    def f(x: float, signed: bool = True) -> str:
        return f"{x * scale:+.{digits}f}" if signed else f"{x * scale:.{digits}f}"

    if not math.isfinite(d.mde):
        return "too few tasks to tell whether the free text matters"
    shown = f"{f(d.mean)} [{f(d.low)}, {f(d.high)}]"
    if d.low > 0:
        return (f"{shown} excludes 0: the free text carried part of Refine's gain (what sealed "
                "keeps came through the diagnosis)")
    if d.high < 0:
        return (f"{shown} excludes 0: sealed scores higher; the gain did not need the free text")
    if -d.mde <= d.low and d.high <= d.mde:
        return (f"{shown} lies inside ±{f(d.mde, False)}: no evidence that the free text matters "
                "at this size; the gain that survives sealing came through the diagnosis")
    return (f"{shown} covers 0 but reaches past ±{f(d.mde, False)}: inconclusive; this run can "
            "tell neither that the free text matters nor that it does not")


def free_text_rows(cells: Iterable[tuple[str, str, Any, pd.DataFrame]],
                   published: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per report cell (``runtime.reports.report.cells``: env, tested model, domain, its
    episodes) that ran Refine under both strategies."""
    published = published or {}
    out = []
    for env, model, domain, cell in cells:
        refine = cell[cell["mode"] == "refine"]
        free, sealed = refine[refine["strategy"] == TREATMENT], refine[refine["strategy"] == CONTROL]
        if free.empty or sealed.empty:
            continue
        d = task_delta(free, sealed)
        scale = (published.get(env) or {}).get("scale", 1.0)
        row: dict[str, Any] = {"env": env if domain is None else f"{env}/{domain}", "model": model,
                               "scale": scale, "anti_leak_mean": _mean(free), "sealed_mean": _mean(sealed)}
        if d is not None:
            row.update(delta=d.mean, low=d.low, high=d.high, mde=d.mde, p=d.p, tasks=d.n,
                       reading=reading(d, digits=1 if scale != 1.0 else 3, scale=scale))
        out.append(row)
    return out


def _mean(part: pd.DataFrame) -> float | None:
    ok = part[part["status"] == "ok"]
    per_task = ok.groupby(["domain", "task_id"])["score"].mean()
    return float(per_task.mean()) if len(per_task) else None


def markdown_section(rows: list[dict[str, Any]]) -> str:
    """The report's section; empty when no cell ran both arms."""
    if not rows:
        return ""
    intro = ("Both arms revise the same p0. `sealed`'s critic, which sees the supervision, answers "
             "only in enums and bounded integers; the reviser reads that answer in words (rendered "
             "with no model unless the channel section names another writer). A gain that survives sealing came through the diagnosis; a gain that "
             "disappears needed the free text. Paired over tasks, 95% CI clustered by task, "
             "detectable: the Δ this run finds with 80% power at its own variance; p: the "
             "clustered t test's.")
    header = ("| env | tested model | tasks | Refine (anti-leak) | Refine (sealed) | "
              "Δ anti-leak − sealed [95% CI] | detectable | p |")
    lines = ["", f"## {TITLE}", "", intro, "", header, "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["scale"]
        digits = 1 if s != 1.0 else 3
        if r.get("delta") is None:
            cells = ["–"] * 4
        else:
            interval = (f"{_f(r['delta'], digits, s, True)} [{_f(r['low'], digits, s, True)}, "
                        f"{_f(r['high'], digits, s, True)}]")
            cells = [str(r["tasks"]), interval,
                     "none (1 task)" if math.isinf(r["mde"]) else f"±{r['mde'] * s:.{digits}f}",
                     _f(r["p"], 3)]
        lines.append(f"| {r['env']} | {r['model']} | {cells[0]} | {_f(r['anti_leak_mean'], digits, s)} | "
                     f"{_f(r['sealed_mean'], digits, s)} | {cells[1]} | {cells[2]} | {cells[3]} |")
    lines.append("")
    for r in rows:
        lines.append(f"- {r['env']} · {r['model']}: {r.get('reading') or 'no task complete in both arms'}")
    return "\n".join(lines) + "\n"


def _f(value: Any, digits: int, scale: float = 1.0, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value * scale:+.{digits}f}" if signed else f"{value * scale:.{digits}f}"


def section_for(df: pd.DataFrame) -> str:
    """The section for a folder's frame, one row per environment × tested model × domain (an
    ablation's folder; the Table 3 report uses its own cells)."""
    if df.empty:
        return ""
    groups = ((env, model, domain, part) for (env, model, domain), part in
              df.groupby(["env", "model", "domain"], sort=True))
    return markdown_section(free_text_rows(groups))
