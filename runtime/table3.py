"""``python -m runtime.table3 --config configs/table3.yaml``: the whole Table 3 matrix.

Environments × tested models × tasks × trials × modes, resumable (one run folder, records are
skipped once finished), concurrent within each cell, cached. The task sample is drawn once by
the config's seed and written to ``<out>/sample.json``; a re-run reads it back. ``--dry-run``
prints the matrix, the episode and model-call counts and a cost estimate without calling a model.
When the matrix is done the report is built (``python -m runtime.report <out>`` rebuilds it).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Sequence

from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator,
                      model_validator)
from rich.markup import escape

from runtime.compose import config as cfg
from runtime.cli.args import add_budget_options, add_folder_options, command_parser
from runtime.cli.lifecycle import error_rate_exit, execute, finished_records, guarded, report_line
from runtime.compose.config import ENV_NAMES, RunConfig, RunSettings, UsageError
from runtime.llm.roles import ROLES, resolve
from runtime.folder.logs import quiet_loguru
from runtime.folder.store import write_json_atomic

if TYPE_CHECKING:  # rich, and what runs episodes, are imported once the arguments are read
    from rich.console import Console


class EnvironmentCell(BaseModel):
    model_config = ConfigDict(extra="forbid")

    env: Literal[ENV_NAMES]  # type: ignore[valid-type]
    domains: list[str] = Field(min_length=1)
    split: str | None = None
    tasks: int = Field(ge=1, description="Tasks drawn from the pooled domains by the seed.")
    max_steps: int | None = Field(default=None, ge=2)


class Published(BaseModel):
    model_config = ConfigDict(extra="forbid")

    low: float
    high: float
    scale: float = 1.0
    unit: str = ""


def _known_strategy(name: str) -> str:
    from critique.strategies import STRATEGIES

    if name not in STRATEGIES:
        raise ValueError(f"unknown critique strategy; accepted: {', '.join(STRATEGIES)}")
    return name


class Table3Config(RunSettings):
    """The matrix: the shared run settings, plus tested models × environments × modes, and the
    critique strategies Refine runs under."""

    name: str = "table3"
    out: Path = Path("runs/table3")
    modes: list[Literal["direct", "plan-first", "refine"]] = Field(
        default_factory=lambda: ["direct", "plan-first", "refine"], min_length=1)
    strategies: list[Annotated[str, AfterValidator(_known_strategy)]] | None = Field(
        default=None, min_length=1, description="The critique strategies Refine runs under, each "
        "revising the same p0 Plan-first executes (default: [strategy]). With anti-leak and sealed "
        "the report adds Refine(anti-leak) − Refine(sealed); leave sealed out to drop its arm.")
    models: list[str] = Field(min_length=1)
    environments: list[EnvironmentCell] = Field(min_length=1)
    published: dict[str, Published] = Field(default_factory=dict)
    until_decided: bool = Field(default=False, description="Run every cell in waves until each of "
        "its comparisons is decided (runtime.cli.waves); α 0.05 split evenly across the cells, "
        "and within a cell across its comparisons (Bonferroni); an arm stops once every comparison "
        "it is in is decided.")
    max_trials: int | None = Field(default=None, ge=1, le=1000, description="With until_decided: "
        "the most waves per cell (default 40); given, an α-spending boundary is planned over it.")
    margin: float | None = Field(default=None, gt=0, lt=1, description="With until_decided: the "
        "smallest effect of interest (default 0.03).")

    @field_validator("strategies")
    @classmethod
    def _each_once(cls, value: list[str] | None) -> list[str] | None:
        twice = sorted({s for s in value or [] if value.count(s) > 1})
        if twice:
            raise ValueError(f"names {', '.join(twice)} more than once; give each strategy once")
        return value

    @model_validator(mode="after")
    def _one_list_of_strategies(self) -> Table3Config:
        if self.strategies is None:
            return self
        if "strategy" not in self.model_fields_set:
            self.strategy = self.strategies[0]  # the run's own strategy, as run.json records it
        elif self.strategy not in self.strategies:
            raise ValueError(f"strategy {self.strategy!r} is not among strategies {self.strategies}; "
                             "give strategies alone")
        return self

    @property
    def refine_strategies(self) -> list[str]:
        """The strategies Refine runs under, the first being the run's own ``strategy``."""
        return list(self.strategies or [self.strategy])


def load_config(path: Path) -> Table3Config:
    data = cfg.load_yaml(path)
    try:
        return Table3Config.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        value = err.get("input")
        shown = "" if isinstance(value, (dict, list)) else f" = {value!r}"
        raise UsageError(f"{path}: {where}{shown}: {err['msg']}") from exc


def check_cells(config: Table3Config, source: Path, dry_run: bool, say) -> None:
    """Every environment cell's domains and split exist — before anything runs or is written.
    On a dry run an environment that is not set up yet is only reported."""
    from envs import EnvError, get_environment

    for i, cell in enumerate(config.environments):
        try:
            env = get_environment(cell.env)
            known = env.domains()
        except EnvError as exc:
            if dry_run:
                say(f"[yellow]{cell.env} is not available ({escape(str(exc))}); its domains are not checked[/]")
                continue
            raise UsageError(f"{source}: environments.{i}.env = {cell.env!r}: {exc}") from exc
        _check_domains(f"{source}: environments.{i}", cell, known, env.select)


def refuse_cells_early(config: Table3Config, source: Path) -> None:
    """:func:`check_cells` from the catalogues an earlier command remembered (``envs.catalogue``),
    before the benchmarks are imported; a domain nothing is remembered for waits for the full
    check."""
    from envs.registry import remembered_catalogue

    for i, cell in enumerate(config.environments):
        found = remembered_catalogue(cell.env)
        if found is not None:
            def select(selection, found=found):
                return found.select(selection) if found.knows(selection.domain) else []

            _check_domains(f"{source}: environments.{i}", cell, found.domains, select)


def _check_domains(where: str, cell, known: list[str], select) -> None:
    from envs import EnvError
    from envs.base import TaskSelection

    for domain in cell.domains:
        if domain not in known:
            raise UsageError(f"{where}.domains: unknown {cell.env} domain {domain!r}; "
                             f"accepted: {', '.join(known)}")
        try:
            select(TaskSelection(domain=domain, split=cell.split))
        except (EnvError, ValueError) as exc:
            raise UsageError(f"{where}.split = {cell.split!r}: {exc}") from exc


def read_sample(path: Path) -> dict[str, dict[str, list[str]]]:
    """A stored sample, checked: env → domain → list of task ids."""
    try:
        sample = json.loads(path.read_text(encoding="utf-8"))["sample"]
        ok = isinstance(sample, dict) and all(
            isinstance(domains, dict) and all(isinstance(ids, list) and all(isinstance(t, str) for t in ids)
                                              for ids in domains.values())
            for domains in sample.values())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path} cannot be read as a task sample ({type(exc).__name__}); move it "
                         "away to draw a new sample") from exc
    if not ok:
        raise UsageError(f"{path} is not a task sample (env → domain → task ids); move it away "
                         "to draw a new sample")
    return sample


def draw_sample(config: Table3Config, out: Path) -> dict[str, dict[str, list[str]]]:
    """env → domain → task ids, drawn once from the pooled domains and stored in the run folder."""
    path = out / "sample.json"
    if path.exists():
        return read_sample(path)
    from envs import get_environment
    from envs.base import TaskSelection

    sample: dict[str, dict[str, list[str]]] = {}
    for cell in config.environments:
        env = get_environment(cell.env)
        pool = [(d, t) for d in cell.domains
                for t in env.select(TaskSelection(domain=d, split=cell.split))]
        rng = random.Random(f"{config.seed}:{cell.env}")
        drawn = set(rng.sample(pool, min(cell.tasks, len(pool))))
        sample[cell.env] = {d: [t for dd, t in pool if dd == d and (dd, t) in drawn]
                            for d in cell.domains}
    write_json_atomic(path, {"seed": config.seed, "sample": sample})
    return sample


def cell_configs(config: Table3Config, sample: dict[str, dict[str, list[str]]]) -> list[RunConfig]:
    cells = [(cell, model, domain, ids) for cell in config.environments for model in config.models
             for domain, ids in sample.get(cell.env, {}).items() if ids]
    sequential = sequential_settings(config, len(cells))
    return [RunConfig(**{**config.shared(), "max_steps": cell.max_steps or config.max_steps,
                         "strategy": config.refine_strategies[0], **sequential},
                      env=cell.env, mode="all", domain=domain, task_ids=ids, model=model,
                      out=config.out, run_id=config.name)
            for cell, model, domain, ids in cells]


def sequential_settings(config: Table3Config, cells: int) -> dict[str, Any]:
    """A cell's ``--until-decided`` settings: its share of α, the waves, the margin."""
    if not config.until_decided:
        return {}
    from runtime.reports.decision import DEFAULT_MARGIN
    from runtime.stats.sequential import SHOWN_WAVES
    from runtime.validate import MAX_TRIALS

    if config.max_trials is not None and config.max_trials > SHOWN_WAVES:
        raise UsageError(f"max_trials {config.max_trials}: --until-decided's type-I error has been shown "
                         f"up to {SHOWN_WAVES} waves (bench/SEQUENTIAL.md); accepted: 1 to {SHOWN_WAVES}")
    waves = config.max_trials or MAX_TRIALS
    return {"until_decided": True, "max_trials": waves, "trials": waves, "planned_looks": config.max_trials,
            "margin": config.margin or DEFAULT_MARGIN, "decision_alpha": 0.05 / max(cells, 1)}


def arms(config: Table3Config) -> list[tuple[str, str | None]]:
    """Every arm a cell runs, as (mode, Refine's strategy or None): Refine once per strategy."""
    return [(mode, strategy) for mode in config.modes
            for strategy in (config.refine_strategies if mode == "refine" else [None])]


def estimate(config: Table3Config, sample: dict[str, dict[str, list[str]]]) -> dict[str, Any]:
    """Episodes, model calls and cost per environment × tested model, and per arm (``by_arm``:
    Refine under each strategy apart, since a sealed critique makes two calls)."""
    from runtime.llm.estimate import environment_judge, episode_estimate

    rows, unpriced, unpriced_roles = [], set(), {}
    by_arm: dict[str, dict[str, float]] = {}
    total_episodes = total_calls = 0
    total_cost = 0.0
    for cell in config.environments:
        n_tasks = sum(len(v) for v in sample.get(cell.env, {}).values())
        for model in config.models:
            roles = resolve({role: getattr(config, role) for role in ROLES if role != "model"}, model)
            episodes = n_tasks * config.trials * len(arms(config))
            calls = cost = 0.0
            for mode, strategy in arms(config):
                one = episode_estimate(mode, roles, config.prices, judge=not config.no_judge,
                                       auditor=not config.no_auditor,
                                       nl_judge=environment_judge(cell.env), strategy=strategy,
                                       sealed_writer=config.sealed_writer)
                calls += one.calls * n_tasks * config.trials
                cost += one.cost_usd * n_tasks * config.trials
                arm = by_arm.setdefault(arm_label(mode, strategy), {"episodes": 0, "model_calls": 0.0,
                                                                    "cost_usd": 0.0})
                arm["episodes"] += n_tasks * config.trials
                arm["model_calls"] += one.calls * n_tasks * config.trials
                arm["cost_usd"] += one.cost_usd * n_tasks * config.trials
                for role, models in one.unpriced.items():
                    unpriced |= models
                    unpriced_roles.setdefault(role, set()).update(models)
            rows.append({"env": cell.env, "model": model, "tasks": n_tasks, "episodes": episodes,
                         "model_calls": int(calls), "cost_usd": cost})
            total_episodes += episodes
            total_calls += int(calls)
            total_cost += cost
    return {"rows": rows, "episodes": total_episodes, "model_calls": total_calls,
            "cost_usd": total_cost, "by_arm": by_arm, "unpriced_models": sorted(unpriced),
            "unpriced_roles": {role: sorted(models) for role, models in unpriced_roles.items()}}


def arm_label(mode: str, strategy: str | None) -> str:
    return f"{mode} ({strategy})" if strategy else mode


def detectable_lines(config: Table3Config, sample) -> list[str]:
    """The minimum detectable Δ of every comparison the modes make, per environment."""
    from runtime.cli.plan import pair_line, plan_lines

    lines = []
    for cell in config.environments:
        tasks = sum(len(v) for v in sample.get(cell.env, {}).values())
        pub = config.published.get(cell.env)
        paper = (pub.low, pub.high, pub.scale, pub.unit or "") if pub else None
        lines += plan_lines(cell.env, tasks, config.trials, list(config.modes), paper)
        if free_text_arms(config):
            lines.append(pair_line(cell.env, tasks, config.trials, "refine(anti-leak)", "refine(sealed)",
                                   paper[2] if paper else 1.0))
    return lines


def free_text_arms(config: Table3Config) -> bool:
    """Whether the matrix runs Refine under both anti-leak and sealed: the comparison that says
    how much of Refine's gain needs the critic's free text."""
    return "refine" in config.modes and {"anti-leak", "sealed"} <= set(config.refine_strategies)


def target_trials(config: Table3Config, sample, target: float | None, say) -> Table3Config:
    """``--target-mde``: the most trials any environment's Refine − Plan-first needs for it."""
    if target is None:
        return config
    from runtime.cli.plan import chosen_trials

    chosen = []
    for cell in config.environments:
        tasks = sum(len(v) for v in sample.get(cell.env, {}).values())
        trials, line = chosen_trials(cell.env, tasks, config.trials, target)
        chosen.append(trials)
        if line:
            say(escape(line))
    return config.model_copy(update={"trials": max(chosen)})


def dry_run(config: Table3Config, sample, console: Console) -> int:
    """Print the matrix and its estimate against the budget; 2 when ``max_cost`` is set while a
    role has no price (the real run would refuse it), else 0."""
    from runtime.reports.fit import Col, FitTable

    columns = [Col("env", left=True), Col("tested model", "model", left=True), Col("tasks"),
               Col("episodes", "ep."), Col("model calls (est.)", "calls"),
               Col("cost USD (est.)", "USD")]
    est = estimate(config, sample)
    rows = [[r["env"], r["model"], str(r["tasks"]), str(r["episodes"]), str(r["model_calls"]),
             f"{r['cost_usd']:.2f}"] for r in est["rows"]]
    console.print(FitTable(f"{config.name}: {config.trials} trial(s) × arms "
                           f"{', '.join(arm_label(m, s) for m, s in arms(config))}", columns, rows, labels=2))
    console.print(escape(f"total: {est['episodes']} episodes, ~{est['model_calls']} model calls, "
                         f"~${est['cost_usd']:.2f} (litellm's prices and yours; per-call token "
                         "sizes are rough averages, so treat this as an order of magnitude)"))
    for name, arm in est["by_arm"].items():
        console.print(escape(f"arm {name}: {arm['episodes']} episodes, ~{int(arm['model_calls'])} "
                             f"model calls, ~${arm['cost_usd']:.2f}"))
    for line in detectable_lines(config, sample):
        console.print(escape(line))
    if config.until_decided:
        for line in sequential_lines(config, sample, est):
            console.print(escape(line), soft_wrap=True)
    for role, models in est["unpriced_roles"].items():
        console.print(f"[bold red]UNPRICED[/] {escape(role)}: {escape(', '.join(models))} — its "
                      "calls are counted as $0 here and in the run; give --price "
                      f"{escape(models[0])}=IN/OUT (USD per million tokens; =0/0 if it is free)")
    if config.max_cost is None:
        return 0
    if est["unpriced_roles"]:
        print(f"error: --max-cost {config.max_cost:g}: no price known for "
              f"{', '.join(est['unpriced_models'])}; give --price MODEL=IN/OUT for each, or "
              "prices: in the config", file=sys.stderr)
        return 2
    share = est["cost_usd"] / config.max_cost
    verdict = ("within it" if share <= 1 else
               f"over it: the run would stop after about {min(1.0, 1 / share):.0%} of the episodes")
    console.print(escape(f"budget: ${config.max_cost:g} against an estimate of "
                         f"${est['cost_usd']:.2f} ({share:.0%} of the budget) — {verdict}"))
    return 0


def sequential_lines(config: Table3Config, sample, est: dict[str, Any]) -> list[str]:
    """``--until-decided``'s price beside the fixed design's: expected episodes and dollars (every
    comparison at the paper's lower figure, and all at Δ 0) and the worst case (every cell to
    max_trials), from ``runtime.stats.sequential_plan``'s simulation under the planner's
    assumptions. A rough figure: every arm of a cell is taken to run as long as Refine −
    Plan-first at that Δ does (an arm stops once all its comparisons are decided)."""
    from runtime.cli.plan import PLANNED_ERROR_RATE
    from runtime.cli.waves import PLANNING
    from runtime.reports.decision import planned as planned_pairs
    from runtime.stats import published
    from runtime.stats.sequential import SHOWN_TASKS, planned_looks
    from runtime.stats.sequential_plan import expected_waves

    from functools import lru_cache

    @lru_cache(maxsize=None)  # the models of one environment share a simulation
    def expected(tasks, waves, margin, delta, mean, icc, looks, alpha):
        return expected_waves(tasks=tasks, max_waves=waves, margin=margin, delta=delta, mean=mean, icc=icc,
                              task_arm_sd=published.TASK_MODE_SD, error_rate=PLANNED_ERROR_RATE,
                              experiments=200, looks=looks, alpha=alpha)

    cells = [(cell, model, domain, ids) for cell in config.environments for model in config.models
             for domain, ids in sample.get(cell.env, {}).items() if ids]
    settings = sequential_settings(config, len(cells))
    waves, margin = settings["max_trials"], settings["margin"]
    labels = {arm_label(m, s): (m if m != "refine" else (f"refine:{s}" if s != config.refine_strategies[0] else "refine"))
              for m, s in arms(config)}
    pairs = planned_pairs(list(labels.values()))
    per_arm_cost = {label: a["cost_usd"] / a["episodes"] if a["episodes"] else 0.0 for label, a in est["by_arm"].items()}
    fixed_cost = est["cost_usd"]
    fixed_episodes = est["episodes"]
    out = [f"--until-decided: {len(cells)} cells × {len(pairs)} comparisons, α 0.05 split evenly "
           f"({0.05 / max(len(cells) * len(pairs), 1):.2g} each, Bonferroni), margin ±{margin:g}, at most "
           f"{waves} waves; simulated with task × arm sd {published.TASK_MODE_SD:g} and "
           f"{PLANNED_ERROR_RATE:.0%} errored, 200 runs per cell:"]
    totals = {"planned": [0.0, 0.0], "null": [0.0, 0.0], "worst": [0.0, 0.0]}
    for cell, model, domain, ids in cells:
        tasks = len(ids)
        if tasks < SHOWN_TASKS:
            out.append(f"  {cell.env}/{domain}: {tasks} tasks: refused (shown from {SHOWN_TASKS})")
            continue
        pub = config.published.get(cell.env)
        delta = pub.low / pub.scale if pub else 2 * margin
        mean, icc, _ = PLANNING.get(cell.env, (0.5, 0.2, ""))
        looks = planned_looks(tasks, config.max_trials)
        each = 0.05 / (len(cells) * max(len(pairs), 1))
        for case, at in (("planned", delta), ("null", 0.0)):
            found = expected(tasks, waves, margin, at, mean, icc, looks, each)
            for label, arm in labels.items():
                if any(arm in p for p in pairs) or not pairs:
                    totals[case][0] += found.mean_waves * tasks
                    totals[case][1] += found.mean_waves * tasks * per_arm_cost.get(label, 0.0)
        for label in labels:
            totals["worst"][0] += waves * tasks
            totals["worst"][1] += waves * tasks * per_arm_cost.get(label, 0.0)
    for case, name in (("planned", "every comparison at the paper's lower figure"), ("null", "every comparison at Δ 0"),
                       ("worst", f"worst case, every cell to {waves} waves")):
        episodes, cost = totals[case]
        out.append(f"  {name}: ~{episodes:,.0f} episodes, ~${cost:,.2f}")
    out.append(f"  fixed design ({config.trials} trial(s)): {fixed_episodes:,} episodes, ~${fixed_cost:,.2f}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = command_parser("python -m runtime.table3", __doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--out", type=Path, help="run folder (overrides the config's out)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the matrix, its cost and the detectable Δ of each comparison; call no model")
    parser.add_argument("--target-mde", type=float, metavar="DELTA",
                        help="choose the trials so Refine − Plan-first can detect this Δ (80%% power, α 0.05)")
    parser.add_argument("--until-decided", action="store_true", default=None,
                        help="run every cell in waves until each comparison is decided (config key until_decided)")
    parser.add_argument("--max-trials", type=int, metavar="N", help="with --until-decided: the most waves (max_trials)")
    parser.add_argument("--margin", type=float, metavar="DELTA",
                        help="with --until-decided: the smallest effect of interest (margin)")
    add_budget_options(parser)
    add_folder_options(parser)
    args = parser.parse_args(argv)
    from rich.console import Console

    console = Console()
    quiet_loguru()

    def body() -> int:
        config = with_options(load_config(args.config), args)
        refuse_cells_early(config, args.config)  # before the heavy imports
        from runtime.compose.build import build_run, open_folder
        from runtime.folder.store import RunStore

        check_cells(config, args.config, args.dry_run, console.print)
        if args.target_mde is not None and not args.target_mde > 0:
            raise UsageError(f"--target-mde {args.target_mde:g}: accepted: a Δ > 0")
        if args.dry_run:
            sample = _sample_preview(config)
            return dry_run(target_trials(config, sample, args.target_mde, console.print), sample, console)
        open_folder(config.out, "--out", RunStore)
        sample = draw_sample(config, config.out)
        config = target_trials(config, sample, args.target_mde, console.print)
        runs = [build_run(c, console.print, modes=list(config.modes), strategies=config.refine_strategies)
                for c in cell_configs(config, sample)]
        run_one = None
        if config.until_decided:  # before any episode: the settings fixed at a first look win
            from runtime.cli.waves import fixed_settings, run_until_decided

            runs = [fixed_settings(r, margin=config.margin, max_trials=config.max_trials) for r in runs]
            run_one = run_until_decided
        write_json_atomic(config.out / "table3.json", json.loads(config.model_dump_json()))

        def finish() -> int:
            from runtime.reports import report

            records = [r for run in runs for r in finished_records(run)]
            if not config.no_report:
                console.print(report_line(report.build(config.out)), soft_wrap=True)
            return error_rate_exit(records, config.max_error_rate)

        return execute(runs, console, finish, run_one=run_one)

    return guarded(body)


def with_options(config: Table3Config, args) -> Table3Config:
    """The config with the command line's --out, --max-cost, --price and --no-report."""
    update: dict[str, Any] = {}
    if args.out:
        update["out"] = args.out
    if args.no_report:
        update["no_report"] = True
    for name in ("until_decided", "max_trials", "margin"):
        if getattr(args, name, None) is not None:
            update[name] = getattr(args, name)
    if not (update.get("until_decided") or config.until_decided):
        given = [f"--{n.replace('_', '-')}" for n in ("max_trials", "margin") if update.get(n) is not None]
        if given:
            raise UsageError(f"{' and '.join(given)}: only with --until-decided (or until_decided: true)")
    values = config.model_dump()
    if args.max_cost is not None:
        values["max_cost"] = args.max_cost
    values = cfg.with_price_options(values, args.price)
    try:
        checked = Table3Config.model_validate({**values, **update})
    except ValidationError as exc:
        err = exc.errors()[0]
        raise UsageError(f"option {'.'.join(str(p) for p in err['loc'])}: {err['msg']}") from exc
    return checked


def _sample_preview(config: Table3Config) -> dict[str, dict[str, list[str]]]:
    """For --dry-run: the stored sample if there is one, else a fresh draw not written anywhere."""
    path = config.out / "sample.json"
    if path.is_file():
        return read_sample(path)
    from envs import get_environment
    from envs.base import TaskSelection

    sample = {}
    for cell in config.environments:
        try:
            env = get_environment(cell.env)
            pool = [(d, t) for d in cell.domains for t in env.select(TaskSelection(domain=d, split=cell.split))]
            drawn = random.Random(f"{config.seed}:{cell.env}").sample(pool, min(cell.tasks, len(pool)))
        except Exception:  # noqa: BLE001 - an env not set up yet still gets its planned size
            drawn = [("(not set up)", str(i)) for i in range(cell.tasks)]
        sample[cell.env] = {}
        for d, t in drawn:
            sample[cell.env].setdefault(d, []).append(t)
    return sample


if __name__ == "__main__":
    from runtime.cli.process_end import end

    end(main())  # without the interpreter's seconds-long teardown
