"""``python -m runtime.power``: before paying for a run, whether it can see the effect.

    python -m runtime.power --tasks 50 --trials 3 --sd 0.5 --icc 0.45
    python -m runtime.power --published tau-airline --target-mde 0.05 --model openai/gpt-4o
    python -m runtime.power --from runs/pilot --compare refine,plan-first

A paired comparison of two arms on the same tasks (Refine vs Plan-first, strategy vs strategy,
…), Δ clustered by task (``runtime.stats.design``). Prints the minimum detectable Δ at α and
power, or with ``--target-mde`` the trials (or tasks) it takes, and with ``--model`` or
``--episode-cost`` what that costs. The variance comes from ``--sd``/``--icc``, a run folder's
records (``--from``, components estimated by ``runtime.stats.components``) or published figures
(``--published``; ``--list-published`` names them). Bad input exits with 2.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from runtime.cli.args import command_parser
from runtime.cli.lifecycle import guarded
from runtime.compose.config import UsageError


def parser():
    p = command_parser("python -m runtime.power", __doc__.split("\n\n")[0].split(": ", 1)[1])
    p.add_argument("--tasks", type=int, help="tasks in the comparison (both arms run each)")
    p.add_argument("--trials", type=int, help="trials per task and arm")
    p.add_argument("--sd", type=float, help="per-episode standard deviation of the score")
    p.add_argument("--icc", type=float, help="intra-task correlation: of two trials of one task in one arm")
    p.add_argument("--task-mode-sd", type=float, default=None,
                   help="sd of each arm's own task × arm term; a task's effect (treatment − control) "
                   "then varies around the mean with sd √2 × this (default 0.1, an assumption no "
                   "published figure replaces yet; plans are also shown at 0 and 0.2)")
    p.add_argument("--error-rate", type=float, default=None, metavar="SHARE",
                   help="expected share of episodes that error (an errored episode loses its pair; "
                   "default: the --from folder's own share, else 0)")
    p.add_argument("--alpha", type=float, default=0.05, help="two-sided level (default 0.05)")
    p.add_argument("--power", type=float, default=0.80, help="power (default 0.80)")
    p.add_argument("--target-mde", type=float, metavar="DELTA",
                   help="the Δ to detect: prints the trials per task (or, without --tasks, the tasks) it takes")
    p.add_argument("--from", dest="run", type=Path, metavar="RUN",
                   help="estimate the variance from this run folder's records")
    p.add_argument("--compare", default="refine,plan-first", metavar="TREATMENT,CONTROL",
                   help="with --from: the two arms (summary.json's arm names; default refine,plan-first)")
    p.add_argument("--published", metavar="NAME", help="plan with published figures (--list-published)")
    p.add_argument("--list-published", action="store_true", help="name the built-in figures and exit")
    p.add_argument("--model", help="price the episodes with this tested model in every role")
    p.add_argument("--price", action="append", metavar="MODEL=IN/OUT",
                   help="USD per million prompt/completion tokens for a model litellm does not price")
    p.add_argument("--episode-cost", type=float, metavar="USD", help="USD one episode costs (instead of --model)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return guarded(lambda: run(args))


def run(args) -> int:
    from runtime.stats import design, published

    if args.list_published:
        for f in published.FIGURES.values():
            print(f"{f.name}: {f.description} — {f.source}; date {f.date}")
        return 0
    figures = _figures(args.published)
    given = [name for name, on in (("--from", args.run), ("--published", figures and figures.sd_icc()),
                                    ("--sd/--icc", args.sd is not None or args.icc is not None)) if on]
    if len(given) > 1:
        raise UsageError(f"{' and '.join(given)}: give one source of variance")
    options = {"--alpha": args.alpha, "--power": args.power}
    for name, value in options.items():
        if not 0 < value < 1:
            raise UsageError(f"{name} {value:g}: accepted: a number between 0 and 1")
    for name, value in (("--tasks", args.tasks), ("--trials", args.trials)):
        if value is not None and value < (2 if name == "--tasks" else 1):
            raise UsageError(f"{name} {value}: accepted: an integer ≥ {2 if name == '--tasks' else 1}")
    if args.target_mde is not None and not args.target_mde > 0:
        raise UsageError(f"--target-mde {args.target_mde:g}: accepted: a Δ > 0")
    if args.error_rate is not None and not 0 <= args.error_rate < 1:
        raise UsageError(f"--error-rate {args.error_rate:g}: accepted: a share of episodes in [0, 1)")
    sources = _sources(args)
    tasks, trials = args.tasks, args.trials
    if figures is not None:
        print(f"published figures {figures.name}: {figures.description}")
        print(f"  source: {figures.source}; date {figures.date}")
        if figures.notes:
            print(f"  {figures.notes}")
        tasks = tasks or figures.tasks
        if trials is None and args.target_mde is None:
            trials = figures.trials
    estimated = None
    if args.run is not None:
        estimated = _folder_design(args)
        tasks = tasks or estimated[0]
        trials = trials or estimated[1]
    if args.target_mde is None and (tasks is None or trials is None):
        raise UsageError("give --tasks and --trials (or --published / --from for them), or --target-mde")
    if args.target_mde is not None and tasks is None and trials is None:
        raise UsageError("--target-mde: give --tasks (the trials are found) or --trials (the tasks are found)")
    error_rate = _error_rate(args)
    for label, components, sensitivity in sources:
        print(f"variance ({label}): between-task {components.between_task:.4f}, task × arm "
              f"{components.task_mode:.4f}, within-task {components.within_task:.4f} "
              f"(per-episode sd {components.total ** 0.5:.3f}, intra-task correlation {components.icc:.2f})")
        _answer(args, design, components, tasks, trials, figures, error_rate, sensitivity)
    return 0


def _error_rate(args) -> float:
    if args.error_rate is not None:
        return args.error_rate
    if args.run is not None:
        return _estimate(args)[1]
    return 0.0


def _sources(args):
    """(label, components, sensitivity) per variance: ``sensitivity`` builds the components at
    another task × arm sd, or is None where the variance was measured."""
    from runtime.stats import published

    tm = published.TASK_MODE_SD if args.task_mode_sd is None else args.task_mode_sd
    if args.task_mode_sd is not None and args.task_mode_sd < 0:
        raise UsageError(f"--task-mode-sd {args.task_mode_sd:g}: accepted: a standard deviation ≥ 0")
    said = "given" if args.task_mode_sd is not None else "assumed (--task-mode-sd)"
    figures = _figures(args.published)
    if figures is not None and (figures.sd_icc() or (args.run is None and args.sd is None and args.icc is None)):
        pairs = figures.sd_icc()
        if not pairs:
            raise UsageError(f"--published {args.published}: these figures give no variance "
                             f"({figures.notes})")
        return [(f"{figures.name}, icc {icc:g}, task × arm sd {tm:g} {said}", _components(sd, icc, tm),
                 lambda t, sd=sd, icc=icc: _components(sd, icc, t)) for sd, icc in pairs]
    if args.run is not None:
        found = _estimate(args)[0]
        if found is None:  # no variance observed: plan with the published default instead
            f = published.figures("tau-airline")
            return [(f"no variance observed in {args.run}: planned with {f.name} (icc {f.icc[0]:g}) and "
                     f"task × arm sd {tm:g} instead", _components(f.sd, f.icc[0], tm),
                     lambda t: _components(f.sd, f.icc[0], t))]
        return [(f"the paired Δ of {args.run}, as its report reads it", found, None)]
    if args.sd is None or args.icc is None:
        raise UsageError("give --sd and --icc, --published NAME or --from RUN for the variance")
    return [(f"sd {args.sd:g}, icc {args.icc:g}, task × arm sd {tm:g} {said}", _components(args.sd, args.icc, tm),
             lambda t: _components(args.sd, args.icc, t))]


def _folder_design(args) -> tuple[int, int]:
    """The folder's own tasks and trials per task (the most any task has)."""
    from runtime.folder.store import RunStore
    from runtime.reports.summary import frame

    _estimate(args)
    df = frame(RunStore(args.run).records())
    part = df[df["arm"].isin([a.strip() for a in args.compare.split(",")])]
    tasks = int(part[["domain", "task_id"]].drop_duplicates().shape[0])
    trials = int(part.groupby(["domain", "task_id", "arm"]).size().max()) if len(part) else 1
    return max(tasks, 2), max(trials, 1)


def _figures(name):
    from runtime.stats import published

    if not name:
        return None
    try:
        return published.figures(name)
    except ValueError as exc:
        raise UsageError(f"--published {name}: {exc}") from exc


def _components(sd, icc, tm):
    from runtime.stats.design import Components

    try:
        return Components.from_sd_icc(sd, icc, tm)
    except ValueError as exc:
        raise UsageError(f"--sd/--icc/--task-mode-sd: {exc}") from exc


_ESTIMATES: dict = {}


def _estimate(args):
    """(the components the folder's paired Δ implies, or None when it shows no variance; its
    share of errored episodes), read once. The components are those its report's detectable Δ
    uses (``design.run_components``), so both give one figure for one comparison."""
    key = (str(args.run), args.compare)
    if key in _ESTIMATES:
        return _ESTIMATES[key]
    from runtime.folder.records import RECORD_MODES
    from runtime.folder.store import RECORDS, RunStore
    from runtime.reports.stats import task_delta
    from runtime.reports.summary import frame
    from runtime.stats.components import estimate

    if not (args.run / RECORDS).is_file():
        raise UsageError(f"--from {args.run}: no {RECORDS} there; give a run folder")
    arms = tuple(a.strip() for a in args.compare.split(",") if a.strip())
    df = frame(RunStore(args.run).records())
    known = sorted(set(df["arm"])) if len(df) else []
    missing = [a for a in arms if a not in known]
    if not 1 <= len(arms) <= 2 or missing:
        raise UsageError(f"--compare {args.compare}: accepted: one or two of the folder's arms "
                         f"({', '.join(known) or 'none'}; modes are {', '.join(RECORD_MODES)})")
    compared = df[df["arm"].isin(arms)]
    errored = float((compared["status"] == "error").mean()) if len(compared) else 0.0
    ok = df[df["status"] == "ok"]
    try:
        found = estimate(ok, arms)
    except ValueError as exc:
        raise UsageError(f"--from {args.run}: {exc}") from exc
    lo, hi = found.low, found.high
    print(f"estimated from {args.run} ({' vs '.join(arms)}; {found.tasks} tasks, {found.trials:.1f} "
          f"trials per task and arm; method of moments, {found.confidence:.0%} intervals from "
          "resampling tasks):")
    for name, label in (("between_task", "between-task"), ("task_mode", "task × arm"), ("within_task", "within-task")):
        print(f"  {label}: {getattr(found.components, name):.4f} "
              f"[{getattr(lo, name):.4f}, {getattr(hi, name):.4f}]")
    for note in found.notes:
        print(f"  note: {note}")
    print(f"  errored: {errored:.1%} of the compared episodes")
    components = own = None
    if len(arms) == 2:
        d = task_delta(df[df["arm"] == arms[0]], df[df["arm"] == arms[1]])
        if d is not None and d.components is not None:
            print(f"this folder's Δ {d.mean:+.3f} [{d.low:+.3f}, {d.high:+.3f}] over {d.n} tasks "
                  f"({d.pairs} pairs): detectable ±{d.mde:.3f} (the figure its report gives)")
            if d.floor_only or d.components.within_task == 0:
                print("  note: no variance observed in this folder (every pair the same, or no "
                      "trial-to-trial variation): its figures come from the interval's floor, "
                      "and plans use the published default instead")
            else:  # between-task cancels in Δ: the moment estimate's, for the variance line only
                components, own = replace(d.components, between_task=found.components.between_task), d
    else:
        components = found.components
    _ESTIMATES[key] = (components, errored, own)
    return components, errored, own


def _answer(args, design, components, tasks, trials, figures, error_rate, sensitivity) -> None:
    alpha, power = args.alpha, args.power
    if args.target_mde is not None:
        target = args.target_mde
        if tasks is not None:
            need = design.trials_for(components, tasks, target, alpha=alpha, power=power, error_rate=error_rate)
            if need is None:
                floor = design.mde(components, tasks, design.MAX_TRIALS, alpha=alpha, power=power)
                print(f"Δ {target:g} cannot be detected with {tasks} tasks at any number of trials "
                      f"(the floor is {floor:.3f}, set by the task × arm term): add tasks")
                return
            trials = need
            print(f"to detect Δ {target:g} with {tasks} tasks: {trials} trials per task and arm")
        else:
            need = design.tasks_for(components, trials, target, alpha=alpha, power=power, error_rate=error_rate)
            if need is None:
                print(f"Δ {target:g} cannot be detected at {trials} trials with any number of tasks")
                return
            tasks = need
            print(f"to detect Δ {target:g} at {trials} trials: {tasks} tasks")
    p = design.plan(components, tasks, trials, alpha=alpha, power=power, error_rate=error_rate)
    errors = f"; {error_rate:.1%} of episodes errored" if error_rate else ""
    own = _estimate(args)[2] if args.run is not None and sensitivity is None else None
    if own is not None and args.tasks is None and args.trials is None and args.target_mde is None \
            and alpha == design.ALPHA and power == design.POWER:
        # the folder's own design: the figure its report gives, from its own pairs and errors
        print(f"design: the folder's own, {own.n} tasks, {own.pairs} episode pairs; α {alpha:g}, "
              f"power {power:.0%}; standard error of Δ {own.se:.4f}")
        print(f"minimum detectable Δ: {own.mde:.3f}")
        _cost(args, tasks, trials)
        return
    print(f"design: {tasks} tasks × {trials} trials per arm, paired by task and trial; α {alpha:g}, "
          f"power {power:.0%}{errors}; standard error of Δ {p.se:.4f}")
    print(f"minimum detectable Δ: {p.mde:.3f}")
    if error_rate:
        clean = design.plan(components, tasks, trials, alpha=alpha, power=power)
        print(f"errors cost: {clean.mde:.3f} without errors; power at {clean.mde:.3f} falls from "
              f"{clean.power_at(clean.mde):.0%} to {p.power_at(clean.mde):.0%}")
    if sensitivity is not None:
        from runtime.stats import published

        at = [(tm, design.mde(sensitivity(tm), tasks, trials, alpha=alpha, power=power, error_rate=error_rate))
              for tm in published.TASK_MODE_SENSITIVITY]
        print("sensitivity: " + ", ".join(f"task × arm sd {tm:g} → {m:.3f}" for tm, m in at))
    if figures is not None and figures.effect is not None:
        low, high = figures.effect
        if p.mde > high:
            print(f"cannot reach the paper's effect: detectable from {p.mde:.3f}, the paper's Δ is "
                  f"+{low:g} to +{high:g} {figures.unit}")
        else:
            print(f"power at the paper's effect: {p.power_at(low):.0%} at +{low:g}, "
                  f"{p.power_at(high):.0%} at +{high:g}")
    _cost(args, tasks, trials)


def _cost(args, tasks: int, trials: int) -> None:
    episodes = 2 * tasks * trials
    if args.episode_cost is not None:
        if args.episode_cost < 0:
            raise UsageError(f"--episode-cost {args.episode_cost:g}: accepted: USD ≥ 0")
        print(f"episodes: {episodes} (2 arms); cost ${episodes * args.episode_cost:,.2f} at "
              f"${args.episode_cost:g} an episode")
        return
    if not args.model:
        print(f"episodes: {episodes} (2 arms)")
        return
    from runtime.compose.config import with_price_options
    from runtime.llm.estimate import episode_estimate
    from runtime.llm.prices import price_of
    from runtime.llm.roles import ROLES

    prices = with_price_options({}, args.price).get("prices", {})
    roles = dict.fromkeys(ROLES, args.model)
    arms = [episode_estimate(mode, roles, prices) for mode in _compared_modes(args)]
    unpriced = sorted({m for a in arms for models in a.unpriced.values() for m in models})
    if unpriced:
        raise UsageError(f"--model {args.model}: no price known; give --price {args.model}=IN/OUT "
                         "(USD per million prompt/completion tokens)")
    price = price_of(args.model, prices)
    cost = tasks * trials * sum(a.cost_usd for a in arms)
    print(f"episodes: {episodes} (2 arms); cost ~${cost:,.2f} with {args.model} in every role at "
          f"${price.input:g}/${price.output:g} per million tokens (rough per-episode token sizes, "
          "as table3 --dry-run)")


def _compared_modes(args) -> list[str]:
    from runtime.folder.records import RECORD_MODES

    modes = [a.split(":")[0] for a in args.compare.split(",")]
    return [m if m in RECORD_MODES else "refine" for m in modes][:2] or ["refine", "plan-first"]


if __name__ == "__main__":
    from runtime.cli.process_end import end

    end(main())
