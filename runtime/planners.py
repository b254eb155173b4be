"""``python -m runtime.planners``: list the planners the runtime can load, built-in and installed
(entry points in the group ``runtime.planners``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from planners.registry import GROUP, available
from runtime.cli.args import command_parser


def main(argv: Sequence[str] | None = None) -> int:
    command_parser("python -m runtime.planners", "List the planners the runtime can load, "
                   "built-in and installed.").parse_args(argv)
    print(f"planners (built-in and entry points in group {GROUP!r}):")
    for name, target in available().items():
        print(f"  {name:20s} {target}")
    print("use one with --planner NAME, or any class with --planner package.module:Class")
    return 0


if __name__ == "__main__":
    sys.exit(main())
