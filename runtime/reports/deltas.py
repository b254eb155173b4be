"""Every arm against Plan-first, as ``summary.json``, the explorer's index and the ablation show
it: Δ with its clustered 95 % interval and p-value, the Δ the run could detect at its own
variance, the plain verdict, the variance components of the pair (``runtime.stats.components``)
and, when several arms are compared with the same Plan-first, Holm's adjusted p-values
(family-wise error ≤ 5 % over the family) so one lucky strategy of many is not read as an effect.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from runtime.folder.records import AA_MODE
from runtime.reports.stats import task_delta

CONTROL = "plan-first"
CORRECTION = "Holm"


def components_fields(part: pd.DataFrame, arms: tuple[str, ...], column: str = "arm") -> dict[str, Any] | None:
    """The variance components of ``arms`` in ``part`` (scored episodes), each with its
    task-resampled 95 % interval; ``None`` when fewer than two tasks have both arms."""
    from runtime.stats.components import estimate

    ok = part[part["status"] == "ok"] if "status" in part else part
    try:
        found = estimate(ok, arms, arm=column, resamples=500)
    except ValueError:
        return None
    out: dict[str, Any] = {"method": "method of moments; 95% intervals from resampling tasks "
                                     "(coverage measured in bench/CALIBRATION.md)",
                           "tasks": found.tasks, "trials": found.trials}
    for name in ("between_task", "task_mode", "within_task"):
        out[name] = {"estimate": getattr(found.components, name), "low": getattr(found.low, name),
                     "high": getattr(found.high, name)}
    if found.notes:
        out["notes"] = list(found.notes)
    return out


def comparisons(df: pd.DataFrame, *, column: str = "arm", control: str = CONTROL,
                scale: float = 1.0) -> list[dict[str, Any]]:
    """One entry per arm other than ``control`` that shares tasks with it, in ``df`` (the
    summary's frame: ``arm``, ``domain``, ``task_id``, ``score``, ``status``)."""
    if df.empty or control not in set(df[column]):
        return []
    base = df[df[column] == control]
    rows = []
    for name in sorted(set(df[column]) - {control}):
        part = df[df[column] == name]
        d = task_delta(part, base)
        if d is None:
            continue
        digits = 1 if scale != 1.0 else 2
        rows.append({"treatment": name, "control": control,
                     "kind": "A/A (noise floor)" if name == AA_MODE else "comparison", "delta": d.mean, "low": d.low,
                     "high": d.high, "p": d.p, "sign_p": d.sign_p, "tasks": d.n, "pairs": d.pairs, "mde": d.mde,
                     "floor_only": d.floor_only,
                     "verdict": d.verdict(digits=digits, scale=scale),
                     "components": components_fields(pd.concat([part, base]), (name, control), column)})
    # the A/A arm checks the noise floor; it is not one of the hypotheses the correction guards
    with_p = [r for r in rows if r["p"] == r["p"] and r["treatment"] != AA_MODE]
    if len(with_p) > 1:
        from runtime.stats.intervals import holm

        for r, adjusted in zip(with_p, holm([r["p"] for r in with_p])):
            r["p_holm"] = adjusted
            r["correction"] = CORRECTION
    return rows


def components_line(c: dict[str, Any] | None, digits: int = 4) -> str:
    if not c:
        return "–"
    return "; ".join(f"{label} {c[name]['estimate']:.{digits}f} [{c[name]['low']:.{digits}f}, "
                     f"{c[name]['high']:.{digits}f}]" for name, label in
                     (("between_task", "between-task"), ("task_mode", "task × arm"), ("within_task", "within-task")))
