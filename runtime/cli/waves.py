"""``--until-decided``: a run in waves, one trial of every task and mode each, read after every
wave by an anytime-valid confidence sequence (``runtime.reports.decision``), stopping when each
planned comparison is decided, at ``--max-trials`` or at ``--max-cost``.

The loop sits above the executors: each wave is the ordinary batch of the run's episodes up to
that trial (``runtime.backends.run_episodes``, threads or Ray alike), so nothing below knows it
runs in waves. The records are the sequence's only state: before every wave the decision is
recomputed from them, so a killed run resumes the same sequence at the wave it had reached, and a
run already decided runs nothing more.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rich.markup import escape

if TYPE_CHECKING:
    from rich.console import Console

    from runtime.compose.build import Run
    from runtime.folder.records import EpisodeRecord


def decision_of(run: Run, records: list[EpisodeRecord]) -> dict[str, Any] | None:
    """``summary.json``'s ``decision`` entry for ``run``'s records."""
    from runtime.reports.decision import decision_entry
    from runtime.reports.summary import frame

    df = frame(records)
    if df.empty:
        return None
    return decision_entry(df, margin=run.config.margin, max_trials=run.config.max_trials,
                          tasks=len(run.spec.task_ids))


def run_until_decided(run: Run, console: Console) -> None:
    """Run ``run``'s waves until its comparisons are decided or ``--max-trials`` is reached."""
    from runtime.cli.lifecycle import finished_records, run_with_progress

    limit = run.config.max_trials
    entry = decision_of(run, finished_records(run))
    while True:
        waves = entry["waves"] if entry else 0
        if entry and entry["decided"]:
            console.print(escape(f"decided at wave {entry['wave']} of at most {limit}: no more waves"))
            return
        if waves >= limit:
            console.print(escape(f"--max-trials {limit} reached: undecided"))
            return
        wave = waves + 1
        console.print(escape(f"wave {wave} of at most {limit}"))
        run_with_progress(replace(run, spec=run.spec.model_copy(update={"trials": wave})), console)
        entry = decision_of(run, finished_records(run))
        if entry is None or entry["waves"] < wave:  # the wave did not complete: nothing to decide on
            return
        from runtime.reports.decision import lines

        for line in lines(entry):
            console.print(escape(f"  after wave {wave}: {line}"), soft_wrap=True)


PLANNING = {"tau2": (0.46, 0.405, "τ-bench airline's published figures (success 0.46, intra-task correlation 0.405)")}
"""Binary-reward figures the dry run simulates with (``runtime.stats.published``'s tau-airline);
other environments: success 0.5, intra-task correlation 0.2 (the calibration grid's low end)."""


def dry_run_lines(env: str, tasks: int, modes: list[str], max_trials: int, margin: float,
                  cost: float, paper: tuple[float, float, float, str] | None) -> list[str]:
    """What ``--until-decided`` is expected to take, under the planned Δ and under 0, and at
    worst (every wave to ``--max-trials``), by a fast simulation (``runtime.stats.sequential_plan``)."""
    from runtime.stats.sequential_plan import expected_waves

    if tasks < 2:
        return ["--until-decided: fewer than 2 tasks: nothing can be decided"]
    mean, icc, label = PLANNING.get(env, (0.5, 0.2, "success 0.5, intra-task correlation 0.2 (no published variance)"))
    planned = paper[0] / paper[2] if paper else 2 * margin
    per_wave = tasks * len(modes)
    lines = [(f"--until-decided: waves of {per_wave} episodes ({tasks} tasks × {len(modes)} modes), "
              f"at most {max_trials}; margin ±{margin:g}; simulated with {label}, 400 runs each:")]
    cases = [(f"planned Δ +{planned:g}" + (" (the paper's lower figure)" if paper else ""), planned)]
    if paper:
        cases.append((f"Δ +{paper[1] / paper[2]:g} (the paper's upper figure)", paper[1] / paper[2]))
    for name, delta in (*cases, ("Δ 0", 0.0)):
        found = expected_waves(tasks=tasks, max_waves=max_trials, margin=margin, delta=delta, mean=mean, icc=icc)
        share = found.mean_waves / max_trials
        lines.append(f"  under {name}: expected {found.mean_waves * per_wave:,.0f} episodes "
                     f"({found.mean_waves:.1f} waves, ~${cost * share:.2f}), 90th percentile "
                     f"{found.p90_waves * per_wave:,.0f}; decides effect {found.effect:.0%}, no effect "
                     f"of interest {found.no_effect:.0%}, undecided at --max-trials "
                     f"{1 - found.effect - found.no_effect:.0%}")
    lines.append(f"  worst case: {max_trials * per_wave:,} episodes (~${cost:.2f}), every wave to --max-trials {max_trials}")
    return lines
