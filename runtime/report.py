"""``python -m runtime.report <run folder>``: rebuild a run folder's report from its records.

The command only; what the report holds is built in ``runtime.reports.report``. It reads an
existing run folder and never creates one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from runtime.reports.report import build
from runtime.scrub import protect_console


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtime.report",
                                     description="Rebuild a run folder's report from its records.")
    parser.add_argument("folder", type=Path, help="a run folder holding records.jsonl")
    args = parser.parse_args(argv)
    protect_console()
    folder: Path = args.folder
    if not (folder / "records.jsonl").is_file():
        what = "does not exist" if not folder.exists() else "has no records.jsonl"
        print(f"error: run folder {folder} {what}; give a folder written by validate, ablate or "
              "table3", file=sys.stderr)
        return 2
    try:
        paths = build(folder)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(f"{k}: {v}" for k, v in paths.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
