"""``python -m runtime.envs``: set up and inspect environments that live in their own virtualenv.

    python -m runtime.envs setup toolsandbox --source /path/to/ToolSandbox   # or a git URL
    python -m runtime.envs setup tau3 --source /path/to/tau2-bench            # τ³-bench 1.0.1
    python -m runtime.envs status [tau3]

``setup`` creates a dedicated venv with the benchmark and its pinned dependencies (or keeps the one
built from the same source and pins; ``--force`` rebuilds), starts its env server once to check
it, and records where it is (``$EVR_ENVS_HOME/<env>.json``, default
under ``~/.cache/exec-validation-runtime/envs``). A bad source or a server that does not start
exits with 2 and one line naming the cause.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Sequence

from envs.registry import ENVIRONMENTS
from runtime.cli.args import command_parser


def setup_envs() -> list[str]:
    """The environments that have a one-time setup (a venv of their own), from the registry."""
    return [name for name, spec in ENVIRONMENTS.items() if spec.setup_module]


def parser() -> argparse.ArgumentParser:
    p = command_parser("python -m runtime.envs", "Set up environments that need their own virtualenv.")
    sub = p.add_subparsers(dest="command", required=True)
    setup = sub.add_parser("setup", help="install an environment into its own venv and record it")
    setup.add_argument("env", choices=setup_envs())
    setup.add_argument("--source", required=True,
                       help="a local checkout or a git URL: github.com/apple/ToolSandbox, or "
                       "github.com/sierra-research/tau2-bench 1.0.1 for tau3")
    setup.add_argument("--python", default=None,
                       help="the interpreter to build the venv from (ToolSandbox wants 3.9-3.11, "
                       "default python3; tau3 wants 3.12, default the first found on PATH, "
                       "pyenv or uv)")
    setup.add_argument("--home", type=Path, help="where to put the venv (default under $EVR_ENVS_HOME)")
    setup.add_argument("--force", action="store_true",
                       help="rebuild the venv even when source, pins and interpreter are unchanged")
    status = sub.add_parser("status", help="show what is set up and whether its server starts")
    status.add_argument("env", nargs="?", default=setup_envs()[0], choices=setup_envs())
    status.add_argument("--check", action="store_true", help="also start the env server once")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from envs.base import EnvError

    ts = importlib.import_module(ENVIRONMENTS[args.env].setup_module)

    try:
        if args.command == "setup":
            python = {"python": args.python} if args.python else {}
            record = ts.setup(args.source, home=args.home, force=args.force,
                              say=lambda line: print(line, file=sys.stderr), **python)
            if hasattr(ts, "summary"):
                print(ts.summary(record))
                return 0
            how = "kept (unchanged source and pins)" if record["reused"] else "built"
            print(f"ToolSandbox ready: {record['offline_scenarios']} offline scenarios "
                  f"(of {record['scenarios']}); venv {record['venv']} {how}; recorded in {ts.record_path()}")
            return 0
        if hasattr(ts, "installed"):
            record = ts.installed()
            out = {"record": str(ts.record_path()), **record}
            if args.check:
                out["server"] = ts.verify(record["python"], record["data_dir"])
            print(json.dumps(out, indent=2))
            return 0
        record = ts.load_record()
        python = ts.python_path()
        out = {"record": str(ts.record_path()), "python": python, **(record or {})}
        if args.check:
            out["server"] = ts.verify(python)
        print(json.dumps(out, indent=2))
        return 0
    except EnvError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
