"""The report's two plots, for a first look at a run.

``modes.png``: each arm's mean score with its 95% interval (t over tasks, trials averaged
within a task), on the score's own scale (0–1; ToolSandbox's similarity 0–100), so an all-zero
run reads as scores at 0 rather than an empty chart; each point is labelled with its value.
``delta.png``: Δ = Refine − Plan-first with its 95% interval, over the band of the Δ the run
could detect (80% power at its own variance): a Δ inside the band is one this run cannot tell
from none.

Each plot is rendered in memory and written through the run folder's one atomic write
(``runtime.folder.store.write_text_atomic``): whole or not at all, and a full disk is the same
``WriteFailed`` (one line, exit 5) as for every other file the report writes.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from runtime.folder.store import write_text_atomic  # noqa: E402

ARMS = ("direct", "plan-first", "refine")
COLOURS = {"direct": "#4c72b0", "plan-first": "#dd8452", "refine": "#55a868"}


def save_figure(fig, path: Path) -> None:
    """``fig`` as ``path``'s format, written whole or not at all (``WriteFailed`` if not)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=120, format=path.suffix.lstrip("."), bbox_inches="tight")  # the legend sits outside the axes
    write_text_atomic(path, buffer.getvalue())


def _finite(value: Any) -> bool:
    return value is not None and bool(np.isfinite(value))


def _label(r: dict[str, Any]) -> str:
    strategy = f"\n{r['strategy']}" if r.get("strategy") else ""
    return f"{r['env']}\n{r['model']}{strategy}"


def shared_scale(rows: list[dict[str, Any]]) -> float:
    """The rows' display scale (ToolSandbox's ×100) when they share one, else 1: one axis."""
    scales = {r.get("scale", 1.0) for r in rows}
    return scales.pop() if len(scales) == 1 else 1.0


def modes_figure(table: list[dict[str, Any]]):
    """Each row's arms as points with their intervals, on the 0–scale axis."""
    s = top = shared_scale(table)
    fig, ax = plt.subplots(figsize=(max(4.5, 2.4 * len(table)), 3.4))
    offsets = {arm: (i - 1) * 0.22 for i, arm in enumerate(ARMS)}
    shown = set()
    for x, r in enumerate(table):
        for arm in ARMS:
            mean = r.get(f"{arm}_mean")
            if mean is None:
                continue
            low, high = r.get(f"{arm}_low"), r.get(f"{arm}_high")
            err = None
            if _finite(low) and _finite(high):
                lo, hi = max(low, 0.0), min(high, 1.0)  # a score's interval within its range
                # never a negative bar: a bound rounded a hair past its mean draws as zero-long
                err = [[max(mean - lo, 0.0) * s], [max(hi - mean, 0.0) * s]]
            ax.errorbar(x + offsets[arm], mean * s, yerr=err, fmt="o", capsize=4, ms=6,
                        color=COLOURS[arm], clip_on=False, zorder=3,
                        label=arm if arm not in shown else None)
            shown.add(arm)
            digits = 1 if s != 1.0 else 2
            ax.annotate(f"{mean * s:.{digits}f}", (x + offsets[arm], mean * s),
                        textcoords="offset points", xytext=(6, 4 if mean * s < 0.9 * top else -10),
                        ha="left", fontsize=7, color=COLOURS[arm])
    ax.set_ylim(0, top)
    ax.set_xlim(-0.6, len(table) - 0.4)
    ax.set_xticks(range(len(table)), [_label(r) for r in table], fontsize=7)
    ax.set_ylabel("mean score" + (" (×100)" if top != 1.0 else ""))
    ax.grid(axis="y", lw=0.4, alpha=0.5)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.set_title("Mean score by mode (95% interval over tasks)", fontsize=9)
    fig.tight_layout()
    return fig


def delta_figure(rows: list[dict[str, Any]]):
    """Each row's Δ with its interval, over its detectable band (±detectable Δ, shaded)."""
    fig, ax = plt.subplots(figsize=(7, 1.1 + 0.7 * len(rows)))
    reach = 0.0
    s = shared_scale(rows)
    for i, r in enumerate(rows):
        mde = r.get("delta_mde")
        if _finite(mde):
            ax.add_patch(plt.Rectangle((-mde * s, i - 0.3), 2 * mde * s, 0.6, color="grey",
                                       alpha=0.18, lw=0, label="detectable ±" if i == 0 else None))
            reach = max(reach, mde * s)
        reach = max(reach, 0.1 * s)
        if not _finite(r["delta"]):  # no Δ to draw (no complete pair): the row stays, empty
            continue
        d = r["delta"] * s
        digits = 1 if s != 1.0 else 3
        band = f"; detectable ±{mde * s:.{digits}f}" if _finite(mde) else ""
        if _finite(r.get("delta_low")) and _finite(r.get("delta_high")):  # one task has no interval
            low, high = r["delta_low"] * s, r["delta_high"] * s
            err, said = [[d - low], [high - d]], f"{d:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"
            reach = max(reach, abs(low), abs(high))
        else:
            err, said = None, f"{d:+.{digits}f} (no interval)"
            reach = max(reach, abs(d))
        ax.errorbar(d, i, xerr=err, fmt="o", capsize=4, color="#55a868",
                    label="Δ [95% CI]" if i == 0 else None, zorder=3)
        ax.annotate(f"{said}{band}", (d, i), textcoords="offset points", xytext=(0, 13),
                    ha="center", fontsize=7)
    reach *= 1.15
    ax.set_xlim(-reach, reach)
    ax.set_ylim(-0.6, len(rows) - 0.1)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(range(len(rows)), [_label(r).replace("\n", " · ") for r in rows], fontsize=7)
    ax.set_xlabel("Refine − Plan-first (95% CI); shaded: the Δ this run could detect", fontsize=8)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def plots(table: list[dict[str, Any]], out: Path) -> list[Path]:
    """Write ``modes.png`` and, when a row has a Δ, ``delta.png`` into ``out``."""
    written = []
    if not table:
        return written
    figures = [("modes.png", modes_figure(table))]
    with_delta = [r for r in table if r.get("delta") is not None]
    if with_delta:
        figures.append(("delta.png", delta_figure(with_delta)))
    try:
        for name, fig in figures:
            save_figure(fig, out / name)
            written.append(out / name)
    finally:
        for _, fig in figures:
            plt.close(fig)
    return written
