"""The end-of-run summary: per mode, the mean of the benchmark's score, n, errors, tokens, cost."""

from __future__ import annotations

from typing import Any

import pandas as pd
from rich.console import Console
from rich.table import Table

from runtime.records import MODES, EpisodeRecord


def frame(records: list[EpisodeRecord]) -> pd.DataFrame:
    rows = []
    for r in records:
        total = r.usage.get("total", {})
        rows.append({
            "env": r.key.env, "domain": r.key.domain, "task_id": r.key.task_id, "mode": r.key.mode,
            "model": r.key.model, "trial": r.key.trial, "status": r.status, "score": r.score,
            "score_name": r.score_name, "cost_usd": total.get("cost_usd", 0.0),
            "tokens": total.get("prompt_tokens", 0) + total.get("completion_tokens", 0),
            "guard_fired": bool(r.guard and r.guard.get("fired")),
        })
    return pd.DataFrame(rows)


def summarize(records: list[EpisodeRecord]) -> dict[str, Any]:
    df = frame(records)
    by_mode: dict[str, Any] = {}
    if not df.empty:
        for mode in [m for m in MODES if m in set(df["mode"])]:
            part = df[df["mode"] == mode]
            ok = part[part["status"] == "ok"]
            by_mode[mode] = {
                "n": int(len(part)),
                "n_scored": int(len(ok)),
                "errors": int((part["status"] == "error").sum()),
                "mean_score": float(ok["score"].mean()) if len(ok) else None,
                "score_name": ok["score_name"].iloc[0] if len(ok) else None,
                "tokens": int(part["tokens"].sum()),
                "cost_usd": float(part["cost_usd"].sum()),
                "guard_fired": int(part["guard_fired"].sum()),
            }
    return {"n_records": int(len(df)), "by_mode": by_mode}


def print_summary(summary: dict[str, Any], console: Console, title: str) -> None:
    table = Table(title=title)
    for col in ("mode", "mean score", "n", "errors", "tokens", "cost (USD)", "guard fired"):
        table.add_column(col, justify="left" if col == "mode" else "right")
    for mode, row in summary["by_mode"].items():
        mean = "–" if row["mean_score"] is None else f"{row['mean_score']:.3f}"
        table.add_row(mode, mean, str(row["n"]), str(row["errors"]), str(row["tokens"]),
                      f"{row['cost_usd']:.4f}", str(row["guard_fired"]))
    console.print(table)
