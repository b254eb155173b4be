"""``python -m runtime.report RUN [--apb-out FILE]``: rebuild a run folder's report from its
records, and optionally export its judged plans in APB's judgement-record shape.

The command only; what the report holds is built in ``runtime.reports.report`` and the export
in ``runtime.reports.apb_export``. It reads an existing run folder and never creates one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from runtime.args import command_parser
from runtime.scrub import protect_console
from runtime.store import RECORDS

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
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    protect_console()
    if not (args.run / RECORDS).is_file():
        what = "it does not exist" if not args.run.exists() else "it has no records.jsonl"
        print(f"error: {args.run} is not a run folder: {what} (no records.jsonl); give a folder "
              "written by validate, ablate or table3", file=sys.stderr)
        return 2
    if args.apb_out is not None and not args.apb_out.parent.is_dir():
        print(f"error: --apb-out {args.apb_out}: folder {args.apb_out.parent} does not exist",
              file=sys.stderr)
        return 2
    from runtime.reports import apb_export
    from runtime.reports.report import build

    try:
        paths = build(args.run, title=args.title)
        if args.apb_out is not None:
            from runtime.store import RunStore

            rows = apb_export.apb_records(RunStore(args.run).records(), apb_export.judge_model(args.run),
                                          folder=args.run)
            apb_export.write_jsonl(rows, args.apb_out)
            paths["apb"] = args.apb_out
            if missing := apb_export.without_inputs(rows):
                print(f"warning: {missing} of {len(rows)} exported plans have no tool schemas or "
                      "reference plan (the run was made before the judge's inputs were kept); "
                      "APB's judge would see no tools for them", file=sys.stderr)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(f"{k}: {v}" for k, v in paths.items()))
    return 0


if __name__ == "__main__":
    from runtime.process_end import end

    end(main())  # without the interpreter's seconds-long teardown
