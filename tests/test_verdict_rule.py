"""The verdict rule end to end: a judge and a critic that keep contradicting themselves are sent
back, then settled with a note; no record, report figure or APB export line keeps a grade that
contradicts its flags; records stored before the rule (``error_list`` judgements, critiques
graded 1.0 with a flag) are read, settled and counted by the report and the export."""

from __future__ import annotations

import json
import shutil

import pytest

from evrcore.critique import ERROR_CODES
from testkit.scripted import text
from tests.conftest import read_records

ONE_FLAG = {c: c == "E1" for c in ERROR_CODES}
NO_FLAG = dict.fromkeys(ERROR_CODES, False)


def contradicting_judge(request, context):
    """A scripted judge that answers 'correct, 1.0' while flagging E1, every time (a test double)."""
    return text(json.dumps({"is_correct": True, "grade": 1.0, "errors": ONE_FLAG, "reasoning": "looks fine"}))


def contradicting_critic(request, context):
    """A scripted critic whose grade 1.0 contradicts its E1 flag, every time (a test double)."""
    return text(json.dumps({"grade": 1.0, "errors": ONE_FLAG, "rationale": "The goal is misread."}))


def holds(grade, flags, is_correct=None) -> bool:
    on = any(flags.values()) if isinstance(flags, dict) else any(flags)
    return (grade == 1.0) == (not on) and (is_correct is None or is_correct == (not on)) and (not on or grade <= 0.8)


@pytest.fixture(scope="module")
def settled_run(tmp_path_factory):
    from runtime import validate
    from testkit.roles import ScriptedRoles

    out = tmp_path_factory.mktemp("verdict") / "run"
    model = ScriptedRoles(judge=contradicting_judge, critic=contradicting_critic).model_name("contradicting")
    code = validate.main(["--env", "tau2", "--domain", "airline", "--mode", "all",
                          "--task-ids", "1", "--model", model, "--out", str(out), "--no-cache"])
    assert code == 0
    return out


def test_no_recorded_judgement_or_critique_contradicts_its_flags(settled_run):
    records = read_records(settled_run)
    assert {r["key"]["mode"] for r in records} == {"direct", "plan-first", "refine"}
    judged = 0
    for r in records:
        for stage in ("judge_p0", "judge_p1"):
            if r.get(stage):
                j = r[stage]["judgement"]
                assert "error_list" not in j and set(j["errors"]) == set(ERROR_CODES)  # six named flags
                assert holds(j["grade"], j["errors"], j["is_correct"]) and (j["grade"], j["is_correct"]) == (0.8, False)
                assert r[stage]["attempts"] == 3 and "grade 1.0 → 0.8" in r[stage]["note"]
                judged += 1
        if r["critique"]:
            assert holds(r["critique"]["grade"], r["critique"]["errors"]) and r["critique"]["grade"] == 0.8
            assert "grade 1.0 → 0.8" in r["critique_note"] and r["guard"]["critic_attempts"] == 3
    assert judged == 3  # p0 in both modes, p1 in refine
    by_arm = json.loads((settled_run / "summary.json").read_text())["by_arm"]
    assert (by_arm["plan-first"]["judge_notes"], by_arm["refine"]["judge_notes"]) == (1, 2)
    assert (by_arm["plan-first"]["critic_notes"], by_arm["refine"]["critic_notes"]) == (0, 1)


def test_report_counts_settled_answers_and_the_export_keeps_the_rule(settled_run, tmp_path):
    from runtime.report import main as report_main

    target = tmp_path / "j.jsonl"
    assert report_main([str(settled_run), "--apb-out", str(target)]) == 0
    md = (settled_run / "report.md").read_text()
    assert "## Verdict rule" in md
    assert "| tau2 | scripted/contradicting | anti-leak | 2 | 2 | 1 | 1 |" in md
    assert "| tau2 | scripted/contradicting | – | 1 | 1 | 0 | 0 |" in md
    lines = [json.loads(line) for line in target.read_text().splitlines()]
    assert len(lines) == 2  # p0 once, p1 once
    for line in lines:
        j = line["judgement"]
        assert j["error_list"] == [1, 0, 0, 0, 0, 0] and holds(j["grade"], j["error_list"], j["is_correct"])
        assert line["runtime"]["judge_note"]


def test_records_stored_before_the_rule_are_read_settled_and_counted(settled_run, tmp_path):
    """Old records: the judge's flags as APB's error_list and contradicting the grade, the
    critique graded 1.0 with a flag and no note (as main's code wrote them)."""
    old = tmp_path / "old"
    shutil.copytree(settled_run, old)
    records = read_records(old)
    for r in records:
        for stage in ("judge_p0", "judge_p1"):
            if r.get(stage):
                r[stage] = {"judgement": {"is_correct": False, "grade": 1.0, "error_list": [0, 0, 0, 0, 0, 0],
                                          "reasoning": "stored before the rule"}, "attempts": 1,
                            "failure": None, "note": None}
        if r["critique"]:
            r["critique"] = {"grade": 1.0, "errors": ONE_FLAG, "rationale": "old"}
            del r["critique_note"]
        r.pop("digest", None)  # records of that time carried no digest either
    (old / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    info = json.loads((old / "run.json").read_text())
    info.pop("sealed_from_line", None)  # nor did run.json mark where digests begin
    (old / "run.json").write_text(json.dumps(info))
    from runtime.report import main as report_main

    target = tmp_path / "old.jsonl"
    assert report_main([str(old), "--apb-out", str(target)]) == 0
    md = (old / "report.md").read_text()
    assert "| tau2 | scripted/contradicting | anti-leak | 2 | 2 | 1 | 1 |" in md  # every old one counted
    assert "| 1.00 → 1.00 | 1.00 → 1.00 |" in md  # judge CR and grade p0 → p1, read settled
    for line in (json.loads(x) for x in target.read_text().splitlines()):
        j = line["judgement"]
        assert (j["is_correct"], j["grade"], j["error_list"]) == (True, 1.0, [0] * 6)
        assert "is_correct is false with no flag set" in line["runtime"]["judge_note"]
        assert "tools_json" in line  # the judge inputs kept in the run folder still travel
