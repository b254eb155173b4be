"""``python -m runtime.validate``: run Direct, Plan-first and/or Refine on an environment's tasks.

    python -m runtime.validate --env tau2 --mode refine --domain airline --model openai/gpt-4o

Writes one JSON record per (task, mode, model, trial) to ``<out>/records.jsonl``, a
``summary.json``, and the report with its episode explorer (``--no-report`` skips them); the
same command on the same run folder resumes. Bad input exits with 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from envs.registry import SANDBOXES, names
from runtime.compose import config as cfg
from runtime.cli.args import add_budget_options, add_folder_options, command_parser
from runtime.cli.lifecycle import guarded
from runtime.compose.config import RunConfig, UsageError
from runtime.compose.preflight import refuse_early
from runtime.folder.records import AA_MODE, MODES, RECORD_MODES


def mode_option(text: str) -> str:
    """``--mode``: one mode, ``all``, or comma-separated modes (each once)."""
    names = [m.strip() for m in text.split(",")]
    accepted = [*RECORD_MODES, "all"]
    for name in names:
        if name not in accepted or (name == "all" and len(names) > 1):
            raise argparse.ArgumentTypeError(
                f"invalid choice: {name!r} (choose from {', '.join(repr(m) for m in accepted)}; "
                "several modes comma-separated)")
    if len(set(names)) < len(names):
        raise argparse.ArgumentTypeError(f"{text!r}: give each mode once")
    return text

# What runs episodes (litellm, LangGraph, τ², rich's progress) is imported in ``main`` once the
# arguments are read, so --help, --version and a bad option answer at once.


def parser() -> argparse.ArgumentParser:
    p = command_parser(
        "python -m runtime.validate",
        "Does critiquing a plan make the agent execute better? Runs the chosen modes "
        "on real benchmark tasks and records the benchmark's own score.",
    )
    p.add_argument("--config", type=Path, help="YAML file with any of the options below")
    p.add_argument("--env", choices=names())
    p.add_argument("--mode", type=mode_option, metavar="MODE[,MODE...]",
                   help=f"{', '.join(MODES)}, all (the three), or comma-separated modes; "
                   f"{AA_MODE}: Plan-first again with independent trial seeds, the A/A arm whose Δ "
                   "is the run's noise floor (e.g. --mode plan-first,refine,plan-first-aa)")
    p.add_argument("--domain", help="τ²-bench domain: airline, retail, telecom, mock (default "
                   "airline); τ³ (--env tau3) also banking_knowledge")
    p.add_argument("--split", help="task split, e.g. base, train, test (default base)")
    p.add_argument("--retrieval", help="τ³ banking_knowledge's retrieval configuration, offline: "
                   "bm25 (default), bm25_grep, grep_only, full_kb, golden_retrieval, no_knowledge")
    p.add_argument("--embeddings-api-base", help="embeddings endpoint for τ³ banking's dense "
                   "retrieval (openai_embeddings*, qwen_embeddings*, alltools*), through litellm; "
                   "its key from the environment")
    p.add_argument("--embeddings-model", help="litellm embeddings model for them (default: the "
                   "release's, e.g. openai/text-embedding-3-large)")
    p.add_argument("--tasks", help="a count (a seeded sample of the split) or comma-separated task "
                   "ids; '7' is a count, '7,' the task with id 7")
    p.add_argument("--task-ids", help="comma-separated task ids")
    p.add_argument("--trials", type=int)
    p.add_argument("--seed", type=int)
    p.add_argument("--seeding", choices=["runtime", "tau2"],
                   help="trial seeds from --seed: the runtime's (default) or tau2 run's, so "
                   "'--seeding tau2 --seed 300' sends the seeds 'tau2 run --seed 300' sends")
    p.add_argument("--model", help="tested model (planner, reviser, executor), a litellm model name")
    p.add_argument("--critic-model", help="critic model (default: --model)")
    p.add_argument("--judge-model", help="plan judge model (default: --critic-model)")
    p.add_argument("--auditor-model", help="leak auditor model: reads each guarded critique for "
                   "leaks the rules miss (default: --judge-model)")
    p.add_argument("--user-model", help="user simulator model (default: --model)")
    p.add_argument("--nl-judge-model", help="model answering τ³'s NL-assertion judge (its prompt "
                   "and grading are τ³'s), on the judge's endpoint (default: τ³'s own, "
                   "gpt-4.1-2025-04-14; 'none': NL assertions ungraded)")
    p.add_argument("--api-base", help="OpenAI-compatible endpoint for every role, e.g. a vLLM server")
    p.add_argument("--critic-api-base")
    p.add_argument("--user-api-base")
    p.add_argument("--temperature", type=float)
    p.add_argument("--max-tokens", type=int)
    p.add_argument("--concurrency", type=int)
    p.add_argument("--max-steps", type=int, help="τ² orchestrator step limit (default 200, as tau2 run)")
    p.add_argument("--out", type=Path, help="run folder (default runs/<run-id>)")
    p.add_argument("--run-id")
    p.add_argument("--cache-dir", type=Path, help="response cache folder (default <out>/../.cache)")
    p.add_argument("--no-cache", action="store_true", default=None)
    p.add_argument("--retry-errors", action="store_true", default=None,
                   help="re-run episodes recorded as errors (the new record supersedes the old)")
    p.add_argument("--strategy", help="critique strategy for refine (default anti-leak); see "
                   "python -m runtime.ablate for the list")
    p.add_argument("--planner", help="planner to test: a name from `python -m runtime.planners` or "
                   "package.module:Class (default llm)")
    p.add_argument("--no-judge", action="store_true", default=None,
                   help="skip the plan judge (p0/p1 correctness, grade, E1–E6); the default on "
                   "the embedded model")
    p.add_argument("--judge", dest="no_judge", action="store_false", default=None,
                   help="run the plan judge even on the embedded model")
    p.add_argument("--no-auditor", action="store_true", default=None,
                   help="guard critiques with the rules alone (no leak auditor)")
    p.add_argument("--sealed-writer", choices=["rendered", "tested"],
                   help="who words a sealed critique: rendered (default: the closed answer in "
                   "words, no model call) or tested (the tested model's own model); never the "
                   "critic's model")
    p.add_argument("--sealed-findings", type=int, choices=range(0, 7), metavar="K",
                   help="at most K findings per sealed critique, 0..6 (default 2; the capacity "
                   "in bits grows with K: docs/sealed-critique.md)")
    p.add_argument("--sealed-guard", choices=["measure", "replace"],
                   help="on a sealed arm the leak guard and auditor measure only (default); "
                   "replace: where they fire, the whole rationale becomes the rendering (1 bit)")
    p.add_argument("--request-timeout", type=float,
                   help="seconds one model request may take (default 300)")
    p.add_argument("--max-error-rate", type=float,
                   help="exit with code 3 when the share of errored episodes is above this "
                   "(0 to 1; default: only when every episode errored)")
    p.add_argument("--sandbox", choices=SANDBOXES,
                   help="where env servers run: inproc (default: no container), docker (Docker "
                   "containers; exit 2 without an engine), auto (containers if an engine answers)")
    p.add_argument("--backend", choices=["threads", "ray"],
                   help="run episodes in threads of this process (default) or on Ray workers")
    p.add_argument("--ray-address", help="with --backend ray: join this Ray cluster ('auto' or "
                   "host:port); default: start a local Ray instance")
    p.add_argument("--ray-port-range", metavar="LOW-HIGH",
                   help="with --backend ray and no --ray-address: every port the local Ray "
                   "instance listens on in this range (at least 26 ports), e.g. 20000-20099")
    p.add_argument("--ray-workers", type=int,
                   help="with --backend ray: worker processes (default: one per CPU)")
    p.add_argument("--allow-changed-settings", action="store_true", default=None,
                   help="resume a run folder whose earlier episodes were made with other settings "
                   "(models, endpoints, temperature, seed, ...); refused by default; recorded")
    p.add_argument("--ray-placement-timeout", type=float, metavar="SECONDS",
                   help="with --backend ray: seconds a worker may stay unplaced (at the start, or "
                   "after its node was lost) before the run stops with exit 3 (default 120)")
    p.add_argument("--model-concurrency", type=int,
                   help="at most this many model calls in flight per provider, across all workers")
    add_budget_options(p)
    p.add_argument("--dry-run", action="store_true",
                   help="print the episodes, their cost and the detectable Δ of each comparison; "
                   "call no model and write nothing")
    p.add_argument("--target-mde", type=float, metavar="DELTA",
                   help="choose --trials so Refine − Plan-first can detect this Δ (80%% power, α 0.05)")
    p.add_argument("--until-decided", action="store_true", default=None,
                   help="run in waves of one trial of every task and mode, and stop when an "
                   "anytime-valid interval decides each comparison: effect (it excludes 0) or no "
                   "effect of interest (it lies inside ±--margin); or at --max-trials / --max-cost")
    p.add_argument("--max-trials", type=int, metavar="N",
                   help="with --until-decided: the most trials per task and mode (default 40, at most "
                   "200); given, with 50 tasks or more, α is spent over exactly these waves (α-spending)")
    p.add_argument("--margin", type=float, metavar="DELTA",
                   help="with --until-decided: the smallest effect of interest, fixed at the folder's "
                   "first look (default 0.03, the "
                   "APB paper's lower τ²-bench figure)")
    add_folder_options(p)
    p.add_argument("--episode-max-tokens", type=int,
                   help="tokens one episode may use; past it the episode ends unfinished")
    p.add_argument("--episode-max-cost", type=float, metavar="USD",
                   help="USD one episode may spend; past it the episode ends unfinished")
    p.add_argument("--episode-timeout", type=float, metavar="SECONDS",
                   help="seconds one episode may run; past it the episode ends unfinished")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> int:
        config = load_config(args)
        if args.target_mde is not None and not args.target_mde > 0:
            raise UsageError(f"--target-mde {args.target_mde:g}: accepted: a Δ > 0")
        asked = config  # --margin / --max-trials as given (None: not given), before defaults
        config = until_decided_settings(config, args.target_mde, args.trials)
        if args.dry_run:
            return dry_run(config, args.target_mde)
        config = with_target_trials(config, args.target_mde, print)
        refuse_early(config)  # what an earlier command learnt, before the heavy imports
        from rich.console import Console

        from runtime.compose.build import build_run
        from runtime.cli.lifecycle import error_rate_exit, execute, write_report, write_summary

        console = Console(stderr=False)
        run = build_run(config, console.print)
        if config.until_decided:  # before any episode: the settings fixed at the first look win
            from runtime.cli.waves import fixed_settings

            run = fixed_settings(run, margin=asked.margin, max_trials=asked.max_trials)

        def finish() -> int:
            records = write_summary(run, console)
            write_report(run, console)
            return error_rate_exit(records, run.config.max_error_rate)

        if config.until_decided:
            from runtime.cli.waves import run_until_decided

            return execute([run], console, finish, run_one=run_until_decided)
        return execute([run], console, finish)

    return guarded(body)


def until_decided_settings(config: RunConfig, target: float | None, trials: int | None) -> RunConfig:
    """``--until-decided``'s options checked, and its trials set to ``--max-trials`` (the waves
    are the trials; the loop runs them one at a time)."""
    if not config.until_decided:
        given = [o for o, v in (("--max-trials", config.max_trials), ("--margin", config.margin)) if v is not None]
        if given:
            raise UsageError(f"{' and '.join(given)}: only with --until-decided")
        return config
    from runtime.cli.plan import comparisons
    from runtime.reports.decision import DEFAULT_MARGIN

    if not comparisons(config.modes):
        raise UsageError(f"--until-decided with --mode {','.join(config.modes)}: no comparison to "
                         "decide; accepted: modes that pair with plan-first, e.g. --mode plan-first,refine "
                         "or --mode all")
    for option, value in (("--target-mde", target), ("--trials", trials)):
        if value is not None:
            raise UsageError(f"{option} with --until-decided: the run sizes itself; give --max-trials "
                             "for the most trials per task and mode")
    from runtime.stats.sequential import SHOWN_WAVES

    if config.max_trials is not None and config.max_trials > SHOWN_WAVES:
        raise UsageError(f"--max-trials {config.max_trials}: --until-decided's type-I error has been "
                         f"shown up to {SHOWN_WAVES} waves (bench/SEQUENTIAL.md); accepted: 1 to "
                         f"{SHOWN_WAVES}")
    # --max-trials given: the last look is known, and an α-spending boundary spends α over it
    return config.model_copy(update={"max_trials": config.max_trials or MAX_TRIALS,
                                     "planned_looks": config.planned_looks or config.max_trials,
                                     "margin": config.margin or DEFAULT_MARGIN,
                                     "trials": config.max_trials or MAX_TRIALS})


MAX_TRIALS = 40
"""``--until-decided``'s default ``--max-trials``."""


def load_config(args: argparse.Namespace) -> RunConfig:
    """The run's settings: the config file (if any), overridden by the options given."""
    values = {k: v for k, v in vars(args).items() if k not in ("config", "dry_run", "target_mde")}
    file_values = cfg.load_yaml(args.config) if args.config else {}
    return cfg.build(file_values, values, source=str(args.config) if args.config else "option")


def _tasks(config: RunConfig) -> list[str]:
    """The tasks the settings select, found without touching any folder: from the catalogue an
    earlier command remembered (no benchmark import: a dry run answers at once), else from the
    environment (which remembers it)."""
    from envs import EnvError, get_environment, registry
    from runtime.compose.preflight import check_count, is_embedded, task_selection
    from runtime.folder.logs import quiet_loguru

    try:
        env_spec = registry.spec(config.env)
        selection = task_selection(config, env_spec, is_embedded(config))
        catalogue = registry.remembered_catalogue(config.env)
        if catalogue is not None and catalogue.knows(selection.domain):
            ids = catalogue.select(selection)
        else:
            quiet_loguru()  # before the benchmark logs on import
            ids = get_environment(config.env).select(selection)
    except (EnvError, ValueError) as exc:
        raise UsageError(str(exc)) from exc
    check_count(config, selection, len(ids))
    return ids


def with_target_trials(config: RunConfig, target: float | None, say) -> RunConfig:
    """``--target-mde``: the trials Refine − Plan-first needs for it on the selected tasks."""
    if target is None:
        return config
    from runtime.cli.plan import chosen_trials

    trials, line = chosen_trials(config.env, len(_tasks(config)), config.trials, target)
    if line:
        say(line)
    return config.model_copy(update={"trials": trials})


def dry_run(config: RunConfig, target: float | None) -> int:
    """Episodes, cost and detectable Δ of the run these settings make: no model called, nothing
    written (not even the run folder)."""
    from runtime.cli.plan import paper_effect, plan_lines
    from runtime.llm.estimate import environment_judge, episode_estimate
    from runtime.llm.roles import ROLES, resolve
    from runtime.compose.config import EMBEDDED_MODEL
    from runtime.compose.preflight import check_retrieval

    check_retrieval(config)
    config = with_target_trials(config, target, print)
    tasks = len(_tasks(config))
    modes, trials = config.modes, config.trials
    roles = resolve({role: getattr(config, role) for role in ROLES}, EMBEDDED_MODEL)
    cost, unpriced = 0.0, set()
    nl_judge = environment_judge(config.env, config.nl_judge_model)
    for mode in modes:
        one = episode_estimate(mode, roles, config.prices, judge=not config.no_judge,
                               auditor=not config.no_auditor, nl_judge=nl_judge, strategy=config.strategy,
                               sealed_writer=config.sealed_writer)
        cost += one.cost_usd * tasks * trials
        unpriced |= {m for models in one.unpriced.values() for m in models}
    print(f"dry run: {config.env} · {tasks} tasks × {trials} trials × modes {', '.join(modes)} = "
          f"{tasks * trials * len(modes)} episodes, ~${cost:.2f} (rough per-call token sizes)")
    if unpriced:
        print(f"unpriced (counted as $0): {', '.join(sorted(unpriced))}; give --price MODEL=IN/OUT")
    compared = modes if len(modes) > 1 else sorted({*modes, "plan-first"} if modes == ["refine"] else modes)
    if compared != modes:
        print("one mode: no comparison inside this run; beside a Plan-first run of the same size:")
    lines = plan_lines(config.env, tasks, trials, compared, paper_effect(config.env))
    for line in lines or ["one mode: no comparison to size"]:
        print(line)
    if config.until_decided:
        from runtime.cli.waves import dry_run_lines

        for line in dry_run_lines(config.env, tasks, modes, config.max_trials, config.margin, cost,
                                  paper_effect(config.env), looks=config.planned_looks):
            print(line)
    return 0


if __name__ == "__main__":
    from runtime.cli.process_end import end

    end(main())  # without the interpreter's seconds-long teardown
