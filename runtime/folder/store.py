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

from runtime.folder import integrity
from runtime.folder.integrity import sealed_line
from runtime.folder.durable import WriteFailed, append_whole, replace_whole
from runtime.folder.records import EpisodeRecord
from runtime.folder.scrub import scrub, scrub_data

RECORDS = "records.jsonl"
SUMMARY = "summary.json"
RUN_INFO = "run.json"


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path`` and rename it over ``path``: a reader
    (or a run killed mid-write) sees the old file or the new one, never half of one."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteFailed(path.parent, exc) from exc
    replace_whole(path, text, path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp"))


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(scrub_data(json.loads(json.dumps(data, default=str))),
                                       indent=2, sort_keys=True))


def _shown(numbers: list[int], most: int = 10) -> str:
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
        if not read_only:
            self.root.mkdir(parents=True, exist_ok=True)
        self.records_path = self.root / RECORDS
        if self.records_path.exists() and not self.records_path.is_file():
            raise StoreError(f"{self.records_path} is not a file")
        if not read_only:
            probe = self.root / f".write-check.{os.getpid()}"
            probe.touch()
            probe.unlink()
        self._append_lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = defaultdict(threading.Lock)
        self._key_locks_guard = threading.Lock()
        self.torn_lines = 0
        self.skipped: list[int] = []
        """Line numbers (from 1) of the lines the last read could not use."""
        self._tail_checked = False

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
        line = sealed_line(scrub(record.model_dump_json())) + "\n"  # digest of what is written
        with self._append_lock:
            tail = "" if self._tail_checked else self._terminate_torn_tail()
            append_whole(self.records_path, (tail + line).encode("utf-8"))  # whole, or not at all
            self._tail_checked = True

    def records(self) -> list[EpisodeRecord]:
        """Every record, later records for the same key superseding earlier ones."""
        latest: dict[str, EpisodeRecord] = {}
        for record in self._read():
            latest.pop(record.record_id, None)
            latest[record.record_id] = record
        return list(latest.values())

    def _read(self) -> Iterator[EpisodeRecord]:
        """Read bytes and split lines before decoding: a line torn inside a multi-byte UTF-8
        character (or any bytes that are not UTF-8, or not a record) is one skipped line, noted
        with its number in ``skipped``, never an error that stops the reader."""
        self.torn_lines = 0
        self.skipped: list[int] = []
        self.altered: list[int] = []
        """Line numbers of records that fail their digest (``runtime.folder.integrity``)."""
        if not self.records_path.exists():
            return
        with open(self.records_path, "rb") as fh:
            for number, raw in enumerate(fh, 1):
                if not raw.strip():
                    continue
                try:
                    data = json.loads(raw.decode("utf-8"))
                    if isinstance(data, dict) and integrity.problem(data):
                        self.altered.append(number)
                        continue
                    yield EpisodeRecord.model_validate(data)
                except ValueError:  # UnicodeDecodeError and pydantic's ValidationError included
                    self.torn_lines += 1
                    self.skipped.append(number)

    def skipped_note(self) -> str | None:
        """One line naming the file and the line numbers the last read skipped (unreadable, or
        failing their digest), or None."""
        notes = []
        if self.torn_lines:
            notes.append(f"{self.torn_lines} unreadable line(s) in {self.records_path} skipped "
                         f"(line{'s' if len(self.skipped) > 1 else ''} {_shown(self.skipped)})")
        altered = getattr(self, "altered", [])
        if altered:
            notes.append(f"{len(altered)} record(s) in {self.records_path} fail their integrity "
                         f"check, edited or damaged since they were written, and do not count "
                         f"(line{'s' if len(altered) > 1 else ''} {_shown(altered, 50)})")
        return "; ".join(notes) or None

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
        data["invocations"].append(info)
        write_json_atomic(path, data)

    def write_summary(self, summary: dict[str, Any]) -> None:
        write_json_atomic(self.root / SUMMARY, summary)
