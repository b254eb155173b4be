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
from runtime.cli.args import add_budget_options, command_parser
from runtime.cli.lifecycle import guarded
from runtime.compose.config import RunConfig
from runtime.compose.preflight import refuse_early
from runtime.folder.records import MODES

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
    p.add_argument("--mode", choices=[*MODES, "all"])
    p.add_argument("--domain", help="τ²-bench domain: airline, retail, telecom, mock (default "
                   "airline); τ³ (--env tau3) also banking_knowledge")
    p.add_argument("--split", help="task split, e.g. base, train, test (default base)")
    p.add_argument("--retrieval", help="τ³ banking_knowledge's retrieval configuration, offline: "
                   "bm25 (default), bm25_grep, grep_only, full_kb, golden_retrieval, no_knowledge")
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
        refuse_early(config)  # what an earlier command learnt, before the heavy imports
        from rich.console import Console

        from runtime.compose.build import build_run
        from runtime.cli.lifecycle import error_rate_exit, execute, write_report, write_summary

        console = Console(stderr=False)
        run = build_run(config, console.print)

        def finish() -> int:
            records = write_summary(run, console)
            write_report(run, console)
            return error_rate_exit(records, run.config.max_error_rate)

        return execute([run], console, finish)

    return guarded(body)


def load_config(args: argparse.Namespace) -> RunConfig:
    """The run's settings: the config file (if any), overridden by the options given."""
    values = {k: v for k, v in vars(args).items() if k != "config"}
    file_values = cfg.load_yaml(args.config) if args.config else {}
    return cfg.build(file_values, values, source=str(args.config) if args.config else "option")


if __name__ == "__main__":
    from runtime.cli.process_end import end

    end(main())  # without the interpreter's seconds-long teardown
