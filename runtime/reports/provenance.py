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
from rich.table import Table

from runtime.records import EpisodeRecord

NOTE = ("Provenance audit: a supervision-only value (from the reference actions, expected outcomes or the "
        "user's hidden instructions, and not in the task view) that the agent used in a tool call or a message "
        "before it had observed it (in the view, a user message or an earlier tool result). It measures the "
        "effect of a leak no guard rule can see: an agent that uses a hidden value it never read was told it. "
        "Rate = episodes with an unexplained value / scored episodes that were audited.")


def provenance_columns(record: EpisodeRecord) -> dict[str, Any]:
    """One record's provenance figures (``audited`` 0 where there is no audit)."""
    audit = record.provenance
    if audit is None:
        return {"audited": 0, "unexplained": 0, "unexplained_distinct": 0}
    unexplained = audit.get("unexplained") or []
    return {"audited": int(record.status == "ok"), "unexplained": len(unexplained),
            "unexplained_distinct": len({u.get("canonical") for u in unexplained})}


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


def provenance_table(by_arm: dict[str, Any], title: str) -> Table | None:
    """The CLI's provenance table; ``None`` when no episode was audited."""
    if not any(row.get("provenance_audited") for row in by_arm.values()):
        return None
    table = Table(title=f"{title} — provenance audit (unexplained supervision-only values)")
    for col in ("arm", "audited", "unexplained values", "episodes affected", "rate"):
        table.add_column(col, justify="left" if col == "arm" else "right")
    for name, row in by_arm.items():
        if row.get("provenance_audited"):
            table.add_row(name, str(row["provenance_audited"]), str(row["provenance_unexplained"]),
                          str(row["provenance_affected"]), f"{row['provenance_rate']:.1%}")
    return table


def markdown_section(df: pd.DataFrame) -> str:
    """The report's provenance section: per env × model × arm."""
    if df.empty or "audited" not in df or not df["audited"].sum():
        return ""
    lines = ["", "## Provenance audit", "", NOTE, "",
             "| env | tested model | arm | audited | unexplained values | episodes affected | rate |",
             "|---|---|---|---|---|---|---|"]
    for (env, model, name), part in df.groupby(["env", "model", "arm"], sort=True):
        figures = provenance_figures(part)
        if not figures["provenance_audited"]:
            continue
        lines.append(f"| {env} | {model} | {name} | {figures['provenance_audited']} | "
                     f"{figures['provenance_unexplained']} | {figures['provenance_affected']} | "
                     f"{figures['provenance_rate']:.1%} |")
    return "\n".join(lines) + "\n"
