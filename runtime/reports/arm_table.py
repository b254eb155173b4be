"""One shape for the CLI's per-arm tables (leak guard, provenance audit): a title, the arm
column, right-aligned figures, one row per arm that has something to show."""

from __future__ import annotations

from typing import Any, Callable

from rich.table import Table


def arm_table(title: str, columns: list[str], by_arm: dict[str, Any],
              cells: Callable[[dict[str, Any]], list[str] | None]) -> Table | None:
    """``cells(row)`` gives an arm's figures, or ``None`` to leave it out; ``None`` when no
    arm is shown."""
    rows = [(name, cells(row)) for name, row in by_arm.items()]
    rows = [(name, figures) for name, figures in rows if figures is not None]
    if not rows:
        return None
    table = Table(title=title)
    for col in ["arm", *columns]:
        table.add_column(col, justify="left" if col == "arm" else "right")
    for name, figures in rows:
        table.add_row(name, *figures)
    return table
