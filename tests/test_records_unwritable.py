"""No paid call without a place to write it: a ``records.jsonl`` that cannot be opened for
appending (``chattr +i``, as root) stops the run in one line with exit 5 — before any call when
it is so before the run, and, when it becomes so mid-run, with the episode in flight counted in
``lost_attempts.jsonl``, every call the endpoint answered counted after the resume. The
endpoint is a real loopback server (the gold stub behind a counting proxy)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from runtime import validate
from testkit.loopback import FaultProxy
from tests.conftest import read_records, stub_server as load_stub_server

TASKS = ["create_task_1", "update_task_1"]


def _chattr(flag: str, path: Path) -> bool:
    return shutil.which("chattr") is not None and subprocess.run(
        ["chattr", flag, str(path)], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def gold_stub():
    stub = load_stub_server()
    server = stub.serve(0, 0.0, ["mock"], TASKS)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def immutable(tmp_path):
    """``immutable(path)``: make ``path`` immutable (skipped where chattr cannot); undone after."""
    made: list[Path] = []

    def make(path: Path) -> None:
        if not _chattr("+i", path):
            pytest.skip("chattr +i is not available here (needs root and a file system with attributes)")
        made.append(path)

    yield make
    for path in made:
        _chattr("-i", path)


def _run(url: str, out: Path, tasks: list[str], *extra: str) -> int:
    return validate.main(["--env", "tau2", "--domain", "mock", "--mode", "direct", "--task-ids", ",".join(tasks),
                          "--model", "openai/m", "--api-base", url, "--out", str(out), "--concurrency", "1",
                          "--no-cache", "--no-report", *extra])


def _ours(err: str) -> list[str]:
    return [x for x in err.strip().splitlines() if x.startswith(("error", "warning", "stopped"))]


def _calls(out: Path) -> int:
    """Every call the folder counts: its records' and their lost attempts', and those pending."""
    records = read_records(out)
    held = sum(r["usage"]["total"]["calls"] for r in records)
    held += sum(a["calls"] for r in records for a in r.get("attempts", []) if a["ended"] == "lost")
    pending_path = out / "lost_attempts.jsonl"
    ids = {a["id"] for r in records for a in r.get("attempts", [])}
    if pending_path.exists():
        for line in pending_path.read_text().splitlines():
            attempt = json.loads(line)["attempt"]
            held += attempt["calls"] if attempt["id"] not in ids else 0
    return held


def test_an_unappendable_records_file_stops_the_run_before_any_call(gold_stub, tmp_path, immutable,
                                                                    monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    out = tmp_path / "run"
    with FaultProxy(gold_stub, lambda n, b: None) as proxy:  # one endpoint: the same settings
        assert _run(proxy.url + "/v1", out, TASKS[:1]) == 0
        before = (out / "records.jsonl").read_bytes()
        answered = len(proxy.requests)
        immutable(out / "records.jsonl")
        capsys.readouterr()
        code = _run(proxy.url + "/v1", out, TASKS)
        assert len(proxy.requests) == answered  # not one paid call
    err = capsys.readouterr().err
    assert code == 5, err
    (line,) = _ours(err)
    assert f"cannot write {out / 'records.jsonl'}: Operation not permitted" in line, line
    assert "no episode was started" in line and "chattr -i" in line and "Traceback" not in err
    assert (out / "records.jsonl").read_bytes() == before
    assert not (out / "lost_attempts.jsonl").exists()


def test_records_lost_mid_run_stop_it_with_the_episode_in_flight_counted(gold_stub, tmp_path, immutable,
                                                                        monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-0000000000")
    out = tmp_path / "run"
    path = out / "records.jsonl"
    froze: list[int] = []

    def freeze_after_the_first_record(n: int, body: dict) -> None:
        if not froze and path.exists() and path.read_bytes().count(b"\n") == 1:
            immutable(path)  # the second episode is under way: its record has nowhere to go
            froze.append(n)

    with FaultProxy(gold_stub, freeze_after_the_first_record) as proxy:
        code = _run(proxy.url + "/v1", out, TASKS)
        answered = len(proxy.requests)
    err = capsys.readouterr().err
    assert froze and code == 5, err
    (line,) = _ours(err)
    assert f"cannot write {path}: Operation not permitted" in line, line
    assert "1 episode(s) in flight stopped, their calls counted in lost_attempts.jsonl" in line, line
    assert len(read_records(out)) == 1
    assert _calls(out) == answered  # the lost episode's calls included

    _chattr("-i", path)
    with FaultProxy(gold_stub, lambda n, b: None) as proxy:
        assert _run(proxy.url + "/v1", out, TASKS, "--allow-changed-settings") == 0  # a new port
        answered += len(proxy.requests)
    records = read_records(out)
    assert sorted(r["key"]["task_id"] for r in records) == sorted(TASKS)
    (resumed,) = [r for r in records if r["attempts"]]
    assert resumed["attempts"][0]["ended"] == "lost" and resumed["attempts"][0]["calls"] > 0
    assert _calls(out) == answered  # every answered call counted once
