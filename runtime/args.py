"""The one parser builder every command uses: argparse whose errors are one line.

argparse prints its whole usage block before an error; the README promises one line and exit 2
for every bad input, the same as a bad value caught after parsing.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn


class CommandParser(argparse.ArgumentParser):
    """``error: <command>: <what is wrong, and what is accepted>`` on stderr, exit 2."""

    def error(self, message: str) -> NoReturn:
        from runtime.scrub import scrub

        print(f"error: {self.prog}: {scrub(' '.join(message.split()))} (see {self.prog} --help)",
              file=sys.stderr)
        raise SystemExit(2)


def command_parser(prog: str, description: str | None = None) -> CommandParser:
    return CommandParser(prog=prog, description=description)
