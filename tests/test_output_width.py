"""Every table the CLI prints fits 80 and 120 columns without cutting a figure, and text that is
not ours (error messages, task ids) survives rich's markup."""

from __future__ import annotations

import io
import math
import re

import pytest
from rich.console import Console

from runtime.reports.fit import Col, FitTable

WIDTHS = (80, 120)


def render(renderable, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, legacy_windows=False)
    console.print(renderable)
    return console.file.getvalue()


def check_fits(table: FitTable, width: int) -> str:
    """Every line within ``width``, no ellipsis, every figure whole on one line, every row label
    whole (folded onto lines of its column at most)."""
    text = render(table, width)
    assert max(len(line) for line in text.splitlines()) <= width, text
    assert "…" not in text, text
    rows = [[c.strip() for c in re.split(r"[│┃]", line)[1:-1]] for line in text.splitlines()
            if line.startswith(("│", "┃"))]
    cells = {c for row in rows for c in row}
    figures = [cell for row in table.rows for cell in row[table.labels:] if cell]
    missing = [f for f in figures if f not in cells]
    assert not missing, f"cut or wrapped: {missing}\n{text}"
    labels = "".join(row[0] for row in rows)  # folded down the first column, or (a turned
    labels += "".join(c for line in text.splitlines() if line.startswith("┃")  # table) across
                      for c in re.split(r"┃", line)[1:-1])  # its header
    for row in table.rows:
        assert row[0].replace(" ", "") in labels.replace(" ", ""), (row[0], text)
    return text


def _summary():
    arms = ["direct", "plan-first", "refine", "refine:critic-with-reference-metric", "refine:leaky"]
    row = {"n": 1080, "n_scored": 1079, "errors": 17, "mean_score": 0.4567, "score_name": "reward",
           "judge_p0_correct": 0.4123, "judge_p1_correct": 0.6789, "tokens": 123456789,
           "cost_usd": 1234.5678, "guard_fired": 345, "error_rate": 0.0157,
           "infrastructure_errors": 12, "limited": 33, "leak_critiques": 1080, "leak_retried": 120,
           "leak_redacted": 7, "leak_residual": 3, "provenance_audited": 1079,
           "provenance_unexplained": 12, "provenance_affected": 9, "provenance_rate": 0.0083}
    return {"by_arm": {a: dict(row) for a in arms}, "error_warnings": []}


@pytest.mark.parametrize("width", WIDTHS)
def test_summary_leak_and_provenance_tables_fit(width):
    from runtime.reports.leaks import leak_table
    from runtime.reports.provenance import provenance_table
    from runtime.reports.summary import summary_table

    summary = _summary()
    title = "tau2/airline — openai/gpt-4o-2024-11-20"
    for table in (summary_table(summary, title), leak_table(summary["by_arm"], title),
                  provenance_table(summary["by_arm"], title)):
        check_fits(table, width)


def test_summary_at_80_abbreviates_with_a_legend_and_at_120_keeps_headers():
    from runtime.reports.summary import summary_table

    table = summary_table(_summary(), "t")
    narrow, wide = render(table, 80), render(table, 120)
    assert "legend:" in narrow and "infra = infra errors" in " ".join(narrow.split())
    assert "legend:" not in render(FitTable("t", [Col("a", "b")], [["1"]]), 80)
    assert "mean" in wide and "1234.5678" in wide


@pytest.mark.parametrize("width", WIDTHS)
def test_the_three_arm_summary_is_one_table_at_80_and_120(width):
    """The default run's summary (three arms) is never split into a "(continued)" block: at 80
    columns it is turned, arms across and every figure named in full."""
    from runtime.reports.summary import summary_table

    summary = _summary()
    summary["by_arm"] = {a: summary["by_arm"][a] for a in ("direct", "plan-first", "refine")}
    text = check_fits(summary_table(summary, "tau2/airline — openai/gpt-4o-2024-11-20"), width)
    assert text.count("┏") == 1 and "(continued)" not in text and "legend:" not in text
    assert "1234.5678" in text and ("judge CR p0 → p1" in text or width > 80)


def test_the_first_plots_on_an_all_zero_run():
    """Scores at 0 sit on a 0–1 axis with their intervals (not an empty chart around 0); Δ is
    drawn over its detectable band."""
    from runtime.reports import plots

    row = {"env": "tau2", "model": "m", "strategy": "anti-leak", "delta": 0.0, "delta_low": -0.1,
           "delta_high": 0.1, "delta_mde": 0.15}
    for arm in ("direct", "plan-first", "refine"):
        row.update({f"{arm}_mean": 0.0, f"{arm}_low": 0.0, f"{arm}_high": 0.0})
    ax = plots.modes_figure([row]).axes[0]
    assert ax.get_ylim() == (0.0, 1.0) and len(ax.containers) == 3
    assert [t.get_text() for t in ax.texts] == ["0.00"] * 3
    band = plots.delta_figure([row]).axes[0]
    assert [p.get_width() for p in band.patches if p.get_label().startswith("detectable")] == [0.3]
    assert band.get_xlim()[1] >= 0.15


def test_a_delta_without_an_interval_is_drawn_without_one():
    """One task gives a Δ with no interval (NaN bounds) and no detectable size: the plot still
    draws, on a finite axis, instead of failing the whole report."""
    from runtime.reports import plots

    nan = float("nan")
    rows = [{"env": "tau2", "model": "m", "delta": 0.5, "delta_low": nan, "delta_high": nan, "delta_mde": nan},
            {"env": "tau2", "model": "n", "delta": nan, "delta_low": nan, "delta_high": nan, "delta_mde": None}]
    ax = plots.delta_figure(rows).axes[0]
    low, high = ax.get_xlim()
    assert low < -0.5 < 0.5 < high and all(map(math.isfinite, (low, high)))
    assert [t.get_text() for t in ax.texts] == ["+0.500 (no interval)"]


def test_a_table_too_wide_for_abbreviations_is_stacked_with_its_labels():
    columns = [Col("arm", left=True)] + [Col(f"figure number {i}", f"f{i}") for i in range(12)]
    rows = [["refine:critic-metric", *[f"{i * 1234.5678:.4f}" for i in range(12)]]]
    table = FitTable("wide", columns, rows)
    for width in WIDTHS:
        text = check_fits(table, width)
        assert text.count("┏") == len(table.layout(width)[0]) > 1  # stacked tables


@pytest.mark.parametrize("width", WIDTHS)
def test_category_table_fits(width):
    from runtime.reports.categories import category_table

    cats = {c: {"n": 129, "similarity": 0.5678, "turn_count": 12.3}
            for c in ("ALL_CATEGORIES", "MULTIPLE_USER_TURN", "THREE_DISTRACTION_TOOLS",
                      "TOOL_NAME_SCRAMBLED", "INSUFFICIENT_INFORMATION")}
    by_cat = {"direct": cats, "plan-first": cats, "refine": cats}
    table = category_table(by_cat, "toolsandbox — per category")
    check_fits(table, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_dry_run_table_fits_and_names_unpriced_roles(width, tmp_path):
    from runtime import table3

    config = table3.Table3Config.model_validate({
        "models": ["openai/gpt-4o-2024-11-20", "anthropic/claude-sonnet-4-5-20250929",
                   "hosted_vllm/Qwen/Qwen3-235B-A22B-Instruct-2507"],
        "critic_model": "gemini/gemini-3-pro-preview-unpriced",
        "environments": [{"env": "tau2", "domains": ["airline"], "tasks": 200}],
        "trials": 3, "out": str(tmp_path / "t3")})
    sample = {"tau2": {"airline": [str(i) for i in range(200)]}}
    console = Console(file=io.StringIO(), width=width, color_system=None)
    assert table3.dry_run(config, sample, console) == 0
    text = console.file.getvalue()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= width
    flat = " ".join(text.split())
    for model in config.models:
        assert model in text.replace("\n", "") or model in flat
    assert "UNPRICED critic_model: gemini/gemini-3-pro-preview-unpriced" in flat
    assert "UNPRICED judge_model" in flat  # the judge falls back to the critic


def test_error_line_keeps_bracketed_text(tmp_path):
    """``[service_issue]`` in a telecom task id must not vanish as rich markup."""
    from types import SimpleNamespace

    from runtime.cli import lifecycle as cli
    from runtime.folder.records import EpisodeKey, EpisodeRecord, StageError
    from runtime.folder.store import RunStore

    key = EpisodeKey(env="tau2", domain="telecom", task_id="[service_issue]airplane_mode_on",
                     mode="direct", model="m", trial=0)
    record = EpisodeRecord(run_id="r", key=key, record_id=key.id(), status="error", seed=0,
                           error=StageError(stage="execute", type="EnvError",
                                            message="task [service_issue]airplane_mode_on failed [bold]"),
                           started_at="t", finished_at="t")
    store = RunStore(tmp_path / "run")
    store.append(record)
    run = SimpleNamespace(store=store, keys=[key], out=store.root, models={}, embedded=False,
                          spec=SimpleNamespace(run_id="r", domain="telecom", tested_model="m"),
                          config=SimpleNamespace(env="tau2", until_decided=False))
    console = Console(file=io.StringIO(), width=200, color_system=None)
    cli.write_summary(run, console)
    text = console.file.getvalue()
    assert "task [service_issue]airplane_mode_on failed [bold]" in text


@pytest.mark.slow
def test_a_real_run_at_80_and_120_columns_and_its_first_plots(tmp_path):
    """A real all-zero run (the scripted executor leaves out its last write: every score 0, as
    the embedded model's) printed at 80 and at 120 columns: the summary is one table, nothing
    cut; its plot shows the scores on the 0–1 axis with their intervals, and Δ over its
    detectable band."""
    import os
    import subprocess
    import sys

    import matplotlib.image

    from runtime.folder.store import RunStore
    from runtime.reports import plots
    from runtime.reports.report import rows
    from runtime.reports.summary import frame

    out = tmp_path / "run"
    shown = {}
    for width in (80, 120):  # the second is a resume: the same summary, nothing run again
        done = subprocess.run(
            [sys.executable, "-m", "testkit.run_scripted", "--sabotage", "--", "--env", "tau2",
             "--domain", "airline", "--mode", "all", "--task-ids", "2,7", "--model", "scripted/roles",
             "--out", str(out), "--no-cache", "--concurrency", "2"],
            capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": str(width)})
        assert done.returncode == 0, done.stderr
        shown[width] = done.stdout
    for width, text in shown.items():
        table = [line for line in text.splitlines() if line[:1] in "┏┃│┡└"]
        assert table and max(len(line) for line in table) <= width, text
        assert "(continued)" not in text and "…" not in text, text
        flat = " ".join(text.split())
        for figure in ("direct", "plan-first", "refine", "0.000", "0.00 → 1.00"):
            assert figure in flat, (figure, text)
    assert "mean score" in shown[80] and "legend:" not in shown[80]  # full names, no legend

    for name in ("modes.png", "delta.png"):
        assert matplotlib.image.imread(out / name).shape[0] > 100
    table = rows(frame(RunStore(out).records()), {})
    assert {r["refine_mean"] for r in table} == {0.0}
    fig = plots.modes_figure(table)
    assert fig.axes[0].get_ylim() == (0.0, 1.0)  # not an empty chart around 0
    assert len(fig.axes[0].containers) == 3  # one point with its interval per arm
    band = plots.delta_figure([r for r in table if r.get("delta") is not None])
    assert any(p.get_label().startswith("detectable") for p in band.axes[0].patches)
