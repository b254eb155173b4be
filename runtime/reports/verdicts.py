"""How often the verdict rule (``evrcore.verdict``: grade 1.0 ⇔ no flag ⇔ correct, a flagged
plan at most 0.8) had to settle an answer, per env × tested model × critique strategy.

A judge or critic that keeps contradicting itself after being told the rule is a sign that its
grades and flags should not be read as one verdict; the count says how much of a run's judge
figures were settled rather than answered.
"""

from __future__ import annotations

import pandas as pd


def markdown_section(df: pd.DataFrame) -> str:
    """The report's section; empty when the run has no judgement and no taxonomy critique."""
    if df.empty or "judgements" not in df or not (df["judgements"].sum() or df["critiques"].sum()):
        return ""
    lines = ["", "## Verdict rule", "",
             "Grade 1.0 if and only if no E1–E6 flag is set, if and only if the plan is correct; a "
             "flagged plan gets at most 0.8. Answers that broke it were sent back; those still "
             "contradictory were settled by their flags, with a note. Judgements: p0 of every "
             "Plan-first and Refine episode, p1 of every Refine episode.", "",
             "| env | tested model | critique | judgements | judge settled | critiques | critic settled |",
             "|---|---|---|---|---|---|---|"]
    planned = df[df["mode"] != "direct"]
    for (env, model, strategy), part in planned.groupby(["env", "model", "strategy"], sort=True):
        lines.append(f"| {env} | {model} | {strategy or '–'} | {int(part['judgements'].sum())} | "
                     f"{int(part['judge_notes'].sum())} | {int(part['critiques'].sum())} | "
                     f"{int(part['critic_notes'].sum())} |")
    return "\n".join(lines) + "\n"
