"""What every export of a run folder shares (``python -m runtime.report RUN --export FORMAT DIR``):
the folder read without changing it, its records grouped by arm (environment, domain, mode,
critique strategy, tested model), whether an arm's critic saw the hidden supervision, the
settings each record was made with, and the list of what was left out and why.

An export writes only under DIR (never inside the run folder) and exports what is whole: a record
that cannot be read, an errored episode, a domain whose task definitions cannot be had, each is
named in one line of ``Export.left_out``; the export fails only when nothing could be written.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from critique.strategies import DEFAULT_STRATEGY, STRATEGIES
from runtime.folder.records import EpisodeRecord
from runtime.folder.run_info import RunInfoError, known_settings, read_run_info
from runtime.folder.store import RunStore, write_text_atomic
from runtime.reports.summary import arm

FORMATS = ("tau3", "inspect")
LEADERBOARD_RULE = ("the τ-bench leaderboard forbids any access to reference actions or hidden goals "
                    "(the task's evaluation criteria and user instructions)")


def saw_supervision(mode: str, strategy: str) -> bool:
    """Whether the arm's plan was revised after a critic that saw the hidden supervision. Only
    Refine has a critic; a strategy this runtime does not know is taken to have seen it (an
    export may not call an arm clean that it cannot vouch for)."""
    if mode != "refine":
        return False
    known = STRATEGIES.get(strategy or DEFAULT_STRATEGY)
    if known is None:
        return True
    return bool(known.settings is not None and known.settings.sees_supervision)


@dataclass(frozen=True, order=True)
class ArmKey:
    env: str
    domain: str
    mode: str
    strategy: str
    model: str

    @property
    def label(self) -> str:
        return arm(self.mode, self.strategy)

    @property
    def saw_supervision(self) -> bool:
        return saw_supervision(self.mode, self.strategy)

    def file_stem(self) -> str:
        """``env.domain.arm.model``, with ``.saw-supervision`` for an arm that may be viewed but
        not submitted (characters a file name should not hold become ``-``)."""
        name = arm(self.mode, self.strategy).replace(" (upper bound)", "")
        parts = [self.env, self.domain, name, self.model]
        stem = ".".join(slug(p) for p in parts)
        return stem + (".saw-supervision" if self.saw_supervision else "")


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "x"


def arm_key(record: EpisodeRecord) -> ArmKey:
    k = record.key
    strategy = (k.strategy or DEFAULT_STRATEGY) if k.mode == "refine" else ""
    return ArmKey(k.env, k.domain, k.mode, strategy, k.model)


@dataclass
class Export:
    """What an export wrote and what it left out (one line each)."""

    written: list[Path] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What a user should know before opening the files elsewhere (one line each)."""

    def leave_out(self, what: str) -> None:
        if what not in self.left_out:
            self.left_out.append(what)


@dataclass
class Folder:
    """A run folder read for export: its records, the settings of their fingerprints, and what
    could not be read."""

    path: Path
    records: list[EpisodeRecord]
    settings: dict[str, dict[str, Any]]
    left_out: list[str]

    def settings_of(self, record: EpisodeRecord) -> dict[str, Any]:
        fp = self.settings.get(record.fingerprint or "")
        return dict(fp.get("settings") or {}) if fp else {}

    def arms(self) -> dict[ArmKey, list[EpisodeRecord]]:
        out: dict[ArmKey, list[EpisodeRecord]] = defaultdict(list)
        for r in self.records:
            out[arm_key(r)].append(r)
        return {k: sorted(v, key=lambda r: (_order(r.key.task_id), r.key.trial)) for k, v in sorted(out.items())}


def _order(task_id: str) -> tuple:
    return (0, int(task_id), "") if task_id.isdigit() else (1, 0, task_id)


def read_folder(path: Path) -> Folder:
    """The folder's records, read only: unreadable lines and records that fail their digest are
    named, not exported; a ``run.json`` that cannot be read leaves the settings unknown."""
    store = RunStore(path, read_only=True)
    records = store.records()
    left_out = []
    if note := store.skipped_note():
        left_out.append(note)
    try:
        info = read_run_info(path)
        settings = known_settings(info)
        if info is None:
            left_out.append(f"the run's settings (models, seed, max steps): {Path(path) / 'run.json'} "
                            "does not exist, so no file holds them")
    except RunInfoError as exc:
        settings = {}
        left_out.append(f"the run's settings (models, seed, max steps): {exc}")
    return Folder(Path(path), records, settings, left_out)


def out_dir_problem(out: Path, run: Path, force: bool = False) -> str | None:
    """Why ``out`` cannot take the export (None when it can; it is created if absent). A folder
    that already holds files is refused unless ``force`` (``clear`` then empties it): old files
    beside the new ones would be read with them (``tau2 submit prepare DIR`` takes every file)."""
    out, run = Path(out), Path(run)
    if out.exists() and not out.is_dir():
        return "it is a file; give a folder"
    try:
        inside = out.resolve() == run.resolve() or run.resolve() in out.resolve().parents
    except OSError:
        inside = False
    if inside:
        return "it is inside the run folder, which an export never changes; give a folder outside it"
    if not out.exists() and not out.parent.is_dir():
        return f"folder {out.parent} does not exist"
    if out.is_dir() and (held := old_files(out)):
        if (out / "records.jsonl").exists():
            return "it is a run folder; give an empty or new folder"
        if not force:
            return (f"it already holds {len(held)} file(s), which would be read with the export's "
                    "(a later `tau2 submit prepare DIR` takes every file); give an empty or new "
                    "folder, or --force to remove them first")
    return None


def old_files(out: Path) -> list[Path]:
    """The files under ``out`` (at any depth)."""
    try:
        return [p for p in Path(out).rglob("*") if not p.is_dir()]
    except OSError:
        return []


def clear(out: Path) -> int:
    """Empty ``out`` (``--force``) and say how many files went."""
    import shutil

    gone = len(old_files(out))
    for entry in Path(out).iterdir() if Path(out).is_dir() else []:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    return gone


def write_json_file(path: Path, text: str) -> Path:
    write_text_atomic(path, text)
    return path


def errored(records: Iterable[EpisodeRecord]) -> list[EpisodeRecord]:
    return [r for r in records if r.status != "ok" or r.score is None]


def tokens_and_cost(record: EpisodeRecord, purposes: tuple[str, ...] | None = None,
                    exclude: tuple[str, ...] = ()) -> tuple[int, int, float]:
    """(prompt tokens, completion tokens, cost in USD) over the record's model calls, all of them
    or those whose purpose starts with one of ``purposes``, less those of ``exclude``."""
    by = (record.usage or {}).get("by_purpose") or {}
    prompt = completion = 0
    cost = 0.0
    for purpose, use in by.items():
        if purposes is not None and not purpose.startswith(purposes):
            continue
        if exclude and purpose.startswith(exclude):
            continue
        prompt += int(use.get("prompt_tokens") or 0)
        completion += int(use.get("completion_tokens") or 0)
        cost += float(use.get("cost_usd") or 0.0)
    return prompt, completion, cost
