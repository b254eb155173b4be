"""``python -m runtime.report RUN --export FORMAT DIR [--submission ARM]``: the run folder opened
where the field already looks. ``tau3``: τ-bench's own results files (``export_tau3``);
``inspect``: inspect_ai eval logs (``export_inspect``). ``--submission ARM`` (with ``tau3``)
writes only that arm's files, for the τ-bench leaderboard, and refuses in one line an arm
whose critic saw the hidden supervision, which the leaderboard forbids.

Exit codes: 0 when at least one file was written (what was left out is named on stderr, one
line each); 1 when nothing could be exported (each reason named); 2 for a bad format, folder or
arm (one line, nothing written). The run folder is only read.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path
from typing import Optional

from runtime.folder.durable import WriteFailed
from runtime.reports.export_common import (FORMATS, LEADERBOARD_RULE, ArmKey, Export, Folder, errored,
                                           out_dir_problem, read_folder)

LEADERBOARD_TRIALS = 4
"""The leaderboard reports pass^1..pass^4: every task run at least four times."""


def _err(line: str) -> None:
    print(line, file=sys.stderr)


def usage_problem(fmt: str, out: Path, run: Path, submission: Optional[str]) -> Optional[str]:
    if fmt not in FORMATS:
        return f"--export {fmt!r} is not a format; accepted: {', '.join(FORMATS)}"
    if submission is not None and fmt != "tau3":
        return "--submission goes with --export tau3 (the τ-bench leaderboard takes τ-bench results files)"
    if problem := out_dir_problem(out, run):
        return f"--export {fmt} {out}: {problem}"
    return None


def pick_submission(folder: Folder, name: str) -> tuple[Optional[list[ArmKey]], Optional[str]]:
    """The arm's keys (one per domain and model), or the one line that refuses it."""
    arms = folder.arms()
    labels = sorted({k.label for k in arms if k.env in ("tau2", "tau3")})
    wanted = "refine" if name == "refine:anti-leak" else name
    keys = [k for k in arms if k.label == wanted and k.env in ("tau2", "tau3")]
    if not keys:
        return None, (f"--submission {name!r}: the run has no such τ-bench arm; its arms: "
                      f"{', '.join(labels) or '(none)'}")
    if any(k.saw_supervision for k in keys):
        return None, (f"--submission {name}: refused: its critic saw the hidden supervision, and {LEADERBOARD_RULE}; "
                      "submit an arm that never saw it (direct, plan-first, refine:self-* or refine:critic-*), "
                      "or export this one for viewing with --export tau3")
    return keys, None


def leaderboard_notes(folder: Folder, keys: list[ArmKey], base: dict[str, list[str]]) -> list[str]:
    """What the leaderboard's own check (``tau2 submit prepare``) will find short: fewer than
    four trials, tasks of the base split not run, errored episodes (a trial short)."""
    arms = folder.arms()
    notes = []
    for k in keys:
        records = arms[k]
        trials = max(r.key.trial for r in records) + 1
        if trials < LEADERBOARD_TRIALS:
            notes.append(f"{k.domain}: {trials} trial(s); the leaderboard's pass^k needs {LEADERBOARD_TRIALS}")
        if base.get(k.domain):
            if missing := sorted(set(base[k.domain]) - {r.key.task_id for r in records}):
                notes.append(f"{k.domain}: {len(missing)} of the {len(base[k.domain])} tasks of the base split "
                             "not run; the leaderboard wants all of them")
        if bad := errored(records):
            notes.append(f"{k.domain}: {len(bad)} errored episode(s) are not exported, so those tasks are a "
                         "trial short; `--retry-errors` runs them again")
    return notes


def run(run_folder: Path, fmt: str, out: Path, submission: Optional[str] = None) -> int:
    if problem := usage_problem(fmt, out, run_folder, submission):
        _err(f"error: {problem}")
        return 2
    folder = read_folder(run_folder)
    if not folder.records:
        for line in folder.left_out:
            _err(f"left out: {line}")
        _err(f"error: {run_folder}: no readable records to export")
        return 1
    try:
        if fmt == "inspect":
            from runtime.reports import export_inspect

            if why := export_inspect.available():
                _err(f"error: --export inspect: {why}")
                return 2
            done = export_inspect.export(folder, out)
        else:
            done = _tau3(folder, out, submission)
            if done is None:
                return 2
    except WriteFailed as exc:
        _err(f"error: {exc}; the files written before are whole")
        return 1
    return report(done)


def _tau3(folder: Folder, out: Path, submission: Optional[str]) -> Optional[Export]:
    from runtime.reports import export_tau3

    if submission is None:
        return export_tau3.export(folder, out)
    keys, refusal = pick_submission(folder, submission)
    if refusal:
        _err(f"error: {refusal}")
        return None
    cache: dict = {}

    def defs_of(env, domains, ids):
        cache[env] = export_tau3.definitions(env, domains, ids)
        return cache[env]

    done = export_tau3.export(folder, out, arms=lambda k: k in keys, defs_of=defs_of)
    base = {d: v.get("base") or [] for env in cache.values() for d, v in env.items()}
    for note in leaderboard_notes(folder, keys, base):
        _err(f"warning: {note}")
    return done


def report(done: Export) -> int:
    for line in done.left_out:
        _err(f"left out: {line}")
    for path in done.written:
        print(path)
    if not done.written:
        _err("error: nothing could be exported (see the lines above)")
        return 1
    return 0


def regraded_folder(folder: Folder, regraded: dict[str, dict]) -> tuple[Folder, dict[str, dict], list[str]]:
    """The records τ³ re-scored (with the release's reward info), and a line per kind of record
    it could not."""
    keep, skipped = [], defaultdict(int)
    for r in folder.records:
        got = regraded.get(r.record_id) or {}
        if got.get("reward_info") is not None:
            keep.append(r)
        else:
            skipped[got.get("skipped", "not re-graded")] += 1
    lines = [f"{n} record(s) not re-graded by τ³: {why}" for why, n in sorted(skipped.items())]
    rewards = {r.record_id: regraded[r.record_id]["reward_info"] for r in keep}
    return Folder(folder.path, keep, folder.settings, folder.left_out + lines), rewards, lines


def write_regraded(run_folder: Path, regraded: dict[str, dict], out: Path) -> Export:
    """``--regrade tau3 --regrade-out DIR``: the τ² run as τ-bench results files whose tasks are
    τ³'s and whose rewards are τ³'s evaluator's: what ``tau2 evaluate-trajs --fresh-tasks -o``
    writes from the ``--export tau3`` files."""
    from runtime.reports import export_tau3

    folder, rewards, _ = regraded_folder(read_folder(run_folder), regraded)
    domains = sorted({r.key.domain for r in folder.records})
    fresh = export_tau3.tau3_definitions(domains) if domains else {}
    return export_tau3.export(folder, out, defs_of=lambda env, d, ids: fresh, rewards=rewards,
                              suffix=".tau3-regraded")
