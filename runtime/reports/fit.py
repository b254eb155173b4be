"""Tables for people that fit the terminal and never cut a figure.

A rich ``Table`` that is too wide for its terminal squeezes every column and ends cells in "…"
("refi…", "0.00…"). :class:`FitTable` decides at render time, for the width it is given: every
column at least as wide as its widest cell; full headers (wrapped at spaces) if that fits, else
the short headers with a legend below, else the columns stacked into several tables that each
repeat the row labels. Every table the CLI prints goes through it.
"""

from __future__ import annotations

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


class FitTable:
    """``columns`` and ``rows`` (strings) under ``title``; the first ``labels`` columns name the
    row and are repeated when the table is stacked."""

    def __init__(self, title: str | None, columns: Sequence[Col], rows: Iterable[Sequence[str]],
                 labels: int = 1):
        self.title = title
        self.columns = list(columns)
        self.rows = [[str(cell) for cell in row] for row in rows]
        self.labels = labels

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def _cells(self, i: int) -> int:
        return max((_width(row[i]) for row in self.rows), default=0)

    def _need(self, cols: list[int], short: bool) -> int:
        """The table's width: each column's content + 2 padding, + 1 rule per edge."""
        return sum(max(self._cells(i), _word(self.columns[i].shown(short))) + 2 for i in cols) + len(cols) + 1

    def layout(self, width: int) -> tuple[list[list[int]], bool]:
        """(column groups, short headers?) that fit ``width``."""
        every = list(range(len(self.columns)))
        for short in (False, True):
            if self._need(every, short) <= width:
                return [every], short
        keys, groups, current = every[:self.labels], [], []
        for i in every[self.labels:]:
            if current and self._need([*keys, *current, i], True) > width:
                groups.append([*keys, *current])
                current = []
            current.append(i)
        groups.append([*keys, *current])
        return groups, True

    def tables(self, width: int) -> tuple[list[Table], str | None]:
        groups, short = self.layout(width)
        tables = []
        for n, cols in enumerate(groups):
            title = self.title if n == 0 or not self.title else f"{self.title} (continued)"
            table = Table(title=Text(title) if title else None)  # text, never markup
            for i in cols:
                col = self.columns[i]
                table.add_column(col.shown(short), justify="left" if col.left else "right",
                                 min_width=max(self._cells(i), _word(col.shown(short))),
                                 overflow="fold")
            for row in self.rows:
                table.add_row(*(Text(row[i]) for i in cols))
            tables.append(table)
        legend = None
        if short:
            used = [c for c in self.columns if c.short and c.short != c.header]
            if used:
                legend = "legend: " + "; ".join(f"{c.short} = {c.header}" for c in used)
        return tables, legend

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        tables, legend = self.tables(options.max_width)
        yield from tables
        if legend:
            yield Text(legend, style="dim")
