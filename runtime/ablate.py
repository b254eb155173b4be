"""``python -m runtime.ablate``: execute every critique strategy from the same p0 and compare.

    python -m runtime.ablate --env tau2 --strategies all --model <m> --critic-model <c>

Runs Plan-first once and Refine once per strategy on the same tasks, trials, opening requests
and p0, then writes ``ablation.md`` and ``ablation.csv`` into the run folder: per strategy, the
execution score with a paired 95% CI of its difference to Plan-first, the plan judge's
correctness and grade p0 → p1, E1–E6 rates p0 → p1, guard firings, tokens and cost.
``leaky`` is the positive control and is labelled an upper bound wherever it appears. With
``anti-leak`` and ``sealed`` both run, ``ablation.md`` also gives Refine(anti-leak) −
Refine(sealed): how much of the gain needs the critic's free text. ``--until-decided`` runs in
waves until each Refine(strategy) − Plan-first is decided (α split between them), a strategy's
arm stopping once its comparison is.
"""

from __future__ import annotations

import argparse
from typing import Sequence

from critique.strategies import STRATEGIES
from runtime import validate
from runtime.compose.preflight import refuse_early
from runtime.cli.lifecycle import guarded
from runtime.compose.config import UsageError

# What runs episodes and writes the table is imported in ``main`` once the arguments are read.


def parser():
    p = validate.parser()
    p.prog = "python -m runtime.ablate"
    p.description = ("Execute every critique strategy from the same p0 and compare them with "
                     "Plan-first. Strategies: " + ", ".join(s.label for s in STRATEGIES.values()))
    p.add_argument("--strategies", default="all",
                   help="comma-separated strategy names, or all (default)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def body() -> int:
        refuse_fixed_options(args)
        strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
        if not strategies:
            raise UsageError(f"--strategies {args.strategies!r} names no strategy; give "
                             f"comma-separated names ({', '.join(STRATEGIES)}) or all")
        options = {k: v for k, v in vars(args).items() if k != "strategies"}
        config = validate.load_config(argparse.Namespace(**{**options, "mode": "refine"}))
        asked = config  # --margin / --max-trials as given, before defaults
        if config.until_decided:  # each Refine(strategy) − Plan-first decides on its own
            config = validate.until_decided_settings(
                config.model_copy(update={"mode": ["plan-first", "refine"]}), None, args.trials)
        refuse_early(config)
        from rich.console import Console
        from rich.markup import escape

        from runtime.compose.build import build_run
        from runtime.cli.lifecycle import error_rate_exit, execute, write_report, write_summary
        from runtime.reports.ablation import ablation_table, write_table
        from runtime.reports.free_text import section_for
        from runtime.reports.summary import frame

        console = Console()
        run = build_run(config, console.print, modes=["plan-first", "refine"],
                        strategies=["all"] if strategies == ["all"] else strategies,
                        run_id_prefix="ablate-")
        run_one = None
        if config.until_decided:
            from runtime.cli.waves import fixed_settings, run_until_decided

            run = fixed_settings(run, margin=asked.margin, max_trials=asked.max_trials)
            run_one = run_until_decided

        def finish() -> int:
            records = write_summary(run, console)
            df = frame(records)
            write_table(ablation_table(df), run.out, beside=section_for(df))
            console.print(escape(f"ablation table: {run.out / 'ablation.md'}"))
            write_report(run, console)
            return error_rate_exit(records, run.config.max_error_rate)

        return execute([run], console, finish, run_one=run_one)

    return guarded(body)


def refuse_fixed_options(args: argparse.Namespace) -> None:
    """ablate always runs Plan-first and Refine with the strategies of ``--strategies``: a
    ``--mode`` or ``--strategy`` it would ignore is refused instead."""
    for option, given in (("--dry-run", args.dry_run), ("--target-mde", args.target_mde is not None)):
        if given:
            raise UsageError(f"{option}: ablate has none; size the run with python -m runtime.validate "
                             f"{option} (or python -m runtime.power)")
    if args.mode is not None:
        raise UsageError(f"--mode {args.mode}: ablate always runs plan-first and refine; leave "
                         "--mode out (python -m runtime.validate runs one mode)")
    if args.strategy is not None:
        raise UsageError(f"--strategy {args.strategy}: ablate takes --strategies (comma-separated "
                         "names, or all)")


if __name__ == "__main__":
    from runtime.cli.process_end import end

    end(main())  # without the interpreter's seconds-long teardown
