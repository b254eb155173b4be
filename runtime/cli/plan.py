"""What a planned run can detect, for the dry runs of ``validate`` and ``table3``.

Each comparison the modes make (Refine − Plan-first, Plan-first − Direct, the A/A arm against
Plan-first) gets its minimum detectable Δ at the planned tasks × trials (``runtime.stats.design``)
from the variance an environment is planned with: τ²-bench (and τ³, the same domains) with
τ-bench's published figures at their conservative end (``runtime.stats.published``,
``tau-airline`` at ICC 0.405); ToolSandbox, whose similarity has no published variance, with the
largest sd a score in [0, 1] can have (0.5) split as τ-bench's is. Every plan carries the default
task × arm term (``published.TASK_MODE_SD``), a sensitivity line at 0 and twice it, what an
expected share of errored episodes costs, and for ToolSandbox the bound under the same model (all
of the variance in the task × arm term, which no number of trials reduces).
``--target-mde`` picks the trials Refine − Plan-first needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.folder.records import AA_MODE
from runtime.stats import design, published
from runtime.stats.design import Components

COMPARISONS = (("refine", "plan-first"), ("plan-first", "direct"), (AA_MODE, "plan-first"))
PLANNED_ERROR_RATE = 0.05
"""The share of errored episodes a dry run shows the cost of (the report's warning level)."""


@dataclass(frozen=True)
class Variance:
    components: Components
    label: str
    sd: float
    icc: float
    bound: Components | None = None
    """The worst case under the same model, where the environment has no published variance."""

    def at(self, task_mode_sd: float) -> Components:
        return Components.from_sd_icc(self.sd, self.icc, task_mode_sd)


def planning_variance(env: str) -> Variance:
    figures = published.figures("tau-airline")
    tm = published.TASK_MODE_SD
    if env in ("tau2", "tau3"):
        return Variance(Components.from_sd_icc(figures.sd, figures.icc[0], tm),
                        f"{figures.name} (sd {figures.sd:g}, icc {figures.icc[0]:g}; "
                        f"{figures.source.split(',')[0]}), task × arm sd {tm:g} assumed", figures.sd,
                        figures.icc[0])
    sd = published.BOUND_SD
    return Variance(Components.from_sd_icc(sd, figures.icc[0], tm),
                    f"no published variance: sd {sd:g} (the most a [0, 1] score has), icc "
                    f"{figures.icc[0]:g} as {figures.name}, task × arm sd {tm:g} assumed", sd, figures.icc[0],
                    bound=Components(0.0, sd * sd, 0.0))


def paper_effect(env: str) -> tuple[float, float, float, str] | None:
    """The APB paper's Refine − Plan-first gain on ``env`` as (low, high, scale, unit)."""
    name = {"tau2": "apb-table3-tau2", "toolsandbox": "apb-table3-toolsandbox"}.get(env)
    if name is None:
        return None
    figures = published.figures(name)
    low, high = figures.effect
    return low, high, 100.0 if env == "toolsandbox" else 1.0, figures.unit


def comparisons(modes: list[str]) -> list[tuple[str, str]]:
    return [(t, c) for t, c in COMPARISONS if t in modes and c in modes]


def compared_components(variance: Variance, treatment: str) -> Components:
    """The A/A arm is the same agent twice: it has no task × arm term of its own."""
    c = variance.components
    return Components(c.between_task + c.task_mode, 0.0, c.within_task) if treatment == AA_MODE else c


def chosen_trials(env: str, tasks: int, trials: int, target: float | None) -> tuple[int, str | None]:
    """The trials for ``target`` (Refine − Plan-first), or ``trials`` with the line saying why not."""
    if target is None or tasks < 2:
        return trials, None
    variance = planning_variance(env)
    need = design.trials_for(variance.components, tasks, target)
    if need is None:
        floor = design.mde(variance.components, tasks, design.MAX_TRIALS)
        return trials, (f"{env}: Δ {target:g} cannot be detected with {tasks} tasks at any number of "
                        f"trials (floor {floor:.3g}, set by the task × arm sd {published.TASK_MODE_SD:g} "
                        f"assumed); keeping {trials}")
    return need, f"{env}: --target-mde {target:g} takes {need} trials per task and arm with {tasks} tasks"


def plan_lines(env: str, tasks: int, trials: int, modes: list[str],
               paper: tuple[float, float, float, str] | None = None) -> list[str]:
    """Lines per comparison; ``paper``: the published (low, high, scale, unit) it looks for."""
    variance = planning_variance(env)
    lines = []
    scale = paper[2] if paper else 1.0
    for treatment, control in comparisons(modes):
        if tasks < 2:
            lines.append(f"{env} · {treatment} − {control}: {tasks} task: nothing can be detected")
            continue
        components = compared_components(variance, treatment)
        mde = design.mde(components, tasks, trials)
        lines.append(pair_line(env, tasks, trials, treatment, control, scale))
        if treatment == AA_MODE:
            continue
        low_tm, high_tm = published.TASK_MODE_SENSITIVITY
        at = [design.mde(variance.at(tm), tasks, trials) * scale for tm in (low_tm, high_tm)]
        errored = design.mde(components, tasks, trials, error_rate=PLANNED_ERROR_RATE) * scale
        lines.append(f"{env} · {treatment} − {control} sensitivity: task × arm sd {low_tm:g} → "
                     f"{at[0]:.3g}, {high_tm:g} → {at[1]:.3g}; with {PLANNED_ERROR_RATE:.0%} of "
                     f"episodes errored → {errored:.3g}")
        if variance.bound is not None:
            bound = design.mde(variance.bound, tasks, trials) * scale
            lines.append(f"{env} · {treatment} − {control} bound: at most {bound:.3g} whatever the "
                         f"trials (all of sd {variance.sd:g}² in the task × arm term)")
        if paper and (treatment, control) == ("refine", "plan-first"):
            low, high, scale, unit = paper
            if mde * scale > high:
                need = design.trials_for(components, tasks, high / scale)
                takes = f"{need} trials per task" if need else "more tasks than planned"
                lines.append(f"{env} · refine − plan-first cannot reach the paper's effect (+{low:g} to "
                             f"+{high:g} {unit}): detectable from {mde * scale:.3g}; +{high:g} takes {takes}")
            elif mde * scale > low:
                lines.append(f"{env} · refine − plan-first reaches only the top of the paper's effect "
                             f"(+{low:g} to +{high:g} {unit}): detectable from {mde * scale:.3g}")
    return lines


def pair_line(env: str, tasks: int, trials: int, treatment: str, control: str, scale: float = 1.0) -> str:
    """The detectable Δ of ``treatment`` − ``control``, two arms paired on the same tasks (Refine
    − Plan-first, Refine under two critique strategies, or the A/A arm), at the planning variance."""
    if tasks < 2:
        return f"{env} · {treatment} − {control}: {tasks} task: nothing can be detected"
    variance = planning_variance(env)
    mde = design.mde(compared_components(variance, treatment), tasks, trials)
    said = ("A/A: the same agent twice, the variance above without a task × arm term; one A/A Δ "
            "is one draw of the noise, not a floor" if treatment == AA_MODE else f"variance: {variance.label}")
    return (f"{env} · {treatment} − {control}: {tasks} tasks × {trials} trials → detectable Δ "
            f"{mde * scale:.3g} ({said}; α 0.05, power 80%)")