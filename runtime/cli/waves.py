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

from runtime.cli.decision_state import cell, decision_of, settings_of

if TYPE_CHECKING:
    from rich.console import Console

    from runtime.compose.build import Run
    from runtime.folder.records import EpisodeRecord


def fixed_settings(run: Run, *, margin: float | None, max_trials: int | None) -> Run:
    """Before any episode: a folder already looked at keeps the settings fixed then (a margin
    or comparisons asked otherwise are refused in one line); ``run`` with them in its config.
    ``margin`` / ``max_trials``: as this invocation gave them (None: not given). A refusal lets
    go of the folder and the environment the run had opened."""
    from runtime.compose.config import UsageError

    try:
        return _fixed_settings(run, margin=margin, max_trials=max_trials)
    except UsageError:
        if hasattr(run, "services"):
            from runtime.cli.lifecycle import close_environments, release_folders

            close_environments([run])
            release_folders([run])
        raise


def _fixed_settings(run: Run, *, margin: float | None, max_trials: int | None) -> Run:
    from runtime.compose.config import UsageError
    from runtime.reports.decision import planned, recorded_settings, refuse_changes
    from runtime.stats.sequential import SHOWN_TASKS

    if len(run.spec.task_ids) < SHOWN_TASKS:
        raise UsageError(f"--until-decided with {len(run.spec.task_ids)} tasks: its type-I error has "
                         f"been shown from {SHOWN_TASKS} tasks (bench/SEQUENTIAL.md); accepted: "
                         f"{SHOWN_TASKS} tasks or more (--tasks)")
    recorded = recorded_settings(run.out, cell(run))
    if recorded is None:
        from runtime.stats.sequential import planned_looks

        looks = planned_looks(len(run.spec.task_ids), getattr(run.config, "planned_looks", None))
        return replace(run, config=run.config.model_copy(update={"planned_looks": looks}))
    refuse_changes(recorded, margin=margin, comparisons=planned(run_arms(run)))
    return replace(run, config=run.config.model_copy(update={"margin": recorded["margin"]}))


def run_arms(run: Run, strategies: list[str] | None = None) -> list[str]:
    """The summary's arm names this run's modes and strategies make."""
    from runtime.reports.summary import arm

    spec = getattr(run, "spec", None)
    strategies = strategies or list(getattr(spec, "strategies", None) or [getattr(run.config, "strategy", None) or ""])
    return [arm(m, s if m == "refine" else "") for m in run.config.modes
            for s in (strategies if m == "refine" else [""])]


def active_spec(run: Run, entry: dict[str, Any] | None, wave: int):
    """The spec of wave ``wave``: every arm but those whose comparisons are all decided."""
    from runtime.reports.decision import finished_arms
    from runtime.reports.summary import arm

    done = finished_arms(entry) if entry else set()
    strategies = [s for s in run.spec.strategies if arm("refine", s) not in done]
    modes = [m for m in run.spec.modes if (m == "refine" and strategies) or (m != "refine" and arm(m, "") not in done)]
    update: dict[str, Any] = {"trials": wave, "modes": modes}
    if strategies:
        update["strategies"] = strategies
    return run.spec.model_copy(update=update)


def fix_at_first_look(run: Run, entry: dict[str, Any] | None) -> None:
    """Write the decision's settings to run.json at the first look (once): margin, α, the
    comparisons, the boundary and the mixture's tuning."""
    from runtime.reports.decision import new_settings, record_settings, recorded_settings

    if entry is None or entry["waves"] < 1 or recorded_settings(run.out, cell(run)) is not None:
        return
    record_settings(run.out, cell(run), {
        **new_settings(margin=entry["margin"], alpha=entry["alpha"],
                       comparisons=[(r["treatment"], r["control"]) for r in entry["comparisons"]],
                       looks=getattr(run.config, "planned_looks", None)),
        "fixed_at_wave": entry["waves"]})


def run_until_decided(run: Run, console: Console) -> None:
    """Run ``run``'s waves until its comparisons are decided or ``--max-trials`` is reached."""
    from runtime.cli.lifecycle import finished_records, run_with_progress
    from runtime.reports.decision import finished_arms, lines

    limit = run.config.max_trials
    entry = decision_of(run, finished_records(run))
    fix_at_first_look(run, entry)  # a folder looked at by an older runtime: fixed now
    looks = settings_of(run).get("looks")
    if looks and limit > looks:
        console.print(escape(f"--max-trials {limit} is past the {looks} waves the α-spending boundary "
                             f"was planned for: waves after {looks} are read by a time-uniform sequence "
                             "on the α it kept back (valid, and wider)"), soft_wrap=True)
    while True:
        waves = entry["waves"] if entry else 0
        if entry and entry["decided"]:
            console.print(escape(f"decided at wave {entry['wave']} of at most {limit}: no more waves"))
            return
        if waves >= limit:
            console.print(escape(f"--max-trials {limit} reached: undecided"))
            return
        wave = waves + 1
        spec = active_spec(run, entry, wave)
        stopped = sorted(finished_arms(entry)) if entry else []
        console.print(escape(f"wave {wave} of at most {limit}" + (f" (decided, no more waves: {', '.join(stopped)})"
                                                                   if stopped else "")))
        run_with_progress(replace(run, spec=spec), console)
        entry = decision_of(run, finished_records(run))
        if entry is None or entry["waves"] < wave:  # the wave did not complete: nothing to decide on
            return
        fix_at_first_look(run, entry)
        for line in lines(entry):
            console.print(escape(f"  after wave {wave}: {line}"), soft_wrap=True)


PLANNING = {"tau2": (0.46, 0.405, "τ-bench airline's published figures (success 0.46, intra-task correlation 0.405)")}
"""Binary-reward figures the dry run simulates with (``runtime.stats.published``'s tau-airline);
other environments: success 0.5, intra-task correlation 0.2 (the calibration grid's low end)."""


def dry_run_lines(env: str, tasks: int, modes: list[str], max_trials: int, margin: float,
                  cost: float, paper: tuple[float, float, float, str] | None,
                  looks: int | None = None) -> list[str]:
    """What ``--until-decided`` is expected to take, under the planned Δ and under 0, and at
    worst (every wave to ``--max-trials``), by a fast simulation (``runtime.stats.sequential_plan``)
    under the fixed planner's assumptions (task × arm sd, errored share, their sensitivity);
    whether *no effect of interest* is reachable; both boundaries, the chosen one first."""
    from runtime.cli.plan import PLANNED_ERROR_RATE
    from runtime.stats import published
    from runtime.stats.sequential import SHOWN_TASKS
    from runtime.stats.sequential_plan import expected_waves
    from runtime.stats.spending import SPENDING

    from runtime.stats.sequential import SPENDING_TASKS, planned_looks

    if looks and planned_looks(tasks, looks) is None:
        lines_before = [f"--until-decided: α-spending needs {SPENDING_TASKS} tasks or more (its coverage "
                        f"of skewed effects is shown from there); with {tasks} the time-uniform sequence is used"]
        looks = None
    else:
        lines_before = []
    if tasks < SHOWN_TASKS:
        return [f"--until-decided with {tasks} tasks: refused (its type-I error has been shown from "
                f"{SHOWN_TASKS} tasks; bench/SEQUENTIAL.md)"]
    mean, icc, label = PLANNING.get(env, (0.5, 0.2, "success 0.5, intra-task correlation 0.2 (no published variance)"))
    tm, errors = published.TASK_MODE_SD, PLANNED_ERROR_RATE
    planned = paper[0] / paper[2] if paper else 2 * margin
    per_wave = tasks * len(modes)
    chosen = (f"α-spending over {looks} waves (Lan–DeMets, {SPENDING} spending; --max-trials given)"
              if looks else "time-uniform (no --max-trials: no last look to spend α over)")
    lines = lines_before + [(f"--until-decided: waves of {per_wave} episodes ({tasks} tasks × {len(modes)} modes), "
              f"at most {max_trials}; margin ±{margin:g}; boundary {chosen}; simulated with {label}, "
              f"task × arm sd {tm:g}, {errors:.0%} of episodes errored, 400 runs each:")]
    cases = [(f"planned Δ +{planned:g}" + (" (the paper's lower figure)" if paper else ""), planned)]
    if paper:
        cases.append((f"Δ +{paper[1] / paper[2]:g} (the paper's upper figure)", paper[1] / paper[2]))
    boundaries = [(looks, "")] + ([(None, "time-uniform instead: ")] if looks else [])
    for boundary, prefix in boundaries:
        for name, delta in (*cases, ("Δ 0", 0.0)):
            found = expected_waves(tasks=tasks, max_waves=max_trials, margin=margin, delta=delta, mean=mean,
                                   icc=icc, task_arm_sd=tm, error_rate=errors, looks=boundary)
            share = found.mean_waves / max_trials
            lines.append(f"  {prefix}under {name}: expected {found.mean_waves * per_wave:,.0f} episodes "
                         f"({found.mean_waves:.1f} waves, ~${cost * share:.2f}), 90th percentile "
                         f"{found.p90_waves * per_wave:,.0f}; decides effect {found.effect:.0%}, no effect "
                         f"of interest {found.no_effect:.0%}, undecided at --max-trials "
                         f"{1 - found.effect - found.no_effect:.0%}")
    low_tm, high_tm = published.TASK_MODE_SENSITIVITY
    at = [expected_waves(tasks=tasks, max_waves=max_trials, margin=margin, delta=planned, mean=mean, icc=icc,
                         task_arm_sd=t, error_rate=e, looks=looks) for t, e in ((low_tm, errors), (high_tm, errors), (tm, 0.0))]
    lines.append(f"  sensitivity at planned Δ +{planned:g}: task × arm sd {low_tm:g} → {at[0].mean_waves:.1f} waves "
                 f"(effect {at[0].effect:.0%}), {high_tm:g} → {at[1].mean_waves:.1f} (effect {at[1].effect:.0%}); "
                 f"no errors → {at[2].mean_waves:.1f} (effect {at[2].effect:.0%})")
    lines.append(reachable_line(env, tasks, max_trials, margin, looks))
    lines.append(f"  worst case: {max_trials * per_wave:,} episodes (~${cost:.2f}), every wave to --max-trials {max_trials}")
    return lines


def reachable_line(env: str, tasks: int, max_trials: int, margin: float, looks: int | None) -> str:
    """Whether *no effect of interest* can be reached by the last wave when Δ is 0: the
    boundary's half-width there against the margin, under the planner's variance."""
    import math

    import numpy as np

    from runtime.cli.plan import PLANNED_ERROR_RATE, planning_variance
    from runtime.stats.sequential import ALPHA, z_boundary
    from runtime.stats.spending import small_sample

    c = planning_variance(env).components
    kept = max_trials * (1 - PLANNED_ERROR_RATE) ** 2
    variance = (2 * c.task_mode + 2 * c.within_task / kept) / tasks
    z = float(small_sample(z_boundary(np.array(variance), np.array(max_trials), margin=margin,
                                      alpha=ALPHA, looks=looks), tasks))
    half, sd = z * math.sqrt(variance), math.sqrt(variance)
    # at Δ 0 the interval lies inside ±m when |D| < m − half: likely 80 % at m = half + 1.28 sd
    needed = half + 1.2816 * sd
    if margin <= half:
        return (f"  no effect of interest: NOT reachable at margin ±{margin:g} by wave {max_trials} (the "
                f"interval is ±{half:.3f} wide there even at Δ 0); a margin of ±{needed:.3f} would be "
                "reached in about 80 % of runs with no effect, or add tasks")
    chance = 2 * _phi((margin - half) / sd) - 1
    return (f"  no effect of interest: reachable at margin ±{margin:g} by wave {max_trials} in about "
            f"{chance:.0%} of runs with no effect (half-width ±{half:.3f}); ±{needed:.3f} would make it 80 %")


def _phi(x: float) -> float:
    import math

    return 0.5 * (1 + math.erf(x / math.sqrt(2)))
