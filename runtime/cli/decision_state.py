"""A sequential run's decision as its records and ``run.json`` stand: what ``summary.json``
shows and what the wave loop (``runtime.cli.waves``) reads before every wave. Apart from the
loop, so that the summary (``runtime.cli.lifecycle``) reads it without importing the loop that
imports the summary."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.compose.build import Run
    from runtime.folder.records import EpisodeRecord


def decision_of(run: Run, records: list[EpisodeRecord]) -> dict[str, Any] | None:
    """``summary.json``'s ``decision`` entry for ``run``'s records, under the settings fixed at
    the folder's first look (before it: those this invocation would fix)."""
    from runtime.reports.decision import decision_entry
    from runtime.reports.summary import frame

    df = frame(records)
    if df.empty:
        return None
    return decision_entry(df, margin=run.config.margin, max_trials=run.config.max_trials,
                          tasks=len(run.spec.task_ids), settings=settings_of(run))


def settings_of(run: Run) -> dict[str, Any]:
    """The settings recorded at the first look, else those this invocation would record."""
    from runtime.reports.decision import ALPHA, new_settings, recorded_settings

    recorded = recorded_settings(run.out, cell(run))
    if recorded is not None:
        return recorded
    alpha = getattr(run.config, "decision_alpha", None) or ALPHA
    intended = new_settings(margin=run.config.margin, alpha=alpha, comparisons=[],
                            looks=getattr(run.config, "planned_looks", None))
    return {k: v for k, v in intended.items() if k != "comparisons"}


def cell(run: Run) -> str:
    """This run's key in run.json's decision settings."""
    from runtime.reports.decision import cell_of

    spec = run.spec
    return cell_of(getattr(spec, "env", "tau2"), getattr(spec, "domain", ""), getattr(spec, "tested_model", ""))
