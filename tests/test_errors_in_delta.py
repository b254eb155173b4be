"""Errored episodes in the statistics: Δ complete-case and with errors scored 0 on a constructed
example with known answers, pass^k with τ²'s success threshold, the error-rate warnings, and the
report and the ablation table agreeing on Δ for the same records."""

from __future__ import annotations

import pandas as pd
import pytest

from runtime.reports.ablation import ablation_table
from runtime.reports.report import rows
from runtime.reports.stats import ArmErrors, arm_errors, delta_lines, error_warnings, pass_k, task_delta


def episodes(mode: str, spec: dict[str, list[float | None]], strategy: str = "") -> list[dict]:
    """``spec``: task → one entry per trial, a score or ``None`` for an errored episode."""
    out = []
    for task, trials in spec.items():
        for trial, score in enumerate(trials):
            out.append({"env": "tau2", "model": "m", "domain": "airline", "task_id": task, "mode": mode,
                        "strategy": strategy if mode == "refine" else "", "trial": trial,
                        "status": "ok" if score is not None else "error", "score": score,
                        "error_kind": None if score is not None else "infrastructure",
                        "tokens": 10, "cost_usd": 0.0, "guard_fired": False,
                        **{f"{p}_{f}": None for p in ("p0", "p1") for f in ("correct", "grade")},
                        **{f"{p}_E{i}": None for p in ("p0", "p1") for i in range(1, 7)}})
    return out


# Refine errors on task "b" (one of two trials) and on all of task "c"; plan-first never errors.
FIRST = {"a": [1.0, 0.0], "b": [1.0, 1.0], "c": [0.0, 0.0], "d": [1.0, 1.0]}
REFINE = {"a": [1.0, 1.0], "b": [1.0, None], "c": [None, None], "d": [1.0, 1.0]}


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame(episodes("plan-first", FIRST) + episodes("refine", REFINE, "anti-leak"))


def test_the_two_lines_of_delta_on_a_constructed_example(frame):
    refine, first = frame[frame["mode"] == "refine"], frame[frame["mode"] == "plan-first"]
    lines = delta_lines(refine, first)
    complete, as_zero = lines["complete"], lines["errors_as_0"]
    # Pairs complete in both arms, by trial: a (1 − 1, 1 − 0: +0.5), b's first trial only
    # (1 − 1: 0; its second pair lost to refine's error, not the task), d (0); c has no pair.
    # Δ = 0.5 / 3 over 3 tasks and 5 pairs.
    assert complete.n == 3 and complete.mean == pytest.approx(0.5 / 3) and complete.pairs == 5
    # Errors as 0: a +0.5, b 0.5 − 1.0, c 0 − 0, d 0 → Δ = 0 over 4 tasks.
    assert as_zero.n == 4 and as_zero.mean == pytest.approx(0.0)
    assert (as_zero.wins, as_zero.losses, as_zero.ties) == (1, 1, 2)
    # Dropping a task whenever one of its episodes errored would leave b out (+0.25 over 2).
    assert task_delta(refine, first).mean == complete.mean and task_delta(refine, first).n == 3
    with pytest.raises(ValueError, match="errors must be one of"):
        task_delta(refine, first, errors="drop")


def test_pass_k_counts_success_like_tau2_and_errors_as_failures():
    df = pd.DataFrame(episodes("refine", {"a": [1.0 - 1e-7, 1.0], "b": [0.99, 1.0], "c": [1.0, None]}))
    got = pass_k(df, trials=2)
    # a: 2/2 successes (1 − 1e-7 ≥ 1 − 1e-6); b: 1/2 (0.99 is not a success); c: 1/2 (error = failure).
    assert got[1] == pytest.approx((1 + 0.5 + 0.5) / 3)
    assert got[2] == pytest.approx((1 + 0 + 0) / 3)


def test_error_warnings_flag_a_high_rate_and_a_gap_between_arms():
    assert error_warnings({"plan-first": ArmErrors(100, 1, 0), "refine": ArmErrors(100, 3, 3)}) == []
    high = error_warnings({"plan-first": ArmErrors(100, 0, 0), "refine": ArmErrors(100, 6, 6)})
    assert any("refine: 6/100" in w and "> 5%" in w for w in high)
    assert any("differ between arms by 6.0 points" in w for w in high)
    gap = error_warnings({"plan-first": ArmErrors(100, 1, 0), "refine": ArmErrors(100, 4, 0)})
    assert len(gap) == 1 and "3.0 points" in gap[0]
    assert arm_errors(pd.DataFrame(episodes("refine", REFINE))) == ArmErrors(8, 3, 3)


def test_report_and_ablation_table_give_the_same_delta(frame):
    (row,) = rows(frame, {})
    table = ablation_table(frame)
    ablation = table[table["strategy"] == "anti-leak"].iloc[0]
    assert row["delta"] == pytest.approx(0.5 / 3) and row["delta0"] == pytest.approx(0.0)
    assert ablation["delta"] == row["delta"] and ablation["ci_low"] == row["delta_low"]
    assert ablation["ci_high"] == row["delta_high"] and ablation["sign_p"] == row["sign_p"]
    assert ablation["delta_errors_as_0"] == row["delta0"]
    assert row["refine_errors"] == 3 and row["refine_error_rate"] == pytest.approx(3 / 8)
    assert row["plan-first_errors"] == 0 and row["refine_infrastructure_errors"] == 3
    assert any("refine: 3/8" in w for w in row["error_warnings"])


def _raised(exc: BaseException, cause: BaseException | None = None) -> BaseException:
    """``exc`` as it arrives after ``raise exc from cause``."""
    try:
        raise exc from cause
    except BaseException as caught:  # noqa: BLE001 - the point is to capture it
        return caught


def test_error_kinds_tell_infrastructure_from_the_agent():
    import docker.errors
    import litellm
    from pydantic import BaseModel

    from critique.critic import CriticError
    from envs.server_client import ServerCrashed
    from planners.llm import PlanParseError
    from runtime.episode.failures import error_kind
    from runtime.llm.layer import ModelError

    down = litellm.exceptions.APIConnectionError(message="refused", llm_provider="x", model="m")

    class Strict(BaseModel):
        n: int

    try:
        Strict(n="many")
    except Exception as exc:  # noqa: BLE001
        invalid = exc
    cases = {
        "infrastructure": [_raised(ModelError("gave up after 6 tries"), down), ServerCrashed("env server died"),
                           docker.errors.APIError("container killed"), TimeoutError("no answer"),
                           _raised(RuntimeError("wrapped"), ConnectionResetError("reset"))],
        "model_output": [PlanParseError("no valid plan"), CriticError("no valid critique"), invalid,
                         _raised(RuntimeError("while revising"), PlanParseError("no valid plan"))],
        "internal": [KeyError("p0"), _raised(RuntimeError("bug"), ValueError("x"))],
    }
    got = {kind: [error_kind(e) for e in excs] for kind, excs in cases.items()}
    assert got == {kind: [kind] * len(excs) for kind, excs in cases.items()}


def test_records_written_before_error_kinds_still_load():
    from runtime.folder.records import EpisodeRecord

    old = {"run_id": "r", "key": {"env": "tau2", "domain": "airline", "task_id": "1", "mode": "refine",
                                  "model": "m", "trial": 0}, "record_id": "x", "status": "error", "seed": 1,
           "error": {"stage": "critique", "type": "ModelError", "message": "down"},
           "started_at": "t", "finished_at": "t"}
    record = EpisodeRecord.model_validate(old)
    assert record.error.kind is None
    from runtime.reports.summary import summarize

    assert summarize([record])["by_arm"]["refine"]["infrastructure_errors"] == 0
