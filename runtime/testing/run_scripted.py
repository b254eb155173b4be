"""``python -m runtime.testing.run_scripted [--latency S] [--sabotage] -- <validate options>``

The real CLI, in a process where the scripted roles are registered as ``scripted/roles``
(planner, critic and reviser answer fixed JSON; executor and user replay τ²'s reference).
For tests and smoke runs that need a separate process (resume after a kill, CI smoke runs).
"""

from __future__ import annotations

import argparse
import sys

from runtime import validate
from runtime.testing import scripted
from runtime.testing.gold import GoldReplay
from runtime.testing.roles import ScriptedRoles


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtime.testing.run_scripted")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every reply")
    parser.add_argument("--sabotage", action="store_true", help="drop the last state-changing write")
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    ScriptedRoles(act=GoldReplay(drop_last_write=args.sabotage)).model_name("roles")
    scripted._PROVIDER.latency_s = args.latency
    return validate.main(rest)


if __name__ == "__main__":
    sys.exit(main())
