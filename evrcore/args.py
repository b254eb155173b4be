"""The option parser every command builds on: errors in one line, and ``--version``.

argparse prints its whole usage block before an error; every command promises one line and exit
2 for bad input instead. ``--version`` looks the installed version up only when asked, so a
command's parser stays cheap: its ``--help``, ``--version`` and errors answer before any heavy
library (litellm, LangGraph, τ²) is imported.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

DISTRIBUTION = "exec-validation-runtime"


def version() -> str:
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown (not installed; pip install -e . names it)"


class _Version(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0,
                         help=help or "print the version and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> NoReturn:
        print(f"{parser.prog} {version()}")
        parser.exit()


class OneLineParser(argparse.ArgumentParser):
    """``error: <command>: <what is wrong, and what is accepted>`` on stderr, exit 2; and
    ``--version``. ``clean`` may rewrite the message first (the runtime scrubs secrets)."""

    clean: Callable[[str], str] = staticmethod(lambda text: text)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.add_argument("--version", action=_Version)

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {self.clean(' '.join(message.split()))} (see {self.prog} --help)",
              file=sys.stderr)
        raise SystemExit(2)


def command_parser(prog: str, description: str | None = None) -> OneLineParser:
    return OneLineParser(prog=prog, description=description)
