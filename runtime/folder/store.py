"""The run folder: an append-only record file, shared artifacts, and the run summary.

Writes are atomic: a record is one line appended under a lock and fsynced, so a crash can at
worst leave a torn last line, which readers skip; artifacts and summaries are written to a
temporary file and renamed into place. Nothing finished is ever rewritten or lost.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterator

from pydantic import ValidationError

from runtime.folder import integrity
from runtime.folder.integrity import sealed_line
from runtime.folder.durable import WriteFailed, append_whole, odd_kind, replace_whole
from runtime.folder.lock import LOCK_FILE
from runtime.folder.lost_attempts import FILE as LOST_ATTEMPTS
from runtime.folder.records import EpisodeRecord, score_problem
from runtime.folder.scrub import scrub, scrub_data

RECORDS = "records.jsonl"
SUMMARY = "summary.json"
RUN_INFO = "run.json"
SEALED_FROM = "sealed_from_line"
"""run.json's field: the first line of records.jsonl written by a runtime that seals records
(``runtime.folder.integrity``); the lines before it were written before digests existed."""


def write_text_atomic(path: Path, text: str | bytes) -> None:
    """Write ``text`` (or bytes: a plot) to a temporary file beside ``path`` and rename it over
    ``path``: a reader (or a run killed mid-write) sees the old file or the new one, never half
    of one. The one way every file of a run folder but ``records.jsonl`` is written: a failure
    is a ``WriteFailed`` naming the file (one line, exit 5)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteFailed(path.parent, exc) from exc
    replace_whole(path, text, path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp"))


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(scrub_data(json.loads(json.dumps(data, default=str))),
                                       indent=2, sort_keys=True))


def _run_info_field(root: Path, name: str) -> Any:
    try:
        data = json.loads((root / RUN_INFO).read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return None
    return data.get(name) if isinstance(data, dict) else None


def _shown(numbers: list, most: int = 10) -> str:
    return ", ".join(map(str, numbers[:most])) + (", …" if len(numbers) > most else "")


class StoreError(ValueError):
    """The run folder cannot hold records (e.g. ``records.jsonl`` is not a file)."""
def artifact_relpath(kind: str, key: dict[str, Any]) -> str:
    """Where an artifact lives inside a run folder; the same on every machine."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]
    return f"artifacts/{kind}/{digest}.json"


class RunStore:
    def __init__(self, root: Path, read_only: bool = False):
        """``read_only``: a reader only (an export): the folder is neither created nor probed
        for writing, so a folder on read-only storage reads, and nothing in it changes."""
        self.root = Path(root)
        self.records_path = self.root / RECORDS
        if not read_only:
            try:
                self.root.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot use it as a folder ({exc.strerror or exc}); give a "
                                 "writable folder path") from exc
            probe = self.root / f".write-check.{os.getpid()}"
            try:
                probe.touch()
                probe.unlink()
            except OSError as exc:
                raise StoreError(f"{self.root}: the folder cannot be written ({exc.strerror or exc}); "
                                 "a run and its report write their files there: make it writable, or "
                                 "copy it somewhere writable and give the copy") from exc
        for name in (RECORDS, RUN_INFO, SUMMARY, LOCK_FILE, LOST_ATTEMPTS):
            if kind := odd_kind(self.root / name):
                raise StoreError(f"{self.root / name} is {kind}, where the runtime keeps a file "
                                 "of that name; move it aside (nothing was written)")
        self._append_lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = defaultdict(threading.Lock)
        self._key_locks_guard = threading.Lock()
        self.torn_lines = 0
        self.skipped: list[int] = []
        """Line numbers (from 1) of the lines the last read could not use."""
        self.why: dict[int, str] = {}
        """Why each skipped line could not be used, in a few words."""
        self.altered: list[int] = []
        """Line numbers of records that fail their digest (``runtime.folder.integrity``)."""
        self.unsealed: list[int] = []
        """Line numbers of records without a digest where the folder's records carry one."""
        self.legacy = 0
        """Records read as they are: written before records carried digests."""
        self.moved_start: tuple[int, int] | None = None
        """(run.json's ``sealed_from_line``, where the records' digests say the chain began) when
        the first is later: run.json was edited, and the records' start is used."""
        self._tail_checked = False
        self._start: int | None = None

    def _terminate_torn_tail(self) -> str:
        """A crash mid-append leaves a line without its newline; end it so it stays one bad
        line rather than swallowing the next good record."""
        if not self.records_path.exists() or self.records_path.stat().st_size == 0:
            return ""
        with open(self.records_path, "rb") as fh:
            fh.seek(-1, os.SEEK_END)
            return "" if fh.read(1) == b"\n" else "\n"

    # -- records -------------------------------------------------------------------------
    def append(self, record: EpisodeRecord) -> None:
        line = sealed_line(scrub(record.model_dump_json()), self._chain_start()) + "\n"  # what is written
        with self._append_lock:
            tail = "" if self._tail_checked else self._terminate_torn_tail()
            append_whole(self.records_path, (tail + line).encode("utf-8"))  # whole, or not at all
            self._tail_checked = True

    def _chain_start(self) -> int:
        """The ``sealed_from_line`` every new line's digest binds: run.json's (set when the
        folder is first opened, ``note_invocation``), 1 where there is none."""
        if self._start is None:
            marked = _run_info_field(self.root, SEALED_FROM)
            if not (isinstance(marked, int) and not isinstance(marked, bool) and marked >= 1):
                return 1
            self._start = marked
        return self._start

    def cannot_append(self) -> OSError | None:
        """Why a record could not be appended to ``records.jsonl`` now (immutable, read-only,
        replaced by a directory, its folder gone), or None: the file is opened for appending
        (created and removed again where it does not exist yet) and nothing is written. Asked
        before every episode starts (``runtime.batch.appendable``)."""
        try:
            if kind := odd_kind(self.records_path):
                raise IsADirectoryError(f"{self.records_path} is {kind}")
            if self.records_path.exists():
                os.close(os.open(self.records_path, os.O_WRONLY | os.O_APPEND))
            else:
                probe = self.root / f".append-check.{os.getpid()}"
                os.close(os.open(probe, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644))
                probe.unlink()
        except OSError as exc:
            return exc
        return None

    def records(self, light: bool = False) -> list[EpisodeRecord]:
        """Every record, later records for the same key superseding earlier ones. ``light``:
        without their conversations (``messages`` left empty, each line's digest checked on the
        whole line first) — for the batch loop, the budget and the summaries, which read every
        record of a run and must not hold every conversation it had."""
        latest: dict[str, EpisodeRecord] = {}
        for record in self._read(light):
            latest.pop(record.record_id, None)
            latest[record.record_id] = record
        return list(latest.values())

    def _read(self, light: bool = False) -> Iterator[EpisodeRecord]:
        """Read bytes and split lines before decoding: a line torn inside a multi-byte UTF-8
        character (or any bytes that are not UTF-8, or not a record) is one skipped line, noted
        with its number and why in ``skipped`` and ``why``, never an error that stops the
        reader. A line without a digest (``null`` included) counts only where it was written
        before records carried digests (``sealed_from``); else it is noted in ``unsealed``. A
        score that is not a sound number (``records.score_problem``) is skipped whatever the
        digest says."""
        self.torn_lines, self.skipped, self.why = 0, [], {}
        self.altered, self.unsealed, self.legacy, self.moved_start = [], [], 0, None
        if not self.records_path.exists():
            return
        # Two passes, so that no more than one record is held at a time: the first learns what
        # each line is (its content is dropped), the second reads again the lines that count.
        facts: dict[int, tuple[str, int | None]] = {}
        """line number → (``other`` | ``unsealed`` | ``altered`` | ``sound``, the start a sound
        digest binds)"""
        with open(self.records_path, "rb") as fh:
            for number, raw in enumerate(fh, 1):
                if not raw.strip():
                    continue
                try:
                    data = json.loads(raw.decode("utf-8"))
                except ValueError as exc:  # UnicodeDecodeError included
                    self._skip(number, integrity.unreadable(exc))
                    continue
                if not isinstance(data, dict):
                    facts[number] = ("other", None)
                elif not integrity.has_digest(data):
                    facts[number] = ("unsealed", None)
                elif integrity.problem(data):  # on the whole line
                    facts[number] = ("altered", None)
                else:
                    facts[number] = ("sound", integrity.bound_start(data))
        start = self.sealed_from(facts)
        with open(self.records_path, "rb") as fh:
            for number, raw in enumerate(fh, 1):
                kind = facts.get(number, (None,))[0]
                if kind is None:
                    continue
                if kind == "other":
                    self._skip(number, "not a record (a JSON object)")
                    continue
                if kind == "unsealed":
                    if start is not None and number >= start:
                        self.unsealed.append(number)
                        continue
                    self.legacy += 1
                elif kind == "altered":
                    self.altered.append(number)
                    continue
                data = json.loads(raw.decode("utf-8"))
                if light:
                    data.pop("messages", None)
                try:
                    record = EpisodeRecord.model_validate(data)
                except ValidationError as exc:
                    self._skip(number, integrity.invalid(exc))
                    continue
                if why := score_problem(record):
                    self._skip(number, why)
                    continue
                yield record

    def _skip(self, number: int, why: str) -> None:
        self.torn_lines += 1
        self.skipped.append(number)
        self.why[number] = why

    def sealed_from(self, facts: dict[int, tuple[str, int | None]]) -> int | None:
        """The first line of ``records.jsonl`` that must carry a digest: where ``run.json``
        says this runtime began writing the folder, unless the records say the chain began
        earlier — a digest binds that line (``integrity.bound_start``), and a line that carries
        a sound digest was written by a sealing runtime — then there, the move named in
        ``moved_start``. Where run.json does not say (absent, or written before it did): the
        records' own start, or every line once any line carries a digest; None: no line needs
        one (the folder was written before digests)."""
        marked = _run_info_field(self.root, SEALED_FROM)
        marked = max(marked, 1) if isinstance(marked, int) and not isinstance(marked, bool) else None
        sound = [(n, bound) for n, (kind, bound) in facts.items() if kind == "sound"]
        said = [bound for _, bound in sound if bound is not None]
        evidence = min([*said, *(n for n, _ in sound)], default=None)
        if marked is None:
            if said:
                return min(said)
            return 1 if any(kind in ("sound", "altered") for kind, _ in facts.values()) else None
        if evidence is not None and evidence < marked:
            self.moved_start = (marked, evidence)
            return evidence
        return marked

    def skipped_note(self) -> str | None:
        """One line naming the file and the line numbers the last read skipped (unreadable,
        failing their digest, or without one where it is needed), with why, or None."""
        notes = []
        if self.torn_lines:
            listed = _shown([f"{n}: {self.why[n]}" if n in self.why else str(n) for n in self.skipped])
            notes.append(f"{self.torn_lines} unreadable line(s) in {self.records_path} skipped "
                         f"(line{'s' if len(self.skipped) > 1 else ''} {listed})")
        if self.altered:
            notes.append(f"{len(self.altered)} record(s) in {self.records_path} fail their integrity "
                         f"check, edited or damaged since they were written, and do not count "
                         f"(line{'s' if len(self.altered) > 1 else ''} {_shown(self.altered, 50)})")
        if self.unsealed:
            notes.append(f"{len(self.unsealed)} record(s) in {self.records_path} carry no digest "
                         "though the folder's records do (edited, or copied in by hand), and do "
                         f"not count (line{'s' if len(self.unsealed) > 1 else ''} "
                         f"{_shown(self.unsealed, 50)})")
        if self.moved_start:
            marked, begun = self.moved_start
            notes.insert(0, f"{self.root / RUN_INFO} says the records' digests begin at line {marked}, "
                            f"but the records were sealed from line {begun} (run.json was edited): "
                            f"line {begun} on is held to its digests")
        return "; ".join(notes) or None

    def legacy_note(self) -> str | None:
        """One line when the last read took records written before digests, as they are."""
        if not self.legacy:
            return None
        return (f"{self.legacy} record(s) in {self.records_path} were written before records "
                "carried digests and are read as they are (an edit to them cannot be detected)")

    def line_count(self) -> int:
        """Lines of ``records.jsonl``, a torn last line included (the next append ends it)."""
        if not self.records_path.exists():
            return 0
        data = self.records_path.read_bytes()
        return data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)

    # -- shared artifacts (opening request, p0) ------------------------------------------
    def artifact_path(self, kind: str, key: dict[str, Any]) -> Path:
        return self.root / artifact_relpath(kind, key)

    def get_or_create(self, kind: str, key: dict[str, Any], make: Callable[[], Any]) -> tuple[Any, bool]:
        """The artifact stored under (kind, key), made once by ``make`` if absent.

        Returns (value, created). Concurrent callers for the same key wait for the first.
        """
        path = self.artifact_path(kind, key)
        with self._key_locks_guard:
            lock = self._key_locks[str(path)]
        with lock:
            if path.exists():
                return json.loads(path.read_text(encoding="utf-8"))["value"], False
            value = make()
            write_json_atomic(path, {"kind": kind, "key": key, "value": value})
            return value, True

    # -- run metadata --------------------------------------------------------------------
    def note_invocation(self, info: dict[str, Any]) -> None:
        path = self.root / RUN_INFO
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"invocations": []}
        if SEALED_FROM not in data:  # where this runtime's digested lines begin
            records = list(self._read())
            sealed = bool(self.altered or self.unsealed or any(r.digest for r in records))
            data[SEALED_FROM] = 1 if sealed else self.line_count() + 1
        data["invocations"].append(info)
        write_json_atomic(path, data)

    def write_summary(self, summary: dict[str, Any]) -> None:
        write_json_atomic(self.root / SUMMARY, summary)
