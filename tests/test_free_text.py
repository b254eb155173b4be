"""Refine(anti-leak) − Refine(sealed) in the reports: the paired, task-clustered difference, its
detectable size and the sentence that reads it, on constructed records with known answers."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from runtime.reports import free_text
from runtime.reports.ablation import ablation_table, write_table
from runtime.reports.report import cells, markdown, rows
from runtime.reports.stats import task_delta
from tests.test_errors_in_delta import episodes


def _scores(p: float, tasks: int = 40, trials: int = 3, seed: int = 0) -> dict[str, list[float]]:
    rng = random.Random(f"{p}:{seed}")
    return {f"t{i}": [float(rng.random() < p) for _ in range(trials)] for i in range(tasks)}


def _frame(free: dict, sealed: dict, first: dict | None = None) -> pd.DataFrame:
    first = first or _scores(0.3, seed=9)
    return pd.DataFrame(episodes("plan-first", first) + episodes("refine", free, "anti-leak")
                        + episodes("refine", sealed, "sealed"))


def _reading(df: pd.DataFrame) -> dict:
    (row,) = free_text.free_text_rows(cells(df))
    return row


def test_the_row_is_the_paired_clustered_delta_of_the_two_refine_arms():
    df = _frame(_scores(0.8, seed=1), _scores(0.35, seed=2))
    row = _reading(df)
    refine = df[df["mode"] == "refine"]
    d = task_delta(refine[refine["strategy"] == "anti-leak"], refine[refine["strategy"] == "sealed"])
    assert (row["delta"], row["low"], row["high"], row["mde"], row["tasks"]) == (d.mean, d.low, d.high, d.mde, 40)
    assert row["low"] > 0 and "the free text carried part of Refine's gain" in row["reading"]


def test_each_reading_follows_the_interval():
    free = _scores(0.5, tasks=60, seed=3)
    sealed = {task: list(trials) for task, trials in free.items()}
    up, down = (next(t for t, v in free.items() if v[0] == x) for x in (0.0, 1.0))
    sealed[up][0], sealed[down][0] = 1.0, 0.0  # two tasks differ, in opposite directions
    inside = _reading(_frame(free, sealed))
    assert inside["delta"] == pytest.approx(0) and -inside["mde"] < inside["low"] < 0 < inside["high"] < inside["mde"]
    assert "no evidence that the free text matters at this size" in inside["reading"]
    identical = _reading(_frame(free, free))  # no difference at all: [0, 0] within ±0
    assert "no evidence that the free text matters" in identical["reading"]
    better = _reading(_frame(_scores(0.3, seed=4), _scores(0.85, seed=5)))
    assert better["high"] < 0 and "sealed scores higher" in better["reading"]
    # few tasks, noisy: the interval covers 0 and reaches past the detectable size
    few = _reading(_frame(_scores(0.5, tasks=5, trials=1, seed=6), _scores(0.4, tasks=5, trials=1, seed=7),
                          _scores(0.3, tasks=5, trials=1, seed=8)))
    assert few["low"] < 0 < few["high"] and max(-few["low"], few["high"]) >= few["mde"]
    assert "inconclusive" in few["reading"]
    one = _reading(_frame({"t0": [1.0]}, {"t0": [0.0]}, {"t0": [0.0]}))
    assert one["reading"] == "too few tasks to tell whether the free text matters"


def test_the_report_puts_the_row_under_table_3_and_only_with_both_arms():
    df = _frame(_scores(0.8, seed=1), _scores(0.35, seed=2))
    section = free_text.markdown_section(free_text.free_text_rows(cells(df)))
    md = markdown(rows(df, {}), "t", section)
    assert md.index("| tau2 | m | sealed |") < md.index(free_text.TITLE) < md.index("## What each Δ can tell")
    (line,) = [ln for ln in md.splitlines() if ln.startswith("| tau2 | m | 40 |")]
    assert " [+" in line and "| ±0." in line  # Δ with its interval, and the detectable size
    assert "- tau2 · m: +" in md
    without = _frame(_scores(0.8, seed=1), _scores(0.35, seed=2))
    without = without[without["strategy"] != "sealed"]
    assert free_text.free_text_rows(cells(without)) == [] and free_text.markdown_section([]) == ""


def test_toolsandbox_is_read_in_similarity_points():
    df = _frame(_scores(0.8, seed=1), _scores(0.35, seed=2)).assign(env="toolsandbox")
    (row,) = free_text.free_text_rows(cells(df), {"toolsandbox": {"scale": 100}})
    assert row["scale"] == 100 and f"{row['delta'] * 100:+.1f} [" in row["reading"]


def test_the_ablation_lists_sealed_with_the_other_strategies(tmp_path):
    df = _frame(_scores(0.8, seed=1), _scores(0.35, seed=2))
    table = ablation_table(df)
    assert list(table["strategy"]) == ["anti-leak", "sealed"]
    assert table.set_index("strategy").loc["sealed", "delta"] == pytest.approx(
        task_delta(df[df["strategy"] == "sealed"], df[df["mode"] == "plan-first"]).mean)
    write_table(table, tmp_path, beside=free_text.section_for(df))
    md = (tmp_path / "ablation.md").read_text()
    assert "| sealed |" in md and "`sealed`: the critic that sees the reference" in md
    assert free_text.TITLE in md and "the free text carried part of Refine's gain" in md
