"""Resume after a kill, bad input (one line, exit 2, nothing lost), secrets never written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import read_records

ROLES = "scripted/roles"


def _scripted_cli(out: Path, *extra: str, latency: float = 0.0) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "testkit.run_scripted", "--latency", str(latency), "--",
           "--env", "tau2", "--domain", "airline", "--mode", "all", "--model", ROLES,
           "--out", str(out), "--no-cache", *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_killed_run_resumes_to_exactly_one_record_per_episode(tmp_path):
    out = tmp_path / "run"
    args = ("--task-ids", "1,2,3,5", "--concurrency", "2")
    proc = _scripted_cli(out, *args, latency=0.05)
    deadline = time.time() + 240
    while time.time() < deadline and len(read_records(out)) < 3:
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    first = read_records(out)
    assert 3 <= len(first) < 12, "the kill should land mid-run"
    # a torn last line, as a crash during a write would leave it
    with open(out / "records.jsonl", "a") as fh:
        fh.write('{"run_id": "torn')

    proc = _scripted_cli(out, *args)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    assert f"({len(first)} already done)" in " ".join(stdout.split())
    records = [r for r in read_records_tolerant(out)]
    counts = Counter((r["key"]["task_id"], r["key"]["mode"], r["key"]["trial"]) for r in records)
    assert len(counts) == 12 and set(counts.values()) == {1}
    assert all(r["status"] == "ok" and r["score"] == 1.0 for r in records)


def read_records_tolerant(out: Path) -> list[dict]:
    import json

    rows = []
    for line in (out / "records.jsonl").read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


BAD_INPUTS = [
    (["--env", "nope"], "invalid choice: 'nope'"),
    (["--mode", "sideways"], "invalid choice: 'sideways'"),
    (["--domain", "banking"], "unknown tau2 domain 'banking'; accepted: airline"),
    (["--domain", "airline", "--task-ids", "1,999"], "unknown task id '999'"),
    (["--domain", "airline", "--split", "holdout"], "unknown split 'holdout'"),
    (["--domain", "airline", "--trials", "0"], "trials = 0"),
    (["--domain", "airline", "--model", "openai/gpt-4o"], "needs OPENAI_API_KEY"),
    (["--config", "/nonexistent/run.yaml"], "cannot read config /nonexistent/run.yaml"),
]


@pytest.mark.parametrize("argv,message", BAD_INPUTS, ids=[m for _, m in BAD_INPUTS])
def test_bad_input_exits_2_with_a_one_line_message(tmp_path, argv, message, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    out = tmp_path / "run"
    out.mkdir()
    (out / "records.jsonl").write_text('{"finished": "before"}\n')
    proc = subprocess.run([sys.executable, "-m", "runtime.validate", *argv, "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert len([l for l in proc.stderr.strip().splitlines() if l.startswith("error") or "error:" in l]) == 1
    assert (out / "records.jsonl").read_text() == '{"finished": "before"}\n'


def test_bad_config_key_names_the_key(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("env: tau2\nmodle: openai/gpt-4o\n")
    proc = subprocess.run([sys.executable, "-m", "runtime.validate", "--config", str(config)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "modle" in proc.stderr and "Extra inputs are not permitted" in proc.stderr


def test_config_file_sets_options_and_cli_overrides(tmp_path):
    config = tmp_path / "c.yaml"
    out = tmp_path / "run"
    config.write_text(f"env: tau2\ndomain: airline\nmode: refine\ntask_ids: [1]\nmodel: {ROLES}\n"
                      f"out: {out}\nno_cache: true\n")
    proc = subprocess.run([sys.executable, "-m", "testkit.run_scripted", "--",
                           "--config", str(config), "--mode", "direct"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (record,) = read_records(out)
    assert record["key"]["mode"] == "direct" and record["key"]["task_id"] == "1"


def test_api_keys_are_never_written(tmp_path):
    secret = "sk-test-SECRET-must-not-leak-4242"
    out = tmp_path / "run"
    env = {**os.environ, "OPENAI_API_KEY": secret, "ANTHROPIC_API_KEY": secret}
    proc = subprocess.run([sys.executable, "-m", "testkit.run_scripted", "--",
                           "--env", "tau2", "--domain", "airline", "--mode", "refine", "--task-ids",
                           "1", "--model", ROLES, "--out", str(out),
                           "--cache-dir", str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert secret not in proc.stdout + proc.stderr
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "records.jsonl" for p in files) and any(p.suffix == ".sqlite" for p in files)
    for path in files:
        assert secret.encode() not in path.read_bytes(), f"secret written to {path}"
