"""``python -m runtime.report <run folder>``: rebuild a run folder's report from its records.

The command only; what the report holds is built in ``runtime.reports.report``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from runtime.reports.report import build


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m runtime.report <run folder>", file=sys.stderr)
        return 2
    try:
        paths = build(Path(args[0]))
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(f"{k}: {v}" for k, v in paths.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
