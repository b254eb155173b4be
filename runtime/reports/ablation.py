"""The ablation table: each critique strategy's Refine against Plan-first from the same p0, with
the plan judge's view of p0 → p1. ``leaky`` is the positive control, labelled an upper bound.

Several strategies against one Plan-first are several tests: each Δ's p-value (clustered t test)
is shown with Holm's adjustment over the strategies compared (``p Holm``), which keeps the chance
of any false "effect" among them at 5 %; each Δ also carries the size the run could detect."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from critique.strategies import STRATEGIES
from runtime.reports.stats import arm_errors, delta_lines
from runtime.stats.intervals import holm
from runtime.folder.store import write_text_atomic


def ablation_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per strategy, compared with Plan-first by ``delta_lines`` (the report's Δ, both
    lines: tasks complete in both arms, and errored episodes scored 0)."""
    ok = df[df["status"] == "ok"]
    base = ok[ok["mode"] == "plan-first"]
    base_all = df[df["mode"] == "plan-first"]
    rows = []
    for name, strategy in STRATEGIES.items():
        part = df[(df["mode"] == "refine") & (df["strategy"] == name)]
        if part.empty:
            continue
        scored = part[part["status"] == "ok"]
        row = {"strategy": strategy.label, "n": len(part), "errors": int((part["status"] == "error").sum()),
               "score": scored["score"].mean() if len(scored) else None,
               "plan_first": base["score"].mean() if len(base) else None}
        row["error_rate"] = arm_errors(part).rate
        lines = delta_lines(part, base_all)
        d, d0 = lines["complete"], lines["errors_as_0"]
        if d is not None:
            row.update(delta=d.mean, ci_low=d.low, ci_high=d.high, sign_p=d.sign_p, p=d.p,
                       mde=d.mde, verdict=d.verdict())
        if d0 is not None:
            row.update(delta_errors_as_0=d0.mean, ci_low_errors_as_0=d0.low, ci_high_errors_as_0=d0.high)
        for plan in ("p0", "p1"):
            row[f"judge_cr_{plan}"] = _mean(part[f"{plan}_correct"])
            row[f"judge_grade_{plan}"] = _mean(part[f"{plan}_grade"])
            for i in range(1, 7):
                row[f"E{i}_{plan}"] = _mean(part[f"{plan}_E{i}"])
        row.update(guard_fired=int(part["guard_fired"].sum()),
                   tokens_per_episode=float(part["tokens"].mean()),
                   cost_usd=float(part["cost_usd"].sum()))
        rows.append(row)
    tested = [r for r in rows if r.get("p") is not None and r["p"] == r["p"]]
    for r, adjusted in zip(tested, holm([r["p"] for r in tested])):
        r["p_holm"] = adjusted
    return pd.DataFrame(rows)


def _mean(series: pd.Series) -> float | None:
    values = series.dropna().astype(float)
    return float(values.mean()) if len(values) else None


def write_table(table: pd.DataFrame, out: Path, beside: str = "") -> None:
    """``ablation.md`` and ``ablation.csv``; ``beside``: a section after the notes (the
    anti-leak − sealed comparison, ``runtime.reports.free_text``)."""
    write_text_atomic(out / "ablation.csv", table.to_csv(index=False))
    lines = [
        "| strategy | n | errors | score | Δ vs plan-first [95% CI] | detectable | p | p Holm | sign p | "
        "Δ errors as 0 | judge CR p0 → p1 | judge grade p0 → p1 | E1–E6 rate p1 | guard fired | "
        "tokens/ep | cost (USD) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in table.iterrows():
        delta = "–" if pd.isna(r.get("delta")) else f"{r['delta']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
        sign = "–" if pd.isna(r.get("sign_p")) else f"{r['sign_p']:.3g}"
        delta0 = "–" if pd.isna(r.get("delta_errors_as_0")) else f"{r['delta_errors_as_0']:+.3f}"
        errs = f"{r['errors']} ({r['error_rate']:.0%})"
        errors = " ".join("–" if pd.isna(r[f"E{i}_p1"]) else f"{r[f'E{i}_p1']:.2f}" for i in range(1, 7))
        detectable = "–" if pd.isna(r.get("mde")) else f"±{r['mde']:.3f}"
        p = "–" if pd.isna(r.get("p")) else f"{r['p']:.3g}"
        p_holm = "–" if pd.isna(r.get("p_holm")) else f"{r['p_holm']:.3g}"
        lines.append(
            f"| {r['strategy']} | {r['n']} | {errs} | {_f(r['score'])} | {delta} | {detectable} | {p} | "
            f"{p_holm} | {sign} | {delta0} | "
            f"{_f(r['judge_cr_p0'], 2)} → {_f(r['judge_cr_p1'], 2)} | "
            f"{_f(r['judge_grade_p0'], 2)} → {_f(r['judge_grade_p1'], 2)} | {errors} | "
            f"{r['guard_fired']} | {r['tokens_per_episode']:.0f} | {r['cost_usd']:.4f} |"
        )
    lines.append("")
    for _, r in table.iterrows():
        if isinstance(r.get("verdict"), str):
            lines.append(f"- {r['strategy']}: {r['verdict']}")
    lines.append("")
    lines.append("Δ is on the tasks complete in both arms; \"Δ errors as 0\" scores errored episodes 0. "
                 "95% intervals clustered by task; detectable: the Δ this run finds with 80% power at its "
                 "own variance; p Holm: Holm's correction over the strategies compared with Plan-first.")
    lines.append("`leaky` lets the critic reveal the reference: it is an upper bound, not a method.")
    if "sealed" in set(table.get("strategy", [])):
        lines.append("`sealed`: the critic that sees the reference answers only in enums and bounded "
                     "integers; the reviser reads that answer in words (rendered with no model by default).")
    write_text_atomic(out / "ablation.md", "\n".join(lines) + "\n" + beside)


def _f(value, digits: int = 3) -> str:
    return "–" if value is None or pd.isna(value) else f"{value:.{digits}f}"
