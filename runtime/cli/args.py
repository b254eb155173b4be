"""The one parser builder every runtime command uses: errors in one line (exit 2) and
``--version`` (``evrcore.args``), with secrets scrubbed from the error line.

argparse prints its whole usage block before an error; the guide promises one line and exit 2
for every bad input, the same as a bad value caught after parsing.
"""

from __future__ import annotations

from evrcore.args import OneLineParser


def _scrub(text: str) -> str:
    from runtime.folder.scrub import scrub

    return scrub(text)


class CommandParser(OneLineParser):
    """``error: <command>: <what is wrong, and what is accepted>`` on stderr, exit 2."""

    clean = staticmethod(_scrub)


def command_parser(prog: str, description: str | None = None) -> CommandParser:
    return CommandParser(prog=prog, description=description)


def add_budget_options(p: argparse.ArgumentParser) -> None:
    """The run's money options, shared with table3."""
    p.add_argument("--max-cost", type=float, metavar="USD",
                   help="USD the run folder may spend in all: no new episode starts past it "
                   "(exit 4); the same command with a higher limit resumes")
    p.add_argument("--price", action="append", metavar="MODEL=IN/OUT",
                   help="USD per million prompt/completion tokens for a model litellm does not "
                   "price (repeatable; MODEL=0/0: free)")
    p.add_argument("--no-report", action="store_true", default=None,
                   help="do not write the report and episode explorer at the end")


def add_folder_options(p: argparse.ArgumentParser) -> None:
    """The run folder's options (``runtime.folder.lock``, the response cache), shared with table3."""
    p.add_argument("--wait-for-lock", type=float, metavar="SECONDS",
                   help="wait this long for another run writing the same --out folder to end "
                   "(default: refuse at once, exit 2)")
    p.add_argument("--unwritable-cache", choices=["refuse", "off"],
                   help="a response cache that cannot be written: refuse before the first episode "
                   "(default) or run without it after one warning")
