"""The one parser builder every runtime command uses: errors in one line (exit 2) and
``--version`` (``evrcore.args``), with secrets scrubbed from the error line.

argparse prints its whole usage block before an error; the README promises one line and exit 2
for every bad input, the same as a bad value caught after parsing.
"""

from __future__ import annotations

from evrcore.args import OneLineParser


def _scrub(text: str) -> str:
    from runtime.scrub import scrub

    return scrub(text)


class CommandParser(OneLineParser):
    """``error: <command>: <what is wrong, and what is accepted>`` on stderr, exit 2."""

    clean = staticmethod(_scrub)


def command_parser(prog: str, description: str | None = None) -> CommandParser:
    return CommandParser(prog=prog, description=description)
