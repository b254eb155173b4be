"""``python -m runtime.report RUN [--apb-out FILE] [--regrade tau3] [--export FORMAT DIR]``: rebuild a
run folder's report from its records, and optionally export its judged plans in APB's
judgement-record shape; or re-grade a τ² run against τ³'s corrected tasks
(``runtime.reports.regrade``: flipped verdicts per task, Δ on both task sets); or export it as
τ-bench results files or inspect_ai eval logs (``runtime.reports.export_run``). The last two
leave the folder as it is.

The command only; what the report holds is built in ``runtime.reports.report`` and the export
in ``runtime.reports.apb_export``. It reads an existing run folder and never creates one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from runtime.cli import signals
from runtime.cli.args import command_parser
from runtime.folder.durable import WRITE_FAILED, WriteFailed
from runtime.folder.scrub import protect_console
from runtime.folder.store import RECORDS

# The report's builders (pandas, plots, the explorer) are imported once the arguments are checked.


def parser() -> argparse.ArgumentParser:
    p = command_parser(
        "python -m runtime.report",
        "Rebuild a run folder's report (Markdown, CSV, HTML, plots) from its records.")
    p.add_argument("run", type=Path, help="the run folder (holds records.jsonl)")
    p.add_argument("--title", help="the report's title (default: from the run)")
    p.add_argument("--apb-out", type=Path, metavar="FILE",
                   help="also write one JSON line per judged plan (p0 and p1) in the Agent Planning "
                        "Benchmark's judgement-record shape, readable by APB's scorer")
    p.add_argument("--regrade", choices=["tau3"],
                   help="re-score the run's episodes against τ³'s corrected tasks (needs `python -m "
                   "runtime.envs setup tau3`): flipped verdicts per task and Refine − Plan-first on "
                   "both task sets; writes nothing into the run folder")
    p.add_argument("--regrade-out", type=Path, metavar="FILE|DIR",
                   help="with --regrade: also write the per-record τ³ scores as JSON to FILE (a "
                   ".json path), or to DIR (any other path) τ-bench results files with τ³'s tasks "
                   "and rewards, as `tau2 evaluate-trajs --fresh-tasks -o` writes them")
    p.add_argument("--export", nargs=2, metavar=("FORMAT", "DIR"),
                   help="write the run where other tools open it, into DIR (never into the run "
                   "folder): `tau3`, τ-bench's own results files (one per environment, domain and "
                   "arm: `tau2 view`, `tau2 evaluate-trajs`, `tau2 submit prepare`); `inspect`, "
                   "inspect_ai eval logs (one per arm, a sample per episode: `inspect view`)")
    p.add_argument("--submission", metavar="ARM",
                   help="with --export tau3: only ARM's files (e.g. plan-first), for the τ-bench "
                   "leaderboard; an arm whose critic saw the hidden supervision, and a run whose "
                   "tasks are not τ³-bench's, are refused")
    p.add_argument("--arm", metavar="ARM",
                   help="with --export: only ARM's files; the one way to write, for viewing, a τ-bench "
                   "results file of an arm whose critic saw the hidden supervision (a plain --export "
                   "tau3 leaves it out)")
    p.add_argument("--force", action="store_true",
                   help="with --export or --regrade-out DIR: remove the files DIR already holds first "
                   "(without it, a folder that holds files is refused)")
    return p


def regrade(args: argparse.Namespace) -> int:
    """``--regrade``: the table on stdout, the scores to ``--regrade-out``; the folder untouched."""
    from envs.base import EnvError
    from runtime.folder.store import RunStore
    from runtime.reports import regrade as rg
    from runtime.reports.export_common import out_dir_problem

    as_files = args.regrade_out is not None and args.regrade_out.suffix != ".json"
    if as_files and (problem := out_dir_problem(args.regrade_out, args.run, args.force)):
        print(f"error: --regrade-out {args.regrade_out}: {problem}", file=sys.stderr)
        return 2
    if args.regrade_out is not None and not as_files and (problem := unwritable(args.regrade_out)):
        print(f"error: --regrade-out {args.regrade_out}: {problem}", file=sys.stderr)
        return 2
    try:
        store = RunStore(args.run, read_only=True)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    envs = sorted({r.key.env for r in store.records()})
    if envs != ["tau2"]:
        print(f"error: --regrade tau3 re-scores a τ² run; {args.run} holds {', '.join(envs)} records",
              file=sys.stderr)
        return 2
    try:
        records, regraded = rg.rescore(store)
    except (EnvError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(rg.markdown(args.run, records, regraded), end="")
    if as_files:
        from runtime.reports.export_run import report, write_regraded

        return report(write_regraded(args.run, regraded, args.regrade_out, args.force))
    if args.regrade_out is not None:
        from runtime.folder.store import write_text_atomic

        try:
            write_text_atomic(args.regrade_out, json.dumps({
                "flips": rg.flips(records, regraded), "deltas": rg.deltas(records, regraded),
                "records": regraded}, indent=1))
        except WriteFailed as exc:
            print(f"error: {exc} (nothing partial was left)", file=sys.stderr)
            return WRITE_FAILED
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    protect_console()
    signals.install()
    if not (args.run / RECORDS).is_file():
        what = "it does not exist" if not args.run.exists() else "it has no records.jsonl"
        print(f"error: {args.run} is not a run folder: {what} (no records.jsonl); give a folder "
              "written by validate, ablate or table3", file=sys.stderr)
        return 2
    for flag, given in (("--submission", args.submission), ("--arm", args.arm)):
        if given is not None and args.export is None:
            print(f"error: {flag} goes with --export FORMAT DIR", file=sys.stderr)
            return 2
    if args.force and args.export is None and args.regrade_out is None:
        print("error: --force goes with --export FORMAT DIR or --regrade-out DIR", file=sys.stderr)
        return 2
    if args.export is not None:
        from runtime.reports.export_run import run as export

        return export(args.run, args.export[0], Path(args.export[1]), args.submission, args.force, args.arm)
    if args.regrade:
        return regrade(args)
    if args.apb_out is not None and (problem := unwritable(args.apb_out)):
        print(f"error: --apb-out {args.apb_out}: {problem}; give a file path in a writable folder "
              "(nothing was written)", file=sys.stderr)
        return 2
    try:
        from runtime.reports import apb_export
        from runtime.reports.report import build

        from runtime.folder import call_ledger
        from runtime.folder.store import RunStore

        store = RunStore(args.run)
        paths = build(args.run, title=args.title, store=store)
        if note := store.skipped_note():
            print(f"warning: {note}; the report leaves them out", file=sys.stderr)
        if legacy := store.legacy_note():
            print(f"note: {legacy}", file=sys.stderr)
        if (left := call_ledger.uncounted(store.root))[0]:
            print(f"warning: {left[1]} call(s) of {left[0]} attempt(s) are in {call_ledger.DIR}/, left by "
                  f"a run that ended before counting them (Ray's exit, a kill); this report leaves "
                  f"them out, and the next run of the folder counts them", file=sys.stderr)
        if args.apb_out is not None:
            rows = apb_export.apb_records(store.records(), apb_export.judge_model(args.run),
                                          folder=args.run)
            apb_export.write_jsonl(rows, args.apb_out)
            paths["apb"] = args.apb_out
            if missing := apb_export.without_inputs(rows):
                print(f"warning: {missing} of {len(rows)} exported plans have no tool schemas or "
                      "reference plan (the run was made before the judge's inputs were kept); "
                      "APB's judge would see no tools for them", file=sys.stderr)
    except WriteFailed as exc:
        print(f"error: {exc}; the files written before are whole (nothing partial was left)",
              file=sys.stderr)
        return WRITE_FAILED
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print(f"{signals.word(exc)}: the report was not finished; each file it wrote is whole "
              "(old or new); run the same command again", file=sys.stderr)
        return signals.exit_code(exc)
    print("\n".join(f"{k}: {v}" for k, v in paths.items()))
    return 0


def unwritable(path: Path) -> str | None:
    """Why ``path`` cannot take a new file (checked by creating and removing a probe beside
    it, as the export's atomic write will), or None when it can: checked before any report
    file is written, so a bad ``--apb-out`` leaves the folder as it was."""
    import os

    if path.is_dir():
        return "it is a folder"
    if not path.parent.is_dir():
        return f"folder {path.parent} does not exist"
    probe = path.with_name(f".{path.name}.{os.getpid()}.probe")
    try:
        probe.open("x").close()
        probe.unlink()
    except OSError as exc:
        return f"cannot write there ({exc.strerror or exc})"
    return None


if __name__ == "__main__":
    from runtime.cli.process_end import end

    end(main())  # without the interpreter's seconds-long teardown
