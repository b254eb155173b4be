"""A run folder edited by hand, read back by real processes: a real run writes the folder, the
test edits it as a user would, and ``python -m runtime.report`` and a resume read it.

Checked: a record whose digest was deleted with the edit (and a record copied in under another
task id without one) is named, not counted and run again; a folder written before digests keeps
working with one note; a repeated task id is refused in one line; a line holding two fused
records and a score stored as a string are named with why; garbage in ``lost_attempts.jsonl``
is named once; a read-only folder is named, not an internal file."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.folder import integrity
from tests.test_run_folder_faults import tmpfs  # noqa: F401 - the fixture
from tests.test_run_folder_writer import TAU2_IMPORT_NOISE

DIRECT = ("--env", "tau2", "--domain", "airline", "--mode", "direct", "--model", "scripted/roles",
          "--no-cache", "--concurrency", "1", "--no-report")


def _run(out: Path, tasks: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "testkit.run_scripted", "--", *DIRECT,
                           "--task-ids", tasks, "--out", str(out)],
                          capture_output=True, text=True, timeout=300)


def _report(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runtime.report", str(folder)],
                          capture_output=True, text=True, timeout=300)


def _ours(stderr: str) -> list[str]:
    return [x for x in stderr.strip().splitlines() if x and not TAU2_IMPORT_NOISE.match(x)]


def _said(stdout: str) -> str:
    return " ".join(stdout.split())


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    """A folder written by a real run: tasks 1, 2, 3 of τ² airline, each scored 1.0."""
    out = tmp_path_factory.mktemp("made") / "run"
    done = _run(out, "1,2,3")
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture
def folder(written, tmp_path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(written, copy, ignore=shutil.ignore_patterns("writer.lock"))
    return copy


def _lines(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "records.jsonl").read_text().splitlines() if x.strip()]


def _write(folder: Path, lines: list[dict | str]) -> None:
    (folder / "records.jsonl").write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))


def _row(folder: Path) -> str:
    md = (folder / "report.md").read_text(encoding="utf-8")
    return next(line for line in md.splitlines() if line.startswith("| tau2 | scripted/roles |"))


def _unsign(record: dict, how: str) -> None:
    if how == "deleted":
        del record["digest"]
    else:
        record["digest"] = None  # "digest": null is no digest


@pytest.mark.parametrize("how", ["null", pytest.param("deleted", marks=pytest.mark.slow)])
def test_an_unsigned_edit_and_a_relabelled_copy_are_named_not_counted_and_run_again(folder, how):
    lines = _lines(folder)
    by_task = {r["key"]["task_id"]: i for i, r in enumerate(lines)}
    edited = lines[by_task["1"]]
    edited["score"] = 0.0
    _unsign(edited, how)  # the edit and the evidence of it
    copy = json.loads(json.dumps(lines[by_task["3"]]))
    copy["key"]["task_id"] = "4"
    copy["record_id"] = copy["record_id"].replace("|3|", "|4|")
    _unsign(copy, how)
    _write(folder, [*lines, copy])

    done = _report(folder)
    assert done.returncode == 0, done.stderr
    (line,) = _ours(done.stderr)
    assert "2 record(s)" in line and "carry no digest" in line and "do not count" in line, line
    assert f"lines {by_task['1'] + 1}, 4" in line, line
    assert "| 2 × 1 |" in _row(folder)  # tasks 2 and 3; neither the edit nor task 4 counted
    assert "carry no digest" in (folder / "report.md").read_text()

    again = _run(folder, "1,2,3,4")
    assert again.returncode == 0, again.stderr
    said = _said(again.stdout)
    assert "4 episodes (2 already done)" in said and "carry no digest" in said
    assert "their episodes run again" in said
    scores = {r["key"]["task_id"]: r["score"] for r in _lines(folder) if r.get("digest")}
    assert scores == {"1": 1.0, "2": 1.0, "3": 1.0, "4": 1.0}, scores  # task 4 ran, for real


def test_raising_sealed_from_line_past_an_edited_line_is_named(folder):
    lines = _lines(folder)
    lines[0]["score"] = 0.0
    del lines[0]["digest"]  # the edit, passed off as a line written before digests...
    _write(folder, lines)
    info = json.loads((folder / "run.json").read_text())
    assert info["sealed_from_line"] == 1
    info["sealed_from_line"] = 2  # ...by moving the start of the chain past it
    (folder / "run.json").write_text(json.dumps(info))

    done = _report(folder)
    assert done.returncode == 0, done.stderr
    (line,) = _ours(done.stderr)
    assert "says the records' digests begin at line 2, but the records were sealed from line 1" in line, line
    assert "1 record(s)" in line and "carry no digest" in line and "(line 1)" in line, line
    assert "| 2 × 1 |" in _row(folder)
    assert "written before records carried digests" not in done.stderr


def _resealed(record: dict, start: int | None) -> str:
    """``record`` with its digest recomputed by the recipe docs/run-folder.md gives (``sha256@N:``
    binding the folder's start; ``sha256:`` without it, as lines sealed before starts were bound)."""
    import hashlib

    body = {k: v for k, v in record.items() if k != "digest"}
    if start is not None:
        body["sealed_from_line"] = start
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    prefix = "sha256:" if start is None else f"sha256@{start}:"
    return json.dumps({**record, "digest": prefix + hashlib.sha256(canonical.encode()).hexdigest()})


def test_a_resealed_score_that_is_not_a_sound_number_is_named_not_counted(folder):
    start = json.loads((folder / "run.json").read_text())["sealed_from_line"]
    lines = _lines(folder)
    lines[0]["score"] = float("nan")
    lines[1]["score"] = -3.5
    del lines[2]["score"]  # each resealed with the recipe, as a tool that recomputes it would
    _write(folder, [_resealed(x, None) for x in lines])
    done = _report(folder)
    assert done.returncode == 2, done.stderr  # nothing left to report
    (line,) = _ours(done.stderr)
    assert "(lines 1: score: NaN, not a number, 2: score: -3.5 is outside the environment's range [0, 1], " \
           "3: score: missing from an ok episode)" in line, line

    lines = _lines(folder)
    lines[0]["score"], lines[1]["score"], lines[2]["score"] = 1e308, float("inf"), 1.0
    _write(folder, [_resealed(x, start) for x in lines])
    done = _report(folder)
    assert done.returncode == 0, done.stderr
    (line,) = _ours(done.stderr)
    assert "1: score: 1e+308 is outside" in line and "2: score: inf is outside" in line, line
    assert "| 1 × 1 |" in _row(folder)
    assert "| 1.000 " in _row(folder)  # the mean of the one sound score, not of NaN or 1e308


@pytest.mark.slow
def test_a_folder_written_before_digests_keeps_working_with_one_note(folder):
    lines = _lines(folder)
    for record in lines:
        del record["digest"]
    _write(folder, lines)
    info = json.loads((folder / "run.json").read_text())
    info.pop("sealed_from_line")  # as the runtime before digests wrote it
    (folder / "run.json").write_text(json.dumps(info))

    done = _report(folder)
    assert done.returncode == 0, done.stderr
    (line,) = _ours(done.stderr)
    assert line.startswith("note: 3 record(s)") and "written before records carried digests" in line
    assert "| 3 × 1 |" in _row(folder)

    again = _run(folder, "1,2,3,5")  # the old folder resumed: its lines stay good
    assert again.returncode == 0, again.stderr
    assert "4 episodes (3 already done)" in _said(again.stdout)
    assert json.loads((folder / "run.json").read_text())["sealed_from_line"] == 4
    assert [("digest" in r) for r in _lines(folder)] == [False, False, False, True]
    done = _report(folder)
    assert [x for x in _ours(done.stderr) if x.startswith(("warning", "error"))] == []
    assert "| 4 × 1 |" in _row(folder)


def test_a_repeated_task_id_is_refused_in_one_line(tmp_path):
    out = tmp_path / "run"
    done = _run(out, "4,4,4")
    assert done.returncode == 2
    (line,) = _ours(done.stderr)
    assert line.startswith("error: --task-ids 4,4,4: task 4 (3 times) given more than once")
    assert "--trials" in line and "Traceback" not in done.stderr
    assert not out.exists()


def test_fused_records_and_a_string_score_are_named_with_why(folder):
    raw = (folder / "records.jsonl").read_text().splitlines()
    (folder / "records.jsonl").write_text(raw[0] + raw[1] + "\n")  # two records, one line
    done = _report(folder)
    assert done.returncode == 2
    (line,) = _ours(done.stderr)
    assert "no records in" in line and "(line 1: more than one JSON value on the line" in line, line

    lines = [json.loads(x) for x in raw]
    lines[2]["score"] = "1.0"  # resealed, as a tool that recomputes the digest would
    _write(folder, [lines[0], lines[1], integrity.sealed_line(json.dumps(lines[2]))])
    done = _report(folder)
    assert done.returncode == 0, done.stderr
    (line,) = _ours(done.stderr)
    assert '(line 3: score: input should be a valid number ("1.0"))' in line, line
    assert "| 2 × 1 |" in _row(folder)


def test_garbage_in_lost_attempts_is_named_once(folder):
    (folder / "lost_attempts.jsonl").write_text('{"record_id": "x"}\nnot json\n')
    done = _run(folder, "1,2,3")
    assert done.returncode == 0, done.stderr
    said = _said(done.stdout)
    assert said.count("lost_attempts.jsonl are not a lost attempt this runtime wrote") == 1, said
    assert "(lines 1, 2)" in said


def test_the_report_on_a_read_only_folder_names_the_folder(folder, tmpfs):  # noqa: F811
    disk = tmpfs("4m")
    shutil.copytree(folder, disk / "run")
    tmpfs.remount(disk, "ro")
    done = _report(disk / "run")
    assert done.returncode == 2
    (line,) = _ours(done.stderr)
    assert line.startswith(f"error: {disk / 'run'}: the folder cannot be written (Read-only file system)")
    assert "write-check" not in line and "make it writable" in line


@pytest.mark.parametrize("name,make", [
    ("writer.lock", "directory"),
    pytest.param("writer.lock", "fifo", marks=pytest.mark.slow),
    pytest.param("records.jsonl", "directory", marks=pytest.mark.slow),
    pytest.param("run.json", "directory", marks=pytest.mark.slow),
    pytest.param("summary.json", "directory", marks=pytest.mark.slow),
    pytest.param("lost_attempts.jsonl", "directory", marks=pytest.mark.slow)])
def test_a_folder_file_of_another_kind_is_refused_in_one_line(folder, name, make):
    import os

    target = folder / name
    if target.exists():
        target.unlink()
    os.mkfifo(target) if make == "fifo" else target.mkdir()
    before = sorted(p.name for p in folder.iterdir())
    done = _run(folder, "1,2,3,5")
    assert done.returncode == 2, done.stderr
    (line,) = _ours(done.stderr)
    kind = "a FIFO" if make == "fifo" else "a directory"
    assert f"{target} is {kind}, where the runtime keeps a file" in line, line
    assert "move it aside" in line and "Traceback" not in done.stderr
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing written


@pytest.mark.parametrize("given", ["x" * 120_000, "7," * 100 + "7"])
def test_a_huge_task_id_is_echoed_cut_to_a_readable_length(tmp_path, given):
    done = _run(tmp_path / "run", given)
    assert done.returncode == 2
    (line,) = _ours(done.stderr)
    assert len(line) < 400, len(line)
    assert f"({len(given):,} characters)" in line and "Traceback" not in done.stderr, line
