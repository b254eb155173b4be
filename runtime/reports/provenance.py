"""Provenance figures per arm: supervision-only values the agent used that it never observed.

Per arm (mode × critique strategy): unexplained values (each use counted), episodes with at least
one, and the rate (those episodes / scored episodes that were audited). The audit itself is
``critique.provenance``; records written before it existed have none and are left out of the
rate. Under an honest critic Refine's rate should not exceed Plan-first's beyond noise; a clearly
higher rate means the tested model acted on values only the supervision held.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from runtime.reports.fit import Col, FitTable

from runtime.reports.arm_table import arm_table

from runtime.folder.records import EpisodeRecord

NOTE = ("Provenance audit: a supervision-only value (from the reference actions, expected outcomes or the "
        "user's hidden instructions, and not in the task view) that the agent used in a tool call or a message "
        "before it had observed it (in the view, a user message or an earlier tool result). It measures the "
        "effect of a leak no guard rule can see: an agent that uses a hidden value it never read was told it. "
        "Rate = episodes with an unexplained value / scored episodes that were audited.")


BEYOND_NOTE = ("Beyond Plan-first = Refine episodes that used an unexplained value their Plan-first episode "
               "(same task and trial, same p0) did not / such pairs.")


def provenance_columns(record: EpisodeRecord) -> dict[str, Any]:
    """One record's provenance figures (``audited`` 0 where there is no audit)."""
    audit = record.provenance
    if audit is None:
        return {"audited": 0, "unexplained": 0, "unexplained_distinct": 0, "unexplained_keys": ()}
    unexplained = audit.get("unexplained") or []
    keys = tuple(sorted({str(u.get("canonical")) for u in unexplained}))
    return {"audited": int(record.status == "ok"), "unexplained": len(unexplained),
            "unexplained_distinct": len(keys), "unexplained_keys": keys}


PAIR = ["env", "domain", "task_id", "model", "trial"]


def beyond_plan_first(df: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per Refine arm, paired with Plan-first on the same task and trial: the unexplained values
    Refine used that its Plan-first episode did not (both share ``p0``, so what only Refine used
    came from the critique or from chance). Under an honest critic this is noise; a leaky one
    shows clearly."""
    if df.empty or "audited" not in df:
        return {}
    audited = df[df["audited"] == 1]
    base = {tuple(row[c] for c in PAIR): set(row["unexplained_keys"])
            for _, row in audited[audited["mode"] == "plan-first"].iterrows()}
    out: dict[str, dict[str, Any]] = {}
    for name, part in audited[audited["mode"] == "refine"].groupby("arm", sort=True):
        paired = new = affected = 0
        for _, row in part.iterrows():
            key = tuple(row[c] for c in PAIR)
            if key not in base:
                continue
            extra = set(row["unexplained_keys"]) - base[key]
            paired += 1
            new += len(extra)
            affected += bool(extra)
        if paired:
            out[name] = {"provenance_paired": paired, "provenance_beyond_plan_first": new,
                         "provenance_beyond_affected": affected,
                         "provenance_beyond_rate": affected / paired}
    return out


def provenance_figures(part: pd.DataFrame) -> dict[str, Any]:
    """Sums over one arm's rows of ``summary.frame``; the rate is ``None`` when nothing was audited."""
    if "audited" not in part:
        return {}
    audited = part[part["audited"] == 1]
    affected = int((audited["unexplained"] > 0).sum())
    return {
        "provenance_audited": int(len(audited)),
        "provenance_unexplained": int(audited["unexplained"].sum()),
        "provenance_affected": affected,
        "provenance_rate": affected / len(audited) if len(audited) else None,
    }


def provenance_table(by_arm: dict[str, Any], title: str) -> FitTable | None:
    """The CLI's provenance table; ``None`` when no episode was audited."""
    def cells(row: dict[str, Any]) -> list[str] | None:
        if not row.get("provenance_audited"):
            return None
        return [str(row["provenance_audited"]), str(row["provenance_unexplained"]),
                str(row["provenance_affected"]), f"{row['provenance_rate']:.1%}", _beyond(row)]

    return arm_table(f"{title} — provenance audit (unexplained supervision-only values)",
                     ["audited", Col("unexplained values", "unexpl."), Col("episodes affected", "affected"),
                      "rate", Col("beyond plan-first", "beyond PF")], by_arm, cells)


def _beyond(row: dict[str, Any]) -> str:
    if not row.get("provenance_paired"):
        return ""
    return f"{row['provenance_beyond_affected']}/{row['provenance_paired']} ({row['provenance_beyond_rate']:.1%})"


def markdown_section(df: pd.DataFrame) -> str:
    """The report's provenance section: per env × model × arm."""
    if df.empty or "audited" not in df or not df["audited"].sum():
        return ""
    lines = ["", "## Provenance audit", "", NOTE + " " + BEYOND_NOTE, "",
             "| env | tested model | arm | audited | unexplained values | episodes affected | rate | beyond Plan-first |",
             "|---|---|---|---|---|---|---|---|"]
    for (env, model), group in df.groupby(["env", "model"], sort=True):
        beyond = beyond_plan_first(group)
        for name, part in group.groupby("arm", sort=True):
            figures = provenance_figures(part)
            if not figures["provenance_audited"]:
                continue
            lines.append(f"| {env} | {model} | {name} | {figures['provenance_audited']} | "
                         f"{figures['provenance_unexplained']} | {figures['provenance_affected']} | "
                         f"{figures['provenance_rate']:.1%} | {_beyond(beyond.get(name, {}))} |")
    return "\n".join(lines) + "\n"
