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
lies inside ±margin — on its complete pairs *and* with errored episodes counted as failures,
since errors that depend on the outcome bias the complete pairs; while the two disagree it stays
undecided. Each comparison counts its own complete waves, so an arm whose comparisons are all
decided stops running; the run stops when every planned comparison has decided, at
``--max-trials``, or at ``--max-cost``. The settings a decision rests on (margin, α, the
comparisons, the boundary, the mixture's tuning) are fixed in run.json at the first look.
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


def finished_arms(entry: dict[str, Any]) -> set[str]:
    """Arms every comparison of which is decided: they need no more waves."""
    arms: dict[str, bool] = {}
    for r in entry["comparisons"]:
        for a in (r["treatment"], r["control"]):
            arms[a] = arms.get(a, True) and r["decision"] != "undecided"
    return {a for a, done in arms.items() if done}


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


def differences(df: pd.DataFrame, treatment: str, control: str, waves: int, *,
                errors_as_failures: bool = False) -> np.ndarray:
    """``(tasks, waves)`` treatment − control per task and trial, NaN where a pair is incomplete.
    ``errors_as_failures``: an errored episode scores 0 instead of leaving its pair out."""
    part = df[(df["trial"] < waves) & df["arm"].isin([treatment, control])]
    if errors_as_failures:
        part = part.assign(score=np.where(part["status"] == "error", 0.0, part["score"]),
                           status=np.where(part["status"] == "error", "ok", part["status"]))
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


def error_rates(df: pd.DataFrame, treatment: str, control: str, waves: int) -> dict[str, Any]:
    """Each arm's share of errored episodes in the complete waves, and whether they differ
    (Fisher's exact test at 0.05): an arm whose failures crash leaves out exactly the pairs that
    would count against it, and the decision on complete pairs then favours it."""
    from scipy.stats import fisher_exact

    part = df[(df["trial"] < waves)]
    counts = {}
    for arm in (treatment, control):
        mine = part[part["arm"] == arm]
        counts[arm] = (int((mine["status"] == "error").sum()), int(len(mine)))
    (et, nt), (ec, nc) = counts[treatment], counts[control]
    p = float(fisher_exact([[et, nt - et], [ec, nc - ec]])[1]) if nt and nc else 1.0
    return {"treatment": et / nt if nt else 0.0, "control": ec / nc if nc else 0.0,
            "p": p, "unequal": bool(p < FLAG_P)}


FLAG_P = 0.05
"""Unequal error rates between the arms are flagged below this Fisher p-value."""
STOP_CAVEAT = ("the Δ at a stop is biased away from 0 (a run stops on a high draw; +46 % at "
               "+0.05 in bench/SEQUENTIAL.md): the interval is valid, the point estimate is not "
               "corrected — plan the next run with a smaller Δ")


def evaluate(df: pd.DataFrame, *, margin: float = DEFAULT_MARGIN, alpha: float = ALPHA,
             tasks: int | None = None, settings: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The sequence of every planned comparison after the complete waves of ``df`` (the
    summary's frame); ``None`` when it plans no comparison. ``settings``: those fixed at the
    first look (``fixed_settings``), which win over ``margin`` and ``alpha``.

    Each comparison is decided twice, on its complete pairs and with errored episodes counted
    as failures; it is decided only where both say the same."""
    from runtime.stats.sequential import decide

    arms = sorted(set(df["arm"])) if len(df) else []
    settings = settings or {}
    margin, alpha = settings.get("margin", margin), settings.get("alpha", alpha)
    # the spending function recorded at the first look (none recorded: the default, ``SPENDING``)
    looks, family, rho = settings.get("looks"), settings.get("spending"), settings.get("precision")
    pairs = [tuple(p) for p in settings["comparisons"]] if settings.get("comparisons") else \
        planned([a for a in arms if a != AA_MODE])
    pairs = [p for p in pairs if p[0] in arms and p[1] in arms]
    if not pairs:
        return None
    each = alpha / len(pairs)
    rows = []
    for treatment, control in pairs:  # each on its own waves: an arm whose comparisons are all
        waves = complete_waves(df, [treatment, control], tasks)  # decided stops running
        views = [decide(differences(df, treatment, control, waves, errors_as_failures=failures),
                        margin=margin, alpha=each, looks=looks, family=family, rho=rho)
                 for failures in (False, True)]
        found, failed = views
        row = {"treatment": treatment, "control": control, **found.as_dict()}
        agree = found.decision == failed.decision
        if not agree:  # the two readings disagree: keep going
            row.update(decision="undecided", wave=None)
        row["errors_as_failures"] = {k: failed.as_dict()[k] for k in ("decision", "wave", "delta", "low", "high")}
        row["views_agree"] = agree
        if agree and found.wave is not None:  # decided once both readings have
            row["wave"] = max(found.wave, failed.wave or 0)
        row["error_rates"] = error_rates(df, treatment, control, waves)
        if row["decision"] == "effect":
            row["caveat"] = STOP_CAVEAT
        rows.append(row)
    decided = all(r["decision"] != "undecided" for r in rows)
    open_ = [r["waves"] for r in rows if r["decision"] == "undecided"]
    waves = min(open_) if open_ else max(r["waves"] for r in rows)
    return {"margin": margin, "alpha": alpha, "waves": waves, "decided": decided,
            "wave": max(r["wave"] for r in rows) if decided else None,
            "boundary": "alpha-spending" if looks else "time-uniform", "looks": looks,
            "correction": "Bonferroni" if len(pairs) > 1 else None, "comparisons": rows,
            "unequal_errors": [f"{r['treatment']} − {r['control']}" for r in rows if r["error_rates"]["unequal"]]}


def decision_entry(df: pd.DataFrame, *, margin: float, max_trials: int, tasks: int | None = None,
                   settings: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """``summary.json``'s ``decision``: the sequence's verdict and why the run stopped."""
    found = evaluate(df, margin=margin, tasks=tasks, settings=settings)
    if found is None:
        return None
    if found["decided"]:
        stopped = "decided"
    elif found["waves"] >= max_trials:
        stopped = "max-trials"
    else:
        stopped = "not finished (stopped by --max-cost, an error or an interruption; the same command resumes)"
    looks = found.get("looks")
    past = looks is not None and found["waves"] > looks
    return {**found, "max_trials": max_trials, "stopped": stopped,
            **({"past_planned_looks": f"past the planned {looks} waves: the waves after {looks} are read by "
                                      "a time-uniform sequence on the α the spending boundary kept back"}
               if past else {})}


def _signed(x: float | None) -> str:
    if x is None or np.isnan(x):
        return "–"
    return f"{x:+.3f}" if np.isfinite(x) else ("+∞" if x > 0 else "−∞")


def lines(entry: dict[str, Any]) -> list[str]:
    """One line per comparison, for the console and the report, then its flags."""
    out = []
    for r in entry["comparisons"]:
        when = f"at wave {r['wave']}" if r["wave"] else f"after {r['waves']} wave(s)"
        out.append(f"{r['treatment']} − {r['control']}: {r['decision']} {when}: Δ {_signed(r['delta'])}, "
                   f"anytime-valid {1 - r['alpha']:.1%} interval [{_signed(r['low'])}, {_signed(r['high'])}] "
                   f"over {r['tasks']} tasks (margin ±{r['margin']:g})")
        failed = r.get("errors_as_failures")
        if failed and not r.get("views_agree", True):
            out.append(f"  errored episodes counted as failures: {failed['decision']}, Δ "
                       f"{_signed(failed['delta'])} [{_signed(failed['low'])}, {_signed(failed['high'])}]: "
                       "the two readings disagree, so the run goes on")
        rates = r.get("error_rates")
        if rates and rates["unequal"]:
            out.append(f"  unequal error rates: {r['treatment']} {rates['treatment']:.1%}, {r['control']} "
                       f"{rates['control']:.1%} (Fisher p {rates['p']:.3g}): errors that depend on the "
                       "outcome bias the complete pairs; trust the decision only where both readings agree")
        if r.get("caveat"):
            out.append(f"  note: {r['caveat']}")
    if entry.get("past_planned_looks"):
        out.append(entry["past_planned_looks"])
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
    flags = [f"- {label}: {line.strip()}" for label, entry, _ in groups for line in lines(entry)
             if line.startswith("  ") or line.startswith("past")]
    if flags:
        md += ["", *flags]
    entry = groups[0][1]
    first = entry["comparisons"][0]
    md += ["", (f"Margin ±{entry['margin']:g}: *no effect of interest* means the interval lies "
                "inside it; *effect* means it excludes 0; *undecided*, neither yet — or the "
                "decision on complete pairs and the one with errored episodes counted as failures "
                f"disagree. Boundary: {first.get('method', '')} (runtime/stats/sequential.py; "
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


SETTINGS_KEY = "decision_settings"
"""run.json's entry for the settings fixed at the first look."""


def run_settings(folder) -> dict[str, Any]:
    """The last invocation's ``until_decided``, ``margin`` and ``max_trials`` from ``run.json``."""
    config = _run_json(folder).get("invocations", [{}])
    try:
        config = config[-1]["config"]
    except (IndexError, KeyError, TypeError):
        return {}
    return config if isinstance(config, dict) else {}


def cell_of(env: str, domain: str, model: str) -> str:
    """The key of one run's settings in run.json (a table3 folder holds one run per cell)."""
    return f"{env}/{domain}/{model}"


def recorded_settings(folder, cell: str) -> dict[str, Any] | None:
    """The settings fixed at the first look of the run ``cell`` in ``folder``, or None before it."""
    found = _run_json(folder).get(SETTINGS_KEY)
    found = found.get(cell) if isinstance(found, dict) else None
    return found if isinstance(found, dict) else None


def record_settings(folder, cell: str, settings: dict[str, Any]) -> None:
    """Write ``settings`` for ``cell`` into run.json (the caller holds the folder's writer lock)."""
    from pathlib import Path

    from runtime.folder.store import RUN_INFO, write_json_atomic

    data = _run_json(folder)
    data.setdefault(SETTINGS_KEY, {})[cell] = settings
    write_json_atomic(Path(folder) / RUN_INFO, data)


def _run_json(folder) -> dict[str, Any]:
    import json
    from pathlib import Path

    from runtime.folder.store import RUN_INFO

    try:
        data = json.loads((Path(folder) / RUN_INFO).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def new_settings(*, margin: float, alpha: float, comparisons: list[tuple[str, str]],
                 looks: int | None) -> dict[str, Any]:
    """What a decision rests on, to be fixed at the first look: margin, α, the comparisons, the
    boundary (α-spending over ``looks`` waves, or time-uniform) and the mixture's tuning."""
    from runtime.stats.sequential import TUNED_AT, mixture_precision
    from runtime.stats.spending import RESERVE, SPENDING

    return {"margin": margin, "alpha": alpha, "comparisons": [list(p) for p in comparisons],
            "boundary": "alpha-spending" if looks else "time-uniform", "looks": looks,
            "spending": SPENDING, "reserve": RESERVE if looks else None,
            "tuned_at_margins": TUNED_AT, "precision": mixture_precision(margin, alpha)}


def refuse_changes(recorded: dict[str, Any], *, margin: float | None, comparisons: list[tuple[str, str]]) -> None:
    """A later invocation that asks another question of a folder already looked at: one line,
    naming the recorded value (``UsageError``, exit 2)."""
    from runtime.compose.config import UsageError

    if margin is not None and abs(margin - recorded["margin"]) > 1e-12:
        raise UsageError(f"--margin {margin:g}: this folder's decision was fixed at its first look "
                         f"with margin {recorded['margin']:g}; give --margin {recorded['margin']:g} "
                         "(or leave it out), or start another folder for another question")
    fixed = sorted(tuple(p) for p in recorded["comparisons"])
    if comparisons and sorted(comparisons) != fixed:
        asked = ", ".join(f"{t} − {c}" for t, c in comparisons)
        raise UsageError(f"comparisons {asked}: this folder's decision was fixed at its first look on "
                         f"{', '.join(f'{t} − {c}' for t, c in fixed)}; run those modes, or start "
                         "another folder")


def report_section(folder, df: pd.DataFrame) -> str:
    """The report's decision section (``report_parts``'s second part)."""
    return report_parts(folder, df)[1]


def report_parts(folder, df: pd.DataFrame) -> tuple[str, str]:
    """(the report's lead, its decision section) when the folder was run ``--until-decided``
    (the lead: the decision, first, since the run stopped on it) or was reported before at a
    smaller size (no lead); then notes this look (``runtime.folder.looks``)."""
    from runtime.folder import looks
    from runtime.reports.stats import task_delta

    if df.empty:
        return "", ""
    trials = int(df["trial"].max()) + 1
    earlier = looks.earlier_sizes(folder, trials)
    settings = run_settings(folder)
    recorded = _run_json(folder).get(SETTINGS_KEY) or {}
    until = bool(settings.get("until_decided")) or bool(recorded)
    section = lead = ""
    if until or earlier:
        groups = []
        for (env, domain, model), part in df.groupby(["env", "domain", "model"], sort=True):  # never pair across models
            fixed = recorded_settings(folder, cell_of(env, domain, model))
            entry = evaluate(part, margin=settings.get("margin") or DEFAULT_MARGIN, settings=fixed)
            if entry is None:
                continue
            fixed_ci = {(r["treatment"], r["control"]): task_delta(part[part["arm"] == r["treatment"]],
                                                                   part[part["arm"] == r["control"]])
                        for r in entry["comparisons"]}
            groups.append((f"{env}/{domain} · {model}", entry, fixed_ci))
        section = markdown_section(groups, until_decided=until, looks=earlier)
        if until and groups:
            lead = lead_markdown(groups)
    looks.note(folder, trials, len(df))
    return lead, section


def lead_markdown(groups) -> str:
    """The report's first lines for a sequential run: its decision, with its flags."""
    md = ["**Decision** (--until-decided; the run stopped on this, not on the fixed-size interval "
          "or its verdict below, which are shown for comparison only):", ""]
    for label, entry, _ in groups:
        md += [f"- {label}: {line.strip()}" for line in lines(entry)]
    return "\n".join(md) + "\n\n"
