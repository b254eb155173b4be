"""What a planned run can detect, for the dry runs of ``validate`` and ``table3``.

Each comparison the modes make (Refine − Plan-first, Plan-first − Direct) gets its minimum
detectable Δ at the planned tasks × trials (``runtime.stats.design``), from the variance an
environment is planned with: τ²-bench with τ-bench's published figures at their conservative end
(``runtime.stats.published``, ``tau-airline`` at ICC 0.405); ToolSandbox, whose similarity has no
published variance, with the bound of any score in [0, 1] (sd 0.5, no task correlation), so its
detectable Δ is an upper bound. ``--target-mde`` picks the trials Refine − Plan-first needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from runtime.stats import design, published
from runtime.stats.design import Components

COMPARISONS = (("refine", "plan-first"), ("plan-first", "direct"))


@dataclass(frozen=True)
class Variance:
    components: Components
    label: str
    upper_bound: bool = False


def planning_variance(env: str) -> Variance:
    if env == "tau2":
        figures = published.figures("tau-airline")
        return Variance(Components.from_sd_icc(figures.sd, figures.icc[0]),
                        f"{figures.name} (sd {figures.sd:g}, icc {figures.icc[0]:g}; {figures.source.split(',')[0]})")
    return Variance(Components.from_sd_icc(0.5, 0.0), "the bound of a score in [0, 1] (sd 0.5, icc 0): "
                    "an upper bound", upper_bound=True)


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


def chosen_trials(env: str, tasks: int, trials: int, target: float | None) -> tuple[int, str | None]:
    """The trials for ``target`` (Refine − Plan-first), or ``trials`` with the line saying why not."""
    if target is None or tasks < 2:
        return trials, None
    variance = planning_variance(env)
    need = design.trials_for(variance.components, tasks, target)
    if need is None:
        return trials, (f"{env}: Δ {target:g} cannot be detected with {tasks} tasks at any number of "
                        f"trials; keeping {trials}")
    return need, f"{env}: --target-mde {target:g} takes {need} trials per task and arm with {tasks} tasks"


def plan_lines(env: str, tasks: int, trials: int, modes: list[str],
               paper: tuple[float, float, float, str] | None = None) -> list[str]:
    """One line per comparison; ``paper``: the published (low, high, scale, unit) it looks for."""
    variance = planning_variance(env)
    lines = []
    for treatment, control in comparisons(modes):
        if tasks < 2:
            lines.append(f"{env} · {treatment} − {control}: {tasks} task: nothing can be detected")
            continue
        mde = design.mde(variance.components, tasks, trials)
        scale = paper[2] if paper else 1.0
        lines.append(pair_line(env, tasks, trials, treatment, control, scale))
        if paper and (treatment, control) == ("refine", "plan-first"):
            low, high, scale, unit = paper
            if mde * scale > high:
                need = design.trials_for(variance.components, tasks, high / scale)
                takes = f"{need} trials per task" if need else "more tasks than planned"
                lines.append(f"{env} · refine − plan-first cannot reach the paper's effect (+{low:g} to "
                             f"+{high:g} {unit}): detectable from {mde * scale:.3g}; +{high:g} takes {takes}")
            elif mde * scale > low:
                lines.append(f"{env} · refine − plan-first reaches only the top of the paper's effect "
                             f"(+{low:g} to +{high:g} {unit}): detectable from {mde * scale:.3g}")
    return lines


def pair_line(env: str, tasks: int, trials: int, treatment: str, control: str, scale: float = 1.0) -> str:
    """The detectable Δ of ``treatment`` − ``control``, two arms paired on the same tasks (Refine
    − Plan-first, or Refine under two critique strategies), at the planning variance."""
    if tasks < 2:
        return f"{env} · {treatment} − {control}: {tasks} task: nothing can be detected"
    variance = planning_variance(env)
    mde = design.mde(variance.components, tasks, trials)
    bound = "at most " if variance.upper_bound else ""
    return (f"{env} · {treatment} − {control}: {tasks} tasks × {trials} trials → detectable Δ "
            f"{bound}{mde * scale:.3g} (variance: {variance.label}; α 0.05, power 80%)")
