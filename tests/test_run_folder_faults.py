"""Files that cannot be written, and signals: one line naming the file and the cause, a
documented exit code (5: a write failed; 2: a cache refused before the first episode; 130/143:
SIGINT/SIGTERM), no partial record line, no temporary file left, a ``summary.json`` true to the
records, and a resume that completes. The file-size limit is a real ``RLIMIT_FSIZE`` on a real
process; the full and the read-only file systems are small tmpfs mounts where this machine lets
a test mount one (else skipped, saying so), with a fault-injecting writer as the portable check."""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from runtime.llm.layer import ResponseCache
from testkit import run_scripted
from tests.test_run_folder_writer import TAU2_IMPORT_NOISE

TASKS = "1,2,3,5"


def _cli(out: Path, *extra: str, latency: float = 0.0, fsize: int | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "testkit.run_scripted", "--latency", str(latency), "--",
           "--env", "tau2", "--domain", "airline", "--mode", "direct", "--model", "scripted/roles",
           "--task-ids", TASKS, "--concurrency", "1", "--out", str(out), "--no-cache", *extra]

    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=limit)


def _our_lines(stderr: str) -> list[str]:
    return [x for x in stderr.strip().splitlines() if not TAU2_IMPORT_NOISE.match(x)]


def _every_line_whole(out: Path) -> list[dict]:
    raw = (out / "records.jsonl").read_bytes()
    assert raw == b"" or raw.endswith(b"\n"), "a partial last line"
    return [json.loads(line) for line in raw.decode().splitlines() if line.strip()]


def _no_tmp(folder: Path) -> None:
    left = [str(p) for p in folder.rglob("*") if p.name.endswith((".tmp", ".probe"))]
    assert not left, left


def _resumes_to_one_record_each(out: Path) -> None:
    proc = _cli(out)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    counts = Counter(r["record_id"] for r in _every_line_whole(out))
    assert len(counts) == len(TASKS.split(",")) and set(counts.values()) == {1}


@pytest.mark.slow
def test_a_file_size_limit_ends_the_run_in_one_line_with_exit_5(tmp_path):
    out = tmp_path / "run"
    proc = _cli(out, fsize=15_000)  # run.json fits, records.jsonl reaches it at its third line
    stdout, stderr = proc.communicate(timeout=300)
    lines = _our_lines(stderr)
    assert proc.returncode == 5, stderr
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert f"cannot write {out / 'records.jsonl'}: File too large" in lines[0]
    assert "resumes" in lines[0]
    kept = _every_line_whole(out)
    assert 1 <= len(kept) < 4
    _no_tmp(out)
    _resumes_to_one_record_each(out)


@pytest.fixture
def tmpfs(tmp_path):
    """Mount a small tmpfs (``mount(size)``; ``remount(options)``), unmounted afterwards;
    skipped where this process may not mount one."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        where = tmp_path / f"tmpfs{len(mounted)}"
        where.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode}); "
                        "the fault-injecting writer test covers the same code")
        mounted.append(where)
        return where

    def remount(where: Path, options: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{options}", str(where)], check=True)

    mount.remount = remount  # type: ignore[attr-defined]
    yield mount
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


@pytest.mark.slow
def test_a_full_file_system_ends_the_run_in_one_line_with_exit_5(tmpfs):
    disk = tmpfs("48k")
    out = disk / "run"
    proc = _cli(out)
    stdout, stderr = proc.communicate(timeout=300)
    lines = _our_lines(stderr)
    assert proc.returncode == 5, stderr
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert re.search(r"cannot write .*: No space left on device", lines[0]), lines[0]
    _every_line_whole(out)
    _no_tmp(out)
    tmpfs.remount(disk, "size=16m")
    _resumes_to_one_record_each(out)


def test_a_fault_injecting_writer_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    from runtime.folder import durable
    from runtime.folder.durable import WriteFailed, append_whole

    path = tmp_path / "records.jsonl"
    path.write_bytes(b'{"kept": 1}\n')
    real = os.write
    calls = []

    def half_then_full(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            return real(fd, bytes(data[: len(data) // 2]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(durable.os, "write", half_then_full)
    with pytest.raises(WriteFailed, match="No space left on device"):
        append_whole(path, b'{"new": 2}\n' * 10)
    assert path.read_bytes() == b'{"kept": 1}\n'


@pytest.fixture
def readonly_cache(tmp_path, tmpfs):
    """A cache folder holding a response cache, on a file system that became read-only (root
    ignores file modes, so as root a read-only mount; otherwise modes)."""
    def make(where: Path) -> None:
        cache = ResponseCache(where / "responses.sqlite")
        cache.put("k", {"x": 1})
        cache._db.close()  # noqa: SLF001 - let go of the file before the mount turns read-only

    if os.geteuid() == 0:
        where = tmpfs("4m")
        make(where)
        tmpfs.remount(where, "ro")
        return where
    where = tmp_path / "cache"
    where.mkdir()
    make(where)
    for p in [*where.iterdir(), where]:
        p.chmod(0o555 if p.is_dir() else 0o444)
    return where


def _in_process(out: Path, *extra: str) -> int:
    return run_scripted.main(["--", "--env", "tau2", "--domain", "airline", "--mode", "direct",
                              "--task-ids", "1", "--model", "scripted/roles", "--out", str(out),
                              "--concurrency", "1", "--no-report", *extra])


def test_a_read_only_cache_is_refused_before_the_first_episode(readonly_cache, tmp_path, capsys):
    out = tmp_path / "run"
    assert _in_process(out, "--cache-dir", str(readonly_cache)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--cache-dir {readonly_cache}" in err[0], err
    assert "--unwritable-cache off" in err[0]
    assert not out.exists(), "a refused --cache-dir leaves no --out folder behind"

    assert _in_process(out, "--cache-dir", str(readonly_cache), "--unwritable-cache", "off") == 0
    captured = capsys.readouterr()
    assert "running without a response cache" in " ".join(captured.out.split())
    (record,) = _every_line_whole(out)
    assert record["status"] == "ok" and record["score"] == 1.0


def _wait_for_records(out: Path, proc: subprocess.Popen, n: int = 1) -> None:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if (out / "records.jsonl").exists() and len(_every_line_whole(out)) >= n:
            return
        time.sleep(0.05)
    raise AssertionError("no record before the deadline")


@pytest.mark.parametrize("sig,code,word", [
    (signal.SIGTERM, 143, "terminated"),
    pytest.param(signal.SIGINT, 130, "interrupted", marks=pytest.mark.slow)])
def test_a_signal_mid_run_is_one_line_and_a_true_summary(tmp_path, sig, code, word):
    out = tmp_path / "run"
    proc = _cli(out, "--no-report", latency=0.3)
    _wait_for_records(out, proc)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    lines = _our_lines(stderr)
    assert proc.returncode == code, stderr
    assert len(lines) == 1 and lines[0].startswith(f"{word}: finished records are saved"), stderr
    records = _every_line_whole(out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_records"] == len(records) >= 1
    _no_tmp(out)
    _resumes_to_one_record_each(out)


@pytest.mark.parametrize("exc,code,word", [(KeyboardInterrupt, 130, "interrupted"),
                                           ("terminated", 143, "terminated")])
def test_a_signal_during_the_report_is_one_line_and_leaves_every_file_whole(
        tmp_path, monkeypatch, capsys, exc, code, word):
    from runtime import report as report_cli
    from runtime.cli.signals import Terminated
    from runtime.reports import explorer

    out = tmp_path / "run"
    assert _in_process(out, "--no-cache") == 0
    capsys.readouterr()

    def signalled(*args, **kwargs):  # the moment a signal arrives: after report.md, mid-explorer
        raise Terminated() if exc == "terminated" else KeyboardInterrupt()

    monkeypatch.setattr(explorer, "write", signalled)
    assert report_cli.main([str(out)]) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{word}: the report was not finished"), err
    assert (out / "report.md").read_text().endswith("\n")
    _no_tmp(out)


@pytest.mark.parametrize("free_kib,file", [(16, "modes.png"), (40, "explorer/tasks/")])
def test_a_full_disk_during_the_report_is_one_line_and_exit_5(tmp_path, tmpfs, free_kib, file):
    """Every file the report writes (report.md, .csv, the plots, .html, the explorer) goes
    through the one atomic write: a full disk at any of them is the same line and exit 5."""
    import shutil

    made = tmp_path / "made"
    assert _in_process(made, "--no-cache") == 0
    disk = tmpfs("2m")
    out = disk / "run"
    shutil.copytree(made, out, ignore=shutil.ignore_patterns("writer.lock"))
    stats = os.statvfs(disk)
    (disk / "filler").write_bytes(b"\0" * (stats.f_bavail * stats.f_frsize - free_kib * 1024))
    proc = subprocess.run([sys.executable, "-m", "runtime.report", str(out)], capture_output=True,
                          text=True, timeout=300)
    lines = _our_lines(proc.stderr)
    assert proc.returncode == 5, proc.stderr
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"cannot write {out}/{file}" in lines[0] and "No space left on device" in lines[0], lines[0]
    _no_tmp(out)
    (disk / "filler").unlink()
    again = subprocess.run([sys.executable, "-m", "runtime.report", str(out)], capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert (out / "modes.png").read_bytes().startswith(b"\x89PNG")


def test_a_cache_that_fills_under_several_threads_warns_once(tmp_path, monkeypatch, capsys):
    """Several episodes' answers written at once to a cache that just filled: each write fails,
    and the warning is said once (a check-then-set race used to say it per thread)."""
    import sqlite3
    import threading

    from runtime.llm.guarded_cache import GuardedCache

    cache = GuardedCache(tmp_path / "responses.sqlite")
    together = threading.Barrier(4)

    def full(self, key, reply):
        together.wait(10)  # all four writes are under way before the first fails
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(ResponseCache, "put", full)
    threads = [threading.Thread(target=cache.put, args=(f"k{i}", {"x": i})) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    warned = [x for x in capsys.readouterr().err.splitlines() if "cannot be written" in x]
    assert len(warned) == 1 and "database or disk is full" in warned[0], warned
    cache.put("later", {"x": 0})  # caching is off: no further attempt, no further warning
    assert "cannot be written" not in capsys.readouterr().err
