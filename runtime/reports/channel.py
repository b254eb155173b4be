"""The sealed critique's channel, per arm: how many bits of what the critic knew could reach the
tested model at most (``max``), and how many the critic's answers used (``used``), in bits
(``critique.channel`` defines both), with who worded the rationale. With the rendered writer
(the default) and the guard measuring only, ``max`` is the end-to-end bound on what the
critic's knowledge can change in the reviser's input; the guard's figures on this arm are what
it *would* have flagged, never an edit.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from runtime.folder.records import EpisodeRecord
from runtime.reports.arm_table import arm_table
from runtime.reports.fit import Col, FitTable

COLUMNS = ("channel_max_bits", "channel_used_bits", "channel_findings", "channel_writer",
           "channel_max_findings", "channel_guard", "channel_replaced")

WRITER_MEANS = {
    "rendered": "the rationale is the closed answer rendered into words with no model, so max bits is "
                "the end-to-end bound on what the critic's knowledge can change in the reviser's input",
    "tested": "the tested model's own model wrote the rationale from the closed answer, p0 and the task "
              "view (no party beyond the reviser), so max bits still bounds what the critic's knowledge "
              "can change in the reviser's input",
    "critic": "the writer ran on the critic's model (folders made before the writer was sealed): it could "
              "share a code with the critic, so max bits bounds the closed answer only, not the text",
}
"""What the bound means under each writer the records name."""


def channel_columns(record: EpisodeRecord) -> dict[str, Any]:
    """One record's channel figures (``None`` where no sealed critique was made). A record made
    before the writer was recorded had its rationale written on the critic's model."""
    channel = record.channel or {}
    return {"channel_max_bits": channel.get("max_bits"), "channel_used_bits": channel.get("used_bits"),
            "channel_findings": len(channel["findings"]) if channel else None,
            "channel_writer": channel.get("writer", "critic") if channel else None,
            "channel_max_findings": channel.get("max_findings") if channel else None,
            "channel_guard": channel.get("guard", "redact") if channel else None,
            "channel_replaced": int(bool(channel.get("replaced"))) if channel else None}


def _names(part: pd.DataFrame, column: str) -> str:
    return ", ".join(sorted({str(v) for v in part[column].dropna()}))


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
        "channel_writer": _names(made, "channel_writer"),
        "channel_max_findings": int(made["channel_max_findings"].max()) if made["channel_max_findings"].notna().any() else None,
        "channel_guard": _names(made, "channel_guard"),
        "channel_replaced": int(made["channel_replaced"].sum()),
    }


def channel_table(by_arm: dict[str, Any], title: str) -> FitTable | None:
    """The CLI's channel table; ``None`` when no arm made a sealed critique."""
    def cells(row: dict[str, Any]) -> list[str] | None:
        if not row.get("channel_critiques"):
            return None
        return [str(row.get("channel_writer") or "–"), str(row["channel_critiques"]), f"{row['channel_max_bits_mean']:.2f}",
                f"{row['channel_max_bits_max']:.2f}", f"{row['channel_used_bits_mean']:.2f}",
                f"{row['channel_used_bits_max']:.2f}"]

    return arm_table(f"{title} — sealed channel capacity (bits per critique, end to end)",
                     [Col("writer", "wr.", left=True), Col("critiques", "crit."), Col("max bits mean", "max μ"),
                      Col("max bits max", "max"),
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
             "at most K findings: position × flag set × aspect; plus one bit where the guard may replace a "
             "model-written rationale); used is log2 of the valid answers with at most as many findings as the "
             "critic gave. The critic's own text never reaches the tested model; the leak guard and auditor "
             "only measured the sealed text (guard: measure) or could only replace it whole by the rendering "
             "(replace).", "",
             "| env | tested model | critique | writer | K | guard | critiques | max bits (mean) | max bits (max) "
             "| used bits (mean) | used bits (max) | findings (mean) | replaced |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    writers: set[str] = set()
    for (env, model, strategy), part in sealed.groupby(["env", "model", "strategy"], sort=True):
        f = channel_figures(part)
        if not f:  # every sealed critique of the arm failed: nothing went through the channel
            lines.append(f"| {env} | {model} | {strategy} | – | – | – | 0 | – | – | – | – | – | – |")
        else:
            writers |= set(f["channel_writer"].split(", "))
            lines.append(f"| {env} | {model} | {strategy or '–'} | {f['channel_writer']} | "
                         f"{f['channel_max_findings'] if f['channel_max_findings'] is not None else '–'} | "
                         f"{f['channel_guard']} | {f['channel_critiques']} | "
                         f"{f['channel_max_bits_mean']:.2f} | {f['channel_max_bits_max']:.2f} | "
                         f"{f['channel_used_bits_mean']:.2f} | {f['channel_used_bits_max']:.2f} | "
                         f"{f['channel_findings_mean']:.2f} | {f['channel_replaced']} |")
    lines += ["", *(f"Writer `{w}`: {WRITER_MEANS[w]}." for w in sorted(writers) if w in WRITER_MEANS)]
    return "\n".join(lines) + "\n"
