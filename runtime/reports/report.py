"""The Table 3 report, rebuilt from stored records (``python -m runtime.report <run folder>``).

Per environment × tested model: Direct, Plan-first and Refine means; Δ = Refine − Plan-first
with a 95% CI clustered by task (trials averaged within a task first, since trials of one task
are not independent; t over tasks, calibrated in tests/test_calibration.py), the Δ the run could
detect at its own variance and a verdict, the A/A arm's Δ (Plan-first run again with independent
seeds) beside it, the variance components, and an exact sign test, on the episode pairs (same task,
same trial) complete in both arms and again with errored episodes scored 0; per arm episodes, errors and error rate, with a
warning when errors could bias Δ; pass^k for k up to the number of trials (errors count as
failures, success as in τ²); plan-judge correctness and grade p0 → p1; tokens and cost per mode; the paper's
published gains beside ours; how many judge and critic answers the verdict rule settled. Written as Markdown, CSV and HTML with PNG plots.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from runtime.reports.stats import (  # noqa: E402
    DELTA_LINES,
    FLOOR_NOTE,
    arm_errors,
    delta_lines,
    error_warnings,
    pass_k,
    task_delta,
)
from runtime.folder.records import AA_MODE  # noqa: E402
from runtime.folder.store import RunStore, write_text_atomic  # noqa: E402
from runtime.reports.summary import frame, mixed_settings, re_run_line, re_runs  # noqa: E402
from runtime.reports import (channel, decision, explorer, free_text, leaks, provenance,  # noqa: E402
                             task_sets, verdicts)
from runtime.reports.deltas import components_fields, components_line  # noqa: E402
from runtime.reports.plots import plots  # noqa: E402
from runtime.stats.intervals import mean_interval  # noqa: E402
from runtime.stats.verdict import verdict  # noqa: E402

ARMS = ("direct", "plan-first", "refine")


def rows(df: pd.DataFrame, published: dict[str, Any], pooled: bool = False) -> list[dict[str, Any]]:
    """One row per environment × domain × tested model × critique strategy (usually one
    strategy); ``pooled``: one row over an environment's domains (a table3 cell draws its tasks
    from its domains pooled, as the paper's table does). Each row's ``env`` says the domain when
    the folder holds more than one."""
    out = []
    for env, model, domain, cell in cells(df, pooled):
        strategies = sorted(set(cell.loc[cell["mode"] == "refine", "strategy"])) or [""]
        for strategy in strategies:
            part = cell[(cell["mode"] != "refine") | (cell["strategy"] == strategy)]
            row = _row(env, model, strategy, part, published)
            if domain is not None:
                row.update(env=f"{env}/{domain}", domain=domain)
            out.append(row)
    return out


def cells(df: pd.DataFrame, pooled: bool = False):
    """The report's cells: (env, tested model, domain or None, its episodes), one per
    environment × tested model, and per domain unless ``pooled``; a model's label names the
    settings fingerprint when the folder mixes settings."""
    mixed = settings_mixed(df)
    split = not pooled and "domain" in df and df["domain"].nunique() > 1  # never one mean over two domains
    by = ["env", "model"] + (["domain"] if split else []) + (["fingerprint"] if mixed else [])
    for group, cell in df.groupby(by, sort=True):
        env, model = group[0], group[1]
        if mixed:  # never one mean over episodes made with different settings
            model = f"{model} (settings {group[-1]})"
        yield env, model, (group[2] if split else None), cell


def settings_mixed(df: pd.DataFrame) -> bool:
    """Whether one environment's domain holds records of more than one settings fingerprint.
    Two domains differ in their task sets, so their fingerprints differ by construction: that is
    no change of settings, and a pooled table3 cell or a folder resumed on another domain is
    still one experiment a domain."""
    if "fingerprint" not in df or df.empty:
        return False
    return bool(df.groupby(["env", "domain"])["fingerprint"].nunique().max() > 1)


def _row(env: str, model: str, strategy: str, part: pd.DataFrame, published: dict[str, Any]) -> dict[str, Any]:
    scored = part[part["status"] == "ok"]
    per_task = scored.groupby(["mode", "domain", "task_id"])["score"].mean()
    row: dict[str, Any] = {"env": env, "model": model, "strategy": strategy,
                           "tasks": int(part[["domain", "task_id"]].drop_duplicates().shape[0]),
                           "trials": int(part["trial"].nunique()),
                           "errors": int((part["status"] == "error").sum())}
    for arm in ARMS:
        values = per_task.get(arm)
        row[f"{arm}_mean"] = float(values.mean()) if values is not None and len(values) else None
        if values is not None and values.notna().sum() > 1:  # the plot's interval: t over tasks
            spread = mean_interval(values.dropna().to_numpy(dtype=float))
            row[f"{arm}_low"], row[f"{arm}_high"] = float(spread.low), float(spread.high)
        arm_part = part[part["mode"] == arm]
        row[f"{arm}_tokens"] = int(arm_part["tokens"].sum())
        row[f"{arm}_cost_usd"] = float(arm_part["cost_usd"].sum())
        row[f"{arm}_pass^k"] = pass_k(arm_part, row["trials"])
        row.update(_arm_interval(arm, arm_part))
    row.update(_delta_fields(part))
    scale = (published.get(env) or {}).get("scale", 1.0)
    for prefix in ("delta", "delta0"):
        if row.get(prefix) is not None:
            row[f"{prefix}_verdict"] = verdict(row[prefix], row[f"{prefix}_low"], row[f"{prefix}_high"],
                                               row[f"{prefix}_mde"], digits=1 if scale != 1.0 else 2,
                                               scale=scale)
            if row.get(f"{prefix}_floor_only"):  # said, never a silent ±0.00
                row[f"{prefix}_verdict"] = f"{FLOOR_NOTE}; {row[f'{prefix}_verdict']}"
    row["components"] = components_fields(part, ("refine", "plan-first"), "mode")
    refine_rows = part[part["mode"] == "refine"]
    for plan in ("p0", "p1"):
        row[f"judge_cr_{plan}"] = _mean(refine_rows[f"{plan}_correct"])
        row[f"judge_grade_{plan}"] = _mean(refine_rows[f"{plan}_grade"])
    pub = published.get(env)
    if pub:
        row["published"] = f"+{pub['low']:g} to +{pub['high']:g} {pub.get('unit', '')}".strip()
        row["scale"] = pub.get("scale", 1.0)
    return row


def _arm_interval(arm: str, part: pd.DataFrame) -> dict[str, Any]:
    """The arm's mean over tasks with its 95 % interval (``runtime.stats.intervals.arm_interval``,
    errored episodes left out), as ``{arm}_low`` / ``{arm}_high``."""
    if part.empty or not (part["status"] == "ok").any():
        return {}
    from runtime.reports.stats import trial_scores
    from runtime.stats.intervals import arm_interval

    table = trial_scores(part).to_numpy()
    table = table[~np.all(np.isnan(table), axis=1)]
    if len(table) < 2:
        return {}
    found = arm_interval(table)
    return {f"{arm}_low": float(found.low), f"{arm}_high": float(found.high)}


def _delta_fields(part: pd.DataFrame) -> dict[str, Any]:
    """Δ = Refine − Plan-first in both lines (``delta*`` complete-case, ``delta0*`` errors as 0),
    each arm's episodes / errors / rate / infrastructure errors, and the error warnings."""
    fields: dict[str, Any] = {}
    arms = {}
    for arm in ARMS:
        counted = arm_errors(part[part["mode"] == arm])
        if counted.episodes:
            arms[arm] = counted
            fields.update({f"{arm}_episodes": counted.episodes, f"{arm}_errors": counted.errors,
                           f"{arm}_error_rate": counted.rate,
                           f"{arm}_infrastructure_errors": counted.infrastructure,
                           f"{arm}_error_causes": counted.causes_text()})
    fields["error_warnings"] = error_warnings(arms)
    aa = task_delta(part[part["mode"] == AA_MODE], part[part["mode"] == "plan-first"])
    if aa is not None:  # the A/A arm: Plan-first again with independent seeds, the noise floor
        fields.update(aa_delta=aa.mean, aa_low=aa.low, aa_high=aa.high, aa_p=aa.p, aa_mde=aa.mde,
                      aa_tasks=aa.n)
    lines = delta_lines(part[part["mode"] == "refine"], part[part["mode"] == "plan-first"])
    for line, prefix in zip(DELTA_LINES, ("delta", "delta0")):
        d = lines[line]
        if d is not None:
            fields.update({prefix: d.mean, f"{prefix}_low": d.low, f"{prefix}_high": d.high,
                           f"{prefix}_sign_p": d.sign_p, f"{prefix}_tasks": d.n,
                           f"{prefix}_p": d.p, f"{prefix}_mde": d.mde, f"{prefix}_pairs": d.pairs,
                           f"{prefix}_floor_only": d.floor_only})
            if line == "complete":  # the main table's columns
                fields.update(sign_p=d.sign_p, wins=d.wins, losses=d.losses, paired_tasks=d.n)
    return fields


def _mean(series: pd.Series) -> float | None:
    values = series.dropna().astype(float)
    return float(values.mean()) if len(values) else None


def _f(value: Any, digits: int = 3, scale: float = 1.0, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "–"
    return f"{value * scale:+.{digits}f}" if signed else f"{value * scale:.{digits}f}"


def markdown(table: list[dict[str, Any]], title: str, beside: str = "") -> str:
    """The report's Markdown; ``beside``: a section placed right under the main table (the
    anti-leak − sealed comparison, ``runtime.reports.free_text``)."""
    lines = [f"# {title}", "",
             "Scores are the environments' own (τ²-bench reward; ToolSandbox similarity ×100). "
             "Δ = Refine − Plan-first, trial k paired with trial k, 95% CI clustered by task (t "
             "over tasks, pairs averaged within a task, the variance floored by the pairs' "
             "discordance so that no interval is zero-wide); detectable: the Δ this run finds with "
             "80% power at its own variance; p: exact sign test.", "",
             "| env | tested model | critique | tasks × trials | Direct | Plan-first | Refine | Δ [95% CI] | "
             "detectable | A/A Δ [95% CI] | sign p | paper's Δ | judge CR p0 → p1 | judge grade p0 → p1 | errors |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        s = r.get("scale", 1.0)
        digits = 1 if s != 1.0 else 3
        delta = "–"
        if r.get("delta") is not None:
            delta = (f"{_f(r['delta'], digits, s, True)} [{_f(r['delta_low'], digits, s, True)}, "
                     f"{_f(r['delta_high'], digits, s, True)}]")
        lines.append(
            f"| {r['env']} | {r['model']} | {_strategy_label(r['strategy'])} | {r['tasks']} × {r['trials']} | "
            f"{_f(r['direct_mean'], digits, s)} | "
            f"{_f(r['plan-first_mean'], digits, s)} | {_f(r['refine_mean'], digits, s)} | {delta} | "
            f"{_detectable(r.get('delta_mde'), digits, s)} | {_interval(r, 'aa', digits, s)} | "
            f"{_f(r.get('sign_p'), 3)} | {r.get('published', '–')} | {_f(r['judge_cr_p0'], 2)} → "
            f"{_f(r['judge_cr_p1'], 2)} | {_f(r['judge_grade_p0'], 2)} → {_f(r['judge_grade_p1'], 2)} | "
            f"{r['errors']} |")
    if beside:
        lines += beside.rstrip("\n").split("\n")
    lines += verdict_markdown(table)
    lines += ["", "## pass^k", "", "| env | tested model | mode | " +
              " | ".join(f"k={k}" for k in range(1, max((r["trials"] for r in table), default=1) + 1)) + " |"]
    lines.append("|---|---|---|" + "---|" * max((r["trials"] for r in table), default=1))
    for r in table:
        for arm in ARMS:
            ks = r.get(f"{arm}_pass^k") or {}
            if ks:
                lines.append(f"| {r['env']} | {r['model']} | {arm} | " +
                             " | ".join(_f(ks.get(k)) for k in range(1, r["trials"] + 1)) + " |")
    lines += ["", "## Tokens and cost per mode", "", "| env | tested model | mode | tokens | cost (USD) |",
              "|---|---|---|---|---|"]
    for r in table:
        for arm in ARMS:
            lines.append(f"| {r['env']} | {r['model']} | {arm} | {r[f'{arm}_tokens']} | {r[f'{arm}_cost_usd']:.4f} |")
    lines += errors_markdown(table)
    return "\n".join(lines) + "\n"


def _interval(r: dict[str, Any], prefix: str, digits: int, scale: float) -> str:
    if r.get(f"{prefix}_delta") is None:
        return "–"
    return (f"{_f(r[f'{prefix}_delta'], digits, scale, True)} [{_f(r[f'{prefix}_low'], digits, scale, True)}, "
            f"{_f(r[f'{prefix}_high'], digits, scale, True)}]")


def _detectable(value: Any, digits: int, scale: float) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "–"
    return "none (1 task)" if np.isinf(value) else f"±{value * scale:.{digits}f}"


def verdict_markdown(table: list[dict[str, Any]]) -> list[str]:
    """What each Δ says given what the run could detect, and the variance components it rests on."""
    lines = ["", "## What each Δ can tell", "",
             "A Δ whose interval covers 0 means *no effect* only when the run could have seen one: "
             "each verdict reads Δ against the size this run detects at its own variance. Variance "
             "components of Refine and Plan-first (method of moments, 95% intervals from "
             "resampling tasks, expanded percentiles; the task × arm term's covers 88–100% at "
             "20–50 tasks and its estimate leans upward near 0: bench/CALIBRATION.md): "
             "between-task cancels in the paired Δ; task × arm and within-task set its noise.", ""]
    for r in table:
        label = f"{r['env']} · {r['model']} · {_strategy_label(r['strategy'])}"
        for prefix, line in (("delta", "complete tasks"), ("delta0", "errors as 0")):
            if r.get(f"{prefix}_verdict"):
                lines.append(f"- {label} ({line}): {r[f'{prefix}_verdict']}")
        if r.get("aa_delta") is not None:
            lines.append(f"- {label}: A/A (Plan-first again, independent trial seeds) "
                         f"{_interval(r, 'aa', 3, 1.0)} over {r['aa_tasks']} tasks, p {r['aa_p']:.3g}: "
                         "the noise floor to read the real Δ beside")
        lines.append(f"- {label}: variance components {components_line(r.get('components'))}")
    return lines


def errors_markdown(table: list[dict[str, Any]]) -> list[str]:
    """Errors per arm and Δ both ways: an errored episode is not silently dropped from the
    comparison, and an infrastructure failure is told apart from the agent failing."""
    lines = ["", "## Errors and Δ with errors counted", "",
             "Δ on the episode pairs complete in both arms (the table above: an errored episode "
             "leaves out its own pair, not its task) and with errored episodes scored 0. "
             "Infrastructure: model endpoint, env server or container failures.", "",
             "| env | tested model | critique | mode | episodes | errors | error rate | infrastructure "
             "| by cause |", "|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        for arm in ARMS:
            if r.get(f"{arm}_episodes"):
                lines.append(f"| {r['env']} | {r['model']} | {_strategy_label(r['strategy'])} | {arm} | "
                             f"{r[f'{arm}_episodes']} | {r[f'{arm}_errors']} | "
                             f"{r[f'{arm}_error_rate']:.1%} | {r[f'{arm}_infrastructure_errors']} | "
                             f"{r[f'{arm}_error_causes'] or '–'} |")
    lines += ["", "| env | tested model | critique | Δ complete [95% CI] | detectable | tasks | "
              "Δ errors as 0 [95% CI] | detectable | tasks |", "|---|---|---|---|---|---|---|---|---|"]
    for r in table:
        s = r.get("scale", 1.0)
        digits = 1 if s != 1.0 else 3
        cells = []
        for prefix in ("delta", "delta0"):
            if r.get(prefix) is None:
                cells += ["–", "–", "–"]
                continue
            cells += [f"{_f(r[prefix], digits, s, True)} [{_f(r[f'{prefix}_low'], digits, s, True)}, "
                      f"{_f(r[f'{prefix}_high'], digits, s, True)}]", _detectable(r.get(f"{prefix}_mde"), digits, s),
                      str(r[f"{prefix}_tasks"])]
        lines.append(f"| {r['env']} | {r['model']} | {_strategy_label(r['strategy'])} | " + " | ".join(cells) + " |")
    warnings = [f"- **warning** ({r['env']} · {r['model']}): {w}" for r in table for w in r.get("error_warnings", [])]
    if warnings:
        lines += ["", *warnings]
    return lines


def _strategy_label(name: str) -> str:
    from critique.strategies import STRATEGIES

    return STRATEGIES[name].label if name in STRATEGIES else (name or "–")


def build(folder: Path, title: str | None = None, store: RunStore | None = None) -> dict[str, Path]:
    """Write the report of ``folder``; ``store`` (the folder's, already open) lets the caller
    read what the read skipped (``store.skipped_note()``)."""
    folder = Path(folder)
    store = store or RunStore(folder)
    records = store.records()
    if not records:
        why = store.skipped_note()
        raise ValueError(f"no records in {folder / 'records.jsonl'}" + (f": {why}" if why else ""))
    meta_path = folder / "table3.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else {}
    df = frame(records)
    table = rows(df, meta.get("published", {}), pooled=bool(meta))
    title = title or f"Report: {meta.get('name', folder.name)}"
    beside = free_text.markdown_section(free_text.free_text_rows(cells(df, pooled=bool(meta)),
                                                                 meta.get("published", {})))
    head, _, rest = markdown(table, title, beside).partition("\n\n")
    lead, section = decision.report_parts(folder, df)  # a sequential run leads with its decision
    md = (f"{head}\n\n{lead}{task_sets.header(folder)}{rest}" + leaks.markdown_section(df)
          + channel.markdown_section(df) + provenance.markdown_section(df)
          + verdicts.markdown_section(df) + section)
    if settings_mixed(df):
        counts = {str(k): int(v) for k, v in df["fingerprint"].value_counts().items()}
        md += f"\n> **warning:** {mixed_settings(counts)}; each row above is one fingerprint.\n"
    if note := store.skipped_note():
        md += f"\n> **warning:** {note}; the report leaves them out.\n"
    if legacy := store.legacy_note():
        md += f"\n> **note:** {legacy}.\n"
    if rerun := re_run_line(re_runs(records)):
        md += f"\n> **note:** {rerun}.\n"
    paths = {"markdown": folder / "report.md", "csv": folder / "report.csv", "html": folder / "report.html"}
    write_text_atomic(paths["markdown"], md)
    flat = [{k: (json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in r.items()} for r in table]
    write_text_atomic(paths["csv"], pd.DataFrame(flat).to_csv(index=False))
    images = plots(table, folder)
    body = pd.DataFrame(flat).to_html(index=False, float_format=lambda v: f"{v:.3f}")
    figures = "".join(f'<p><img src="{p.name}" alt="{p.stem}"></p>' for p in images)
    write_text_atomic(paths["html"], f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>"
                                     f"<h1>{html.escape(title)}</h1>{figures}{body}"
                                     f"<p><a href='{explorer.FOLDER}/index.html'>Episode explorer</a></p>")
    paths.update(explorer.write(folder, records, title, summary_markdown=md, images=images,
                                comparisons=explorer.deltas(records)))
    return paths
