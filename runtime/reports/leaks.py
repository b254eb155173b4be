"""Leak figures per arm: how often the anti-leak guard had to act, and what it left.

Per arm (mode × critique strategy): critiques made, critiques the guard fired on (rules or
auditor), retried (the critic rewrote it clean), redacted (still leaking after the retries),
and residual leaks — what the auditor still found in the redacted rationale. Kept apart from
the score summary so either can change without the other.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from runtime.reports.fit import Col, FitTable

from runtime.reports.arm_table import arm_table

from runtime.folder.records import EpisodeRecord

COLUMNS = ("critiques", "guard_fired", "retried", "redacted", "rule_findings", "auditor_findings", "residual")


def leak_columns(record: EpisodeRecord) -> dict[str, Any]:
    """One record's leak figures (zeros where no guarded critique was made)."""
    guard = record.guard or {}
    return {
        "critiques": int(record.critique is not None),
        "retried": int(guard.get("action") == "retried"),
        "redacted": int(guard.get("action") == "redacted"),
        "rule_findings": len(guard.get("rule_findings") or []),
        "auditor_findings": len(guard.get("auditor_findings") or []),
        "residual": len(guard.get("residual") or []),
    }


def leak_figures(part: pd.DataFrame) -> dict[str, int]:
    """Sums over one arm's rows of ``summary.frame`` (``guard_fired`` is summed there already)."""
    return {f"leak_{c}": int(part[c].sum()) for c in COLUMNS if c in part and c != "guard_fired"}


def leak_table(by_arm: dict[str, Any], title: str) -> FitTable | None:
    """The CLI's leak table; ``None`` when no arm made a critique."""
    def cells(row: dict[str, Any]) -> list[str] | None:
        if not row.get("leak_critiques"):
            return None
        return [str(row[k]) for k in ("leak_critiques", "guard_fired", "leak_retried", "leak_redacted", "leak_residual")]

    return arm_table(f"{title} — leak guard", [Col("critiques", "crit."), Col("guard fired", "fired"), "retried", "redacted",
                      Col("residual leaks", "residual")],
                     by_arm, cells)


def markdown_section(df: pd.DataFrame) -> str:
    """The report's leak section: per env × model × strategy, Refine records only."""
    if df.empty or "critiques" not in df or not df["critiques"].sum():
        return ""
    lines = ["", "## Leak guard", "",
             "Per Refine arm: critiques made, guard fired (rules or auditor), retried (rewritten clean), "
             "redacted (still leaking after the retries), residual leaks (auditor findings after redaction).", "",
             "| env | tested model | critique | critiques | guard fired | retried | redacted | residual leaks |",
             "|---|---|---|---|---|---|---|---|"]
    refine = df[df["mode"] == "refine"]
    for (env, model, strategy), part in refine.groupby(["env", "model", "strategy"], sort=True):
        lines.append(f"| {env} | {model} | {strategy or '–'} | {int(part['critiques'].sum())} | "
                     f"{int(part['guard_fired'].sum())} | {int(part['retried'].sum())} | "
                     f"{int(part['redacted'].sum())} | {int(part['residual'].sum())} |")
    return "\n".join(lines) + "\n"
