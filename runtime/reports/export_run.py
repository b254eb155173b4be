"""``python -m runtime.report RUN --export FORMAT DIR [--submission ARM]``: the run folder opened
where the field already looks. ``tau3``: τ-bench's own results files (``export_tau3``);
``inspect``: inspect_ai eval logs (``export_inspect``). ``--submission ARM`` (with ``tau3``)
writes only that arm's files, for the τ-bench leaderboard, and refuses in one line an arm
whose critic saw the hidden supervision, which the leaderboard forbids, and a run whose tasks
are not τ³-bench's (the leaderboard's). A plain ``--export tau3`` leaves such an arm out, and
writes it only when it is named (``--arm ARM``, for viewing), the file then saying so inside.
``DIR`` must be empty or new, unless ``--force`` (its old files are then removed, and counted).

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
from runtime.reports.export_common import clear as clear_out

LEADERBOARD_TRIALS = 4
"""The leaderboard reports pass^1..pass^4: every task run at least four times."""


def _err(line: str) -> None:
    print(line, file=sys.stderr)


def usage_problem(fmt: str, out: Path, run: Path, submission: Optional[str], force: bool = False,
                  arm: Optional[str] = None) -> Optional[str]:
    if fmt not in FORMATS:
        return f"--export {fmt!r} is not a format; accepted: {', '.join(FORMATS)}"
    if submission is not None and fmt != "tau3":
        return "--submission goes with --export tau3 (the τ-bench leaderboard takes τ-bench results files)"
    if submission is not None and arm is not None:
        return "--submission ARM already names the arm; give --submission or --arm, not both"
    if problem := out_dir_problem(out, run, force):
        return f"--export {fmt} {out}: {problem}"
    return None


def pick_arm(folder: Folder, name: str, flag: str) -> tuple[Optional[list[ArmKey]], Optional[str]]:
    """The named arm's keys (one per domain and model), or the one line that says it has none."""
    arms = folder.arms()
    labels = sorted({k.label for k in arms})
    wanted = "refine" if name == "refine:anti-leak" else name
    keys = [k for k in arms if k.label == wanted]
    if not keys:
        return None, f"{flag} {name!r}: the run has no such arm; its arms: {', '.join(labels) or '(none)'}"
    return keys, None


def pick_submission(folder: Folder, name: str) -> tuple[Optional[list[ArmKey]], Optional[str]]:
    """The arm's keys (one per domain and model), or the one line that refuses it."""
    keys, missing = pick_arm(folder, name, "--submission")
    keys = [k for k in keys or [] if k.env in ("tau2", "tau3")]
    if not keys:
        return None, missing or f"--submission {name!r}: the arm is not a τ-bench one"
    if any(k.saw_supervision for k in keys):
        return None, (f"--submission {name}: refused: its critic saw the hidden supervision, and {LEADERBOARD_RULE}; "
                      "submit an arm that never saw it (direct, plan-first, refine:self-* or refine:critic-*), "
                      f"or write this one for viewing with --export tau3 DIR --arm {name}")
    if other := sorted({k.env for k in keys if k.env != "tau3"}):
        return None, (f"--submission {name}: refused: the run's tasks are {', '.join(other)}'s, and the "
                      "leaderboard's tasks are τ³-bench's (`tau2 submit prepare` finds them mismatched); "
                      "re-run with --env tau3 (--regrade tau3 re-scores this run against τ³'s tasks for "
                      "comparison, but its conversations were held on these tasks)")
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


def run(run_folder: Path, fmt: str, out: Path, submission: Optional[str] = None, force: bool = False,
        arm: Optional[str] = None) -> int:
    if problem := usage_problem(fmt, out, run_folder, submission, force, arm):
        _err(f"error: {problem}")
        return 2
    folder = read_folder(run_folder)
    if not folder.records:
        for line in folder.left_out:
            _err(f"left out: {line}")
        _err(f"error: {run_folder}: no readable records to export")
        return 1
    keys = None
    if arm is not None:
        keys, missing = pick_arm(folder, arm, "--arm")
        if missing:
            _err(f"error: {missing}")
            return 2
    if fmt == "inspect":
        from runtime.reports import export_inspect

        if why := export_inspect.available():
            _err(f"error: --export inspect: {why}")
            return 2
    elif submission is not None:
        _, refusal = pick_submission(folder, submission)
        if refusal:
            _err(f"error: {refusal}")
            return 2
    if force and (gone := clear_out(out)):
        _err(f"note: --force: removed {gone} old file(s) from {out}")
    try:
        if fmt == "inspect":
            done = export_inspect.export(folder, out, arms=None if keys is None else keys.__contains__)
        else:
            done = _tau3(folder, out, submission, keys)
    except WriteFailed as exc:
        _err(f"error: {exc}; the files written before are whole")
        return 1
    return report(done)


def _tau3(folder: Folder, out: Path, submission: Optional[str], named: Optional[list[ArmKey]]) -> Export:
    from runtime.reports import export_tau3

    if submission is None:
        return export_tau3.export(folder, out, arms=None if named is None else named.__contains__)
    keys, _ = pick_submission(folder, submission)
    assert keys is not None  # refused before anything was written
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
    for line in done.notes:
        _err(f"note: {line}")
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


def write_regraded(run_folder: Path, regraded: dict[str, dict], out: Path, force: bool = False) -> Export:
    """``--regrade tau3 --regrade-out DIR``: the τ² run as τ-bench results files whose tasks are
    τ³'s and whose rewards are τ³'s evaluator's: what ``tau2 evaluate-trajs --fresh-tasks -o``
    writes from the ``--export tau3`` files."""
    from runtime.reports import export_tau3

    if force and (gone := clear_out(out)):
        _err(f"note: --force: removed {gone} old file(s) from {out}")
    folder, rewards, _ = regraded_folder(read_folder(run_folder), regraded)
    domains = sorted({r.key.domain for r in folder.records})
    fresh = export_tau3.tau3_definitions(domains) if domains else {}
    return export_tau3.export(folder, out, defs_of=lambda env, d, ids: fresh, rewards=rewards,
                              suffix=".tau3-regraded")
