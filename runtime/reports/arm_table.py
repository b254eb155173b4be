"""One shape for the CLI's per-arm tables (leak guard, provenance audit): a title, the arm
column, right-aligned figures, one row per arm that has something to show."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from runtime.reports.fit import Col, FitTable


def arm_table(title: str, columns: Sequence[str | Col], by_arm: dict[str, Any],
              cells: Callable[[dict[str, Any]], list[str] | None]) -> FitTable | None:
    """``cells(row)`` gives an arm's figures, or ``None`` to leave it out; ``None`` when no
    arm is shown. Fits the terminal (``runtime.reports.fit``)."""
    rows = [(name, cells(row)) for name, row in by_arm.items()]
    rows = [(name, figures) for name, figures in rows if figures is not None]
    if not rows:
        return None
    cols = [Col("arm", left=True), *(c if isinstance(c, Col) else Col(c) for c in columns)]
    return FitTable(title, cols, [[name, *figures] for name, figures in rows])
