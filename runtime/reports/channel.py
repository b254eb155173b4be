"""The sealed critique's channel, per arm: how many bits of what the critic knew could reach the
tested model at most (``max``), and how many the critic's answers used (``used``), in bits
(``critique.channel`` defines both). Shown beside the leak guard's table: on the ``sealed`` arm
the channel's capacity is the bound, the guard's figures a second look at the writer's text.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from runtime.folder.records import EpisodeRecord
from runtime.reports.arm_table import arm_table
from runtime.reports.fit import Col, FitTable

COLUMNS = ("channel_max_bits", "channel_used_bits", "channel_findings")


def channel_columns(record: EpisodeRecord) -> dict[str, Any]:
    """One record's channel figures (``None`` where no sealed critique was made)."""
    channel = record.channel or {}
    return {"channel_max_bits": channel.get("max_bits"), "channel_used_bits": channel.get("used_bits"),
            "channel_findings": len(channel["findings"]) if channel else None}


def channel_figures(part: pd.DataFrame) -> dict[str, Any]:
    """One arm's channel figures for ``summary.json``: critiques through the channel, and the
    mean and maximum of max and used bits over them; empty when the arm has none."""
    if "channel_max_bits" not in part:
        return {}
    made = part.dropna(subset=["channel_max_bits"])
    if made.empty:
        return {}
    return {
        "channel_critiques": len(made),
        "channel_max_bits_mean": round(float(made["channel_max_bits"].mean()), 2),
        "channel_max_bits_max": round(float(made["channel_max_bits"].max()), 2),
        "channel_used_bits_mean": round(float(made["channel_used_bits"].mean()), 2),
        "channel_used_bits_max": round(float(made["channel_used_bits"].max()), 2),
        "channel_findings_mean": round(float(made["channel_findings"].mean()), 2),
    }


def channel_table(by_arm: dict[str, Any], title: str) -> FitTable | None:
    """The CLI's channel table; ``None`` when no arm made a sealed critique."""
    def cells(row: dict[str, Any]) -> list[str] | None:
        if not row.get("channel_critiques"):
            return None
        return [str(row["channel_critiques"]), f"{row['channel_max_bits_mean']:.2f}",
                f"{row['channel_max_bits_max']:.2f}", f"{row['channel_used_bits_mean']:.2f}",
                f"{row['channel_used_bits_max']:.2f}"]

    return arm_table(f"{title} — sealed channel capacity (bits per critique)",
                     [Col("critiques", "crit."), Col("max bits mean", "max μ"), Col("max bits max", "max"),
                      Col("used bits mean", "used μ"), Col("used bits max", "used max")], by_arm, cells)


def markdown_section(df: pd.DataFrame) -> str:
    """The report's channel section: per env × model × strategy, sealed critiques only."""
    if df.empty or "channel_max_bits" not in df:
        return ""
    sealed = df[(df["mode"] == "refine") & (df["strategy"] == "sealed") | df["channel_max_bits"].notna()]
    if sealed.empty:
        return ""
    lines = ["", "## Sealed channel capacity", "",
             "What the critic that sees the reference could pass on, in bits per critique: max is log2 of the "
             "number of valid closed answers for p0's length (grade and E1–E6 under the verdict rule, a set of "
             "at most 6 findings: position × flag set × aspect); used is log2 of the valid answers with at most "
             "as many findings as the critic gave. Nothing else the critic wrote reaches the tested model.", "",
             "| env | tested model | critique | critiques | max bits (mean) | max bits (max) | used bits (mean) "
             "| used bits (max) | findings (mean) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for (env, model, strategy), part in sealed.groupby(["env", "model", "strategy"], sort=True):
        f = channel_figures(part)
        if not f:  # every sealed critique of the arm failed: nothing went through the channel
            lines.append(f"| {env} | {model} | {strategy} | 0 | – | – | – | – | – |")
        else:
            lines.append(f"| {env} | {model} | {strategy or '–'} | {f['channel_critiques']} | "
                         f"{f['channel_max_bits_mean']:.2f} | {f['channel_max_bits_max']:.2f} | "
                         f"{f['channel_used_bits_mean']:.2f} | {f['channel_used_bits_max']:.2f} | "
                         f"{f['channel_findings_mean']:.2f} |")
    return "\n".join(lines) + "\n"
