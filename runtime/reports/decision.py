"""``--until-decided``'s decision, and the anytime-valid interval of a folder read more than once,
recomputed from the records alone (so a killed run resumes the same sequence, and the report of
any folder shows what its records decide).

The planned comparisons are those a dry run sizes: every Refine arm − Plan-first and Plan-first
− Direct, on the modes present (the A/A arm is the noise check, not a hypothesis). Each gets the
confidence sequence of ``runtime.stats.sequential`` over its complete pairs (treatment and
control episode of one task and trial, both scored), tasks the cluster, read after every
*complete wave* (trial k of every task in both arms recorded); with several comparisons α is
split between them (Bonferroni: every decision holds at once with probability ≥ 1 − α).

A comparison decides **effect** when its sequence excludes 0, **no effect of interest** when it
lies inside ±margin; the run stops when every planned comparison has decided, at
``--max-trials``, or at ``--max-cost``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from runtime.folder.records import AA_MODE

ALPHA = 0.05
DEFAULT_MARGIN = 0.03
"""The smallest effect of interest: the APB paper's lower Refine − Plan-first figure on τ²-bench
(+0.03 reward, ``runtime.stats.published``'s ``apb-table3-tau2``)."""
CONTROL = "plan-first"


def planned(arms: list[str]) -> list[tuple[str, str]]:
    """The comparisons ``--until-decided`` decides among ``arms`` (summary arm names)."""
    pairs = [(a, CONTROL) for a in sorted(arms) if a.split(":")[0] == "refine" and CONTROL in arms]
    if CONTROL in arms and "direct" in arms:
        pairs.append((CONTROL, "direct"))
    return pairs


def complete_waves(df: pd.DataFrame, arms: list[str], tasks: int | None = None) -> int:
    """Leading trials recorded for every task in every one of ``arms`` (errored episodes count:
    their pair is incomplete, the wave is not)."""
    part = df[df["arm"].isin(arms)]
    if part.empty:
        return 0
    tasks = tasks or part[["domain", "task_id"]].drop_duplicates().shape[0]
    per_trial = part.drop_duplicates(["domain", "task_id", "arm", "trial"]).groupby("trial").size()
    waves = 0
    while per_trial.get(waves, 0) >= tasks * len(arms):
        waves += 1
    return waves


def differences(df: pd.DataFrame, treatment: str, control: str, waves: int) -> np.ndarray:
    """``(tasks, waves)`` treatment − control per task and trial, NaN where a pair is incomplete."""
    part = df[(df["trial"] < waves) & df["arm"].isin([treatment, control])]
    scored = part[part["status"] == "ok"]
    table = scored.pivot_table(index=["domain", "task_id", "trial"], columns="arm", values="score",
                               aggfunc="mean")
    tasks = sorted({(d, t) for d, t in part[["domain", "task_id"]].itertuples(index=False, name=None)})
    out = np.full((len(tasks), waves), np.nan)
    if treatment not in table or control not in table:
        return out
    diff = (table[treatment] - table[control]).dropna()
    row = {task: i for i, task in enumerate(tasks)}
    for (domain, task_id, trial), value in diff.items():
        out[row[(domain, task_id)], int(trial)] = float(value)
    return out


def evaluate(df: pd.DataFrame, *, margin: float = DEFAULT_MARGIN, alpha: float = ALPHA,
             tasks: int | None = None) -> dict[str, Any] | None:
    """The sequence of every planned comparison after the complete waves of ``df`` (the
    summary's frame); ``None`` when it plans no comparison."""
    from runtime.stats.sequential import decide

    arms = sorted(set(df["arm"])) if len(df) else []
    pairs = planned([a for a in arms if a != AA_MODE])
    if not pairs:
        return None
    used = sorted({a for pair in pairs for a in pair})
    waves = complete_waves(df, used, tasks)
    each = alpha / len(pairs)
    rows = []
    for treatment, control in pairs:
        found = decide(differences(df, treatment, control, waves), margin=margin, alpha=each)
        rows.append({"treatment": treatment, "control": control, **found.as_dict()})
    decided = all(r["decision"] != "undecided" for r in rows)
    return {"margin": margin, "alpha": alpha, "waves": waves, "decided": decided,
            "wave": max(r["wave"] for r in rows) if decided else None,
            "correction": "Bonferroni" if len(pairs) > 1 else None, "comparisons": rows}


def decision_entry(df: pd.DataFrame, *, margin: float, max_trials: int, tasks: int | None = None) -> dict[str, Any] | None:
    """``summary.json``'s ``decision``: the sequence's verdict and why the run stopped."""
    found = evaluate(df, margin=margin, tasks=tasks)
    if found is None:
        return None
    if found["decided"]:
        stopped = "decided"
    elif found["waves"] >= max_trials:
        stopped = "max-trials"
    else:
        stopped = "not finished (stopped by --max-cost, an error or an interruption; the same command resumes)"
    return {**found, "max_trials": max_trials, "stopped": stopped}


def _signed(x: float | None) -> str:
    if x is None or np.isnan(x):
        return "–"
    return f"{x:+.3f}" if np.isfinite(x) else ("+∞" if x > 0 else "−∞")


def lines(entry: dict[str, Any]) -> list[str]:
    """One line per comparison, for the console and the report."""
    out = []
    for r in entry["comparisons"]:
        when = f"at wave {r['wave']}" if r["wave"] else f"after {r['waves']} wave(s)"
        out.append(f"{r['treatment']} − {r['control']}: {r['decision']} {when}: Δ {_signed(r['delta'])}, "
                   f"anytime-valid {1 - r['alpha']:.1%} interval [{_signed(r['low'])}, {_signed(r['high'])}] "
                   f"over {r['tasks']} tasks (margin ±{r['margin']:g})")
    return out


def markdown_section(groups: list[tuple[str, dict[str, Any], dict[tuple[str, str], Any]]], *,
                     until_decided: bool, looks: list[int]) -> str:
    """The report's section: the anytime-valid interval beside the fixed-size one, and which one
    a decision may rest on. ``groups``: (environment · tested model, ``evaluate``'s entry,
    (treatment, control) → the fixed-size ``PairedDelta``); ``looks``: the trial counts the
    folder was reported at before."""
    if not groups:
        return ""
    why = ("this folder was run with --until-decided: it was read after every wave" if until_decided
           else f"this folder was reported before at {', '.join(str(k) for k in looks)} trial(s) and grew since")
    rest = ("the anytime-valid interval: it holds at every wave at once, so stopping or reading again "
            "when it says so keeps the error at its stated level; the fixed-size interval is valid "
            "only for a size chosen before any result was seen, and is shown for comparison")
    md = ["", "## Decision (anytime-valid)", "",
          f"{why}. A decision may rest only on {rest}.", "",
          "| env · tested model | comparison | decision | waves | Δ | anytime-valid interval | fixed-size 95% CI |",
          "|---|---|---|---|---|---|---|"]
    for label, entry, fixed in groups:
        for r in entry["comparisons"]:
            d = fixed.get((r["treatment"], r["control"]))
            ci = f"[{_signed(d.low)}, {_signed(d.high)}]" if d is not None else "–"
            wave = f"decided at {r['wave']} of {r['waves']}" if r["wave"] else f"{r['waves']}"
            md.append(f"| {label} | {r['treatment']} − {r['control']} | {r['decision']} | {wave} | "
                      f"{_signed(r['delta'])} | [{_signed(r['low'])}, {_signed(r['high'])}] "
                      f"({1 - r['alpha']:.1%}) | {ci} |")
    entry = groups[0][1]
    md += ["", (f"Margin ±{entry['margin']:g}: *no effect of interest* means the interval lies "
                "inside it; *effect* means it excludes 0; *undecided*, neither yet. Normal-mixture "
                "confidence sequence in information time, tasks the cluster (runtime/stats/sequential.py; "
                "calibration in bench/SEQUENTIAL.md); with two comparisons α is split between them "
                "(Bonferroni).")]
    return "\n".join(md) + "\n"


def print_decision(entry: dict[str, Any], console) -> None:
    """The decision as the run's summary prints it (``console``: rich's)."""
    from rich.markup import escape

    head = (f"decision after {entry['waves']} wave(s) (margin ±{entry['margin']:g}, anytime-valid, "
            f"α {entry['alpha']:g}): {entry['stopped']}")
    console.print(escape(head), soft_wrap=True)
    for line in lines(entry):
        console.print(escape(f"  {line}"), soft_wrap=True)


def run_settings(folder) -> dict[str, Any]:
    """The last invocation's ``until_decided``, ``margin`` and ``max_trials`` from ``run.json``."""
    import json
    from pathlib import Path

    from runtime.folder.store import RUN_INFO

    try:
        data = json.loads((Path(folder) / RUN_INFO).read_text(encoding="utf-8"))
        config = data["invocations"][-1]["config"]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return {}
    return config if isinstance(config, dict) else {}


def report_section(folder, df: pd.DataFrame) -> str:
    """The report's decision section when the folder was run ``--until-decided`` or was reported
    before at a smaller size; then notes this look (``runtime.folder.looks``)."""
    from runtime.folder import looks
    from runtime.reports.stats import task_delta

    if df.empty:
        return ""
    trials = int(df["trial"].max()) + 1
    earlier = looks.earlier_sizes(folder, trials)
    settings = run_settings(folder)
    until = bool(settings.get("until_decided"))
    section = ""
    if until or earlier:
        groups = []
        for (env, model), part in df.groupby(["env", "model"], sort=True):  # never pair across models
            entry = evaluate(part, margin=settings.get("margin") or DEFAULT_MARGIN)
            if entry is None:
                continue
            fixed = {(r["treatment"], r["control"]): task_delta(part[part["arm"] == r["treatment"]],
                                                                part[part["arm"] == r["control"]])
                     for r in entry["comparisons"]}
            groups.append((f"{env} · {model}", entry, fixed))
        section = markdown_section(groups, until_decided=until, looks=earlier)
    looks.note(folder, trials, len(df))
    return section
