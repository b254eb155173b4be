"""Tables for people that fit the terminal and never cut a figure.

A rich ``Table`` that is too wide for its terminal squeezes every column and ends cells in "…"
("refi…", "0.00…"). :class:`FitTable` decides at render time, for the width it is given: every
column at least as wide as its widest cell; full headers (wrapped at spaces) if that fits, else
the short headers with a legend below, else (a table made ``turnable``: few rows, many columns,
such as the end-of-run summary) turned, one row per column and one column per row, with the
full headers, else the row labels folded onto several lines, else the columns stacked evenly
into the fewest tables that fit, each repeating the row labels. Every table the CLI prints goes
through it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text


@dataclass(frozen=True)
class Col:
    """A column: its header, the abbreviation used when the header does not fit (explained in a
    legend), and its alignment (figures right, labels left)."""

    header: str
    short: str | None = None
    left: bool = False

    def shown(self, short: bool) -> str:
        return self.short if short and self.short else self.header


def _width(text: str) -> int:
    return max((cell_len(line) for line in str(text).splitlines()), default=0)


def _word(text: str) -> int:
    return max((cell_len(word) for word in str(text).split()), default=0)


def fold(label: str, width: int) -> str:
    """``label`` in lines of at most ``width`` cells, broken after ':', '-', '/', '_' or a space
    where it can be (a piece longer than the line is cut): wrapped, never shortened."""
    pieces = [p for p in re.split(r"(?<=[:/_ -])", label) if p]
    lines, line = [], ""
    for piece in pieces:
        while cell_len(piece) > width:
            if line:
                lines.append(line.rstrip())
                line = ""
            lines.append(piece[:width])
            piece = piece[width:]
        if line and cell_len(line + piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        line += piece
    if line:
        lines.append(line.rstrip())
    return "\n".join(lines)


MIN_LABEL = 12
"""The narrowest a row label is folded to before the table is stacked instead."""


class FitTable:
    """``columns`` and ``rows`` (strings) under ``title``; the first ``labels`` columns name the
    row and are repeated when the table is stacked; the widest of them may be folded onto
    several lines (``fold``). Figures are never wrapped or cut."""

    def __init__(self, title: str | None, columns: Sequence[Col], rows: Iterable[Sequence[str]],
                 labels: int = 1, turnable: bool = False):
        self.title = title
        self.columns = list(columns)
        self.rows = [[str(cell) for cell in row] for row in rows]
        self.labels = labels
        self.turnable = turnable and labels == 1

    def turned(self) -> "FitTable":
        """The table with rows and columns swapped: each column a row named by its full header,
        each row a column headed by its label."""
        columns = [Col("", left=True)] + [Col(row[0]) for row in self.rows]
        rows = [[col.header, *(row[i] for row in self.rows)] for i, col in enumerate(self.columns) if i]
        return FitTable(self.title, columns, rows)

    def _turned_fits(self, width: int) -> "FitTable | None":
        if not self.turnable:
            return None
        turned = self.turned()
        return turned if turned._need(list(range(len(turned.columns))), False) <= width else None

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def _cells(self, i: int) -> int:
        return max((_width(row[i]) for row in self.rows), default=0)

    def _col(self, i: int, short: bool, folded: dict[int, int]) -> int:
        content = folded.get(i, self._cells(i))
        return max(content, _word(self.columns[i].shown(short)))

    def _need(self, cols: list[int], short: bool, folded: dict[int, int] | None = None) -> int:
        """The table's width: each column's content + 2 padding, + 1 rule per edge."""
        return sum(self._col(i, short, folded or {}) + 2 for i in cols) + len(cols) + 1

    def layout(self, width: int) -> tuple[list[list[int]], bool, dict[int, int]]:
        """(column groups, short headers?, label column → folded width) that fit ``width``."""
        every = list(range(len(self.columns)))
        keys = every[:self.labels]
        for short in (False, True):
            if self._need(every, short) <= width:
                return [every], short, {}
        widest = max(keys, key=self._cells) if keys else None

        def folded(cols: list[int]) -> dict[int, int]:
            if widest is None:
                return {}
            spare = width - self._need([c for c in cols if c != widest], True) - 3
            fit = max(MIN_LABEL, min(spare, self._cells(widest)))
            return {widest: fit} if fit < self._cells(widest) else {}

        fold_one = folded(every)
        if fold_one and self._need(every, True, fold_one) <= width:
            return [every], True, fold_one
        rest = every[self.labels:]
        for n in range(2, len(rest) + 1):  # the fewest tables, columns spread evenly
            size = -(-len(rest) // n)
            groups = [[*keys, *rest[k:k + size]] for k in range(0, len(rest), size)]
            fold_at = {}
            for group in groups:
                for col, w in folded(group).items():
                    fold_at[col] = max(fold_at.get(col, 0), w)
            if all(self._need(g, True, fold_at) <= width for g in groups):
                return groups, True, fold_at
        return [[*keys, i] for i in rest], True, folded(every)

    def tables(self, width: int) -> tuple[list[Table], str | None]:
        groups, short, fold_at = self.layout(width)
        tables = []
        for n, cols in enumerate(groups):
            title = self.title if n == 0 or not self.title else f"{self.title} (continued)"
            table = Table(title=Text(title) if title else None)  # text, never markup
            for i in cols:
                col = self.columns[i]
                exact = self._col(i, short, fold_at)  # headers wrap at spaces within it
                table.add_column(col.shown(short), justify="left" if col.left else "right",
                                 min_width=exact, max_width=exact, overflow="fold")
            for row in self.rows:
                table.add_row(*(Text(fold(row[i], fold_at[i]) if i in fold_at else row[i])
                                for i in cols))
            tables.append(table)
        legend = None
        if short:
            used = [c for c in self.columns if c.short and c.short != c.header]
            if used:
                legend = "legend: " + "; ".join(f"{c.short} = {c.header}" for c in used)
        return tables, legend

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        every = list(range(len(self.columns)))
        if not any(self._need(every, short) <= options.max_width for short in (False, True)):
            if (turned := self._turned_fits(options.max_width)) is not None:
                yield from turned.tables(options.max_width)[0]
                return
        tables, legend = self.tables(options.max_width)
        yield from tables
        if legend:
            yield Text(legend, style="dim")
