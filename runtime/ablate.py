"""``python -m runtime.ablate``: execute every critique strategy from the same p0 and compare.

    python -m runtime.ablate --env tau2 --strategies all --model <m> --critic-model <c>

Runs Plan-first once and Refine once per strategy on the same tasks, trials, opening requests
and p0, then writes ``ablation.md`` and ``ablation.csv`` into the run folder: per strategy, the
execution score with a paired 95% CI of its difference to Plan-first, the plan judge's
correctness and grade p0 → p1, E1–E6 rates p0 → p1, guard firings, tokens and cost.
``leaky`` is the positive control and is labelled an upper bound wherever it appears.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

import pandas as pd
from rich.console import Console

from critique.strategies import STRATEGIES
from runtime import config as cfg
from runtime import validate
from runtime.config import UsageError
from runtime.stats import paired_delta
from runtime.summary import frame


def parser():
    p = validate.parser()
    p.prog = "python -m runtime.ablate"
    p.description = ("Execute every critique strategy from the same p0 and compare them with "
                     "Plan-first. Strategies: " + ", ".join(s.label for s in STRATEGIES.values()))
    p.add_argument("--strategies", default="all",
                   help="comma-separated strategy names, or all (default)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    console = Console()
    args = parser().parse_args(argv)
    try:
        strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
        values = {k: v for k, v in vars(args).items() if k not in ("config", "strategies")}
        values["mode"] = "refine"
        file_values = cfg.load_yaml(args.config) if args.config else {}
        config = cfg.build(file_values, values, source=str(args.config) if args.config else "option")
        if config.run_id is None and config.out is None:
            config = config.model_copy(update={"run_id": "ablate-" + validate._default_run_id(
                config, config.domain or "airline", config.model or cfg.EMBEDDED_MODEL)})
        plan, out, specs, embedded = validate.build_plan(
            config, console, modes=["plan-first", "refine"],
            strategies=["all"] if strategies == ["all"] else strategies)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        validate.run_with_progress(plan, console)
    except KeyboardInterrupt:
        print("interrupted: finished records are saved; run the same command again to resume",
              file=sys.stderr)
        return 130
    records = validate.finished_records(plan)
    validate.report(plan, records, out, specs, embedded, console, config)
    table = ablation_table(frame(records))
    write_table(table, Path(out))
    console.print(f"ablation table: {Path(out) / 'ablation.md'}")
    return 0


def ablation_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per strategy, compared with Plan-first on the same (task, trial) units."""
    ok = df[df["status"] == "ok"]
    base = ok[ok["mode"] == "plan-first"].set_index(["task_id", "trial"])["score"]
    rows = []
    for name, strategy in STRATEGIES.items():
        part = df[(df["mode"] == "refine") & (df["strategy"] == name)]
        if part.empty:
            continue
        scored = part[part["status"] == "ok"].set_index(["task_id", "trial"])["score"]
        units = scored.index.intersection(base.index)
        row = {"strategy": strategy.label, "n": len(part), "errors": int((part["status"] == "error").sum()),
               "score": scored.mean() if len(scored) else None,
               "plan_first": base.loc[units].mean() if len(units) else None}
        if len(units):
            d = paired_delta(scored.loc[units].to_numpy(), base.loc[units].to_numpy())
            row.update(delta=d.mean, ci_low=d.low, ci_high=d.high, sign_p=d.sign_p)
        for plan in ("p0", "p1"):
            row[f"judge_cr_{plan}"] = _mean(part[f"{plan}_correct"])
            row[f"judge_grade_{plan}"] = _mean(part[f"{plan}_grade"])
            for i in range(1, 7):
                row[f"E{i}_{plan}"] = _mean(part[f"{plan}_E{i}"])
        row.update(guard_fired=int(part["guard_fired"].sum()),
                   tokens_per_episode=float(part["tokens"].mean()),
                   cost_usd=float(part["cost_usd"].sum()))
        rows.append(row)
    return pd.DataFrame(rows)


def _mean(series: pd.Series) -> float | None:
    values = series.dropna().astype(float)
    return float(values.mean()) if len(values) else None


def write_table(table: pd.DataFrame, out: Path) -> None:
    table.to_csv(out / "ablation.csv", index=False)
    lines = [
        "| strategy | n | score | Δ vs plan-first [95% CI] | sign p | judge CR p0 → p1 | "
        "judge grade p0 → p1 | E1–E6 rate p1 | guard fired | tokens/ep | cost (USD) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in table.iterrows():
        delta = "–" if pd.isna(r.get("delta")) else f"{r['delta']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
        sign = "–" if pd.isna(r.get("sign_p")) else f"{r['sign_p']:.3g}"
        errors = " ".join("–" if pd.isna(r[f"E{i}_p1"]) else f"{r[f'E{i}_p1']:.2f}" for i in range(1, 7))
        lines.append(
            f"| {r['strategy']} | {r['n']} | {_f(r['score'])} | {delta} | {sign} | "
            f"{_f(r['judge_cr_p0'], 2)} → {_f(r['judge_cr_p1'], 2)} | "
            f"{_f(r['judge_grade_p0'], 2)} → {_f(r['judge_grade_p1'], 2)} | {errors} | "
            f"{r['guard_fired']} | {r['tokens_per_episode']:.0f} | {r['cost_usd']:.4f} |"
        )
    lines.append("")
    lines.append("`leaky` lets the critic reveal the reference: it is an upper bound, not a method.")
    (out / "ablation.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _f(value, digits: int = 3) -> str:
    return "–" if value is None or pd.isna(value) else f"{value:.{digits}f}"


if __name__ == "__main__":
    sys.exit(main())
