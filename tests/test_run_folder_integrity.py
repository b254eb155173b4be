"""Records prove what they hold: a score edited by hand and a record relabelled as another task
fail their digest; the report and a resume name every such line, never count it as done, and
the resume runs its episode again."""

from __future__ import annotations

import json
from pathlib import Path

from runtime import report as report_cli
from testkit import run_scripted


def _run(out: Path, tasks: str) -> int:
    return run_scripted.main(["--", "--env", "tau2", "--domain", "airline", "--mode", "direct",
                              "--task-ids", tasks, "--model", "scripted/roles", "--out", str(out),
                              "--no-cache", "--concurrency", "1", "--no-report"])


def test_an_edited_and_a_relabelled_record_are_named_and_never_count(tmp_path, capsys):
    out = tmp_path / "run"
    assert _run(out, "1,2,3") == 0
    path = out / "records.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    by_task = {r["key"]["task_id"]: i for i, r in enumerate(lines)}
    edited, relabelled = lines[by_task["1"]], lines[by_task["2"]]
    assert edited["score"] == 1.0 and edited["digest"].startswith("sha256@1:")
    edited["score"] = 0.0  # its breakdown still says 1.0
    relabelled["key"]["task_id"] = "5"
    relabelled["record_id"] = relabelled["record_id"].replace("|2|", "|5|")
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    numbers = sorted([by_task["1"] + 1, by_task["2"] + 1])
    capsys.readouterr()

    assert report_cli.main([str(out)]) == 0
    err = capsys.readouterr().err
    assert "2 record(s)" in err and "fail their integrity check" in err
    assert f"lines {numbers[0]}, {numbers[1]}" in err, err
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "fail their integrity check" in md
    row = next(line for line in md.splitlines() if line.startswith("| tau2 | scripted/roles |"))
    assert "| 1 × 1 |" in row, row  # the one record left, not three (nor task 5)

    assert _run(out, "1,2,3,5") == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "4 episodes (1 already done)" in said and "fail their integrity check" in said
    from runtime.folder.store import RunStore

    records = RunStore(out).records()
    assert sorted(r.key.task_id for r in records) == ["1", "2", "3", "5"]
    assert all(r.score == 1.0 for r in records)
