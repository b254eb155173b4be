"""Planner plug-ins: the example package installed and run through the CLI by entry point and
by import path; the conformance kit passes good planners and explains what a broken one gets wrong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from planners.registry import PlannerLoadError, load
from testkit.conformance import assert_planner_conforms, check_planner
from tests.conftest import read_records

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "rule_planner"


@pytest.fixture(scope="module")
def installed_example(tmp_path_factory):
    """The example package pip-installed into a folder on PYTHONPATH (entry points included)."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(EXAMPLE)], check=True)
    assert list(target.glob("rule_planner-*.dist-info"))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")])}


def _run(env, out: Path, planner: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "testkit.run_scripted", "--", "--env", "tau2", "--domain",
         "airline", "--mode", "all", "--task-ids", "1", "--model", "scripted/roles", "--planner",
         planner, "--out", str(out), "--no-cache"], capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("route", ["rule", "rule_planner:RulePlanner"], ids=["entry-point", "import-path"])
def test_example_planner_runs_through_the_cli(installed_example, tmp_path, route):
    listing = subprocess.run([sys.executable, "-m", "runtime.planners"], capture_output=True,
                             text=True, env=installed_example, check=True)
    assert "rule_planner:RulePlanner" in listing.stdout
    proc = _run(installed_example, tmp_path / "run", route)
    assert proc.returncode == 0, proc.stderr
    records = read_records(tmp_path / "run")
    assert len(records) == 3 and all(r["status"] == "ok" for r in records)
    by_mode = {r["key"]["mode"]: r for r in records}
    p0 = by_mode["plan-first"]["p0"]
    assert p0["plan"].startswith("Look up what the request is about")  # the rule planner's words
    assert p0 == by_mode["refine"]["p0"]
    assert by_mode["refine"]["p1"]["plan"].endswith("Do not stop until every part of the request is done.")


@pytest.mark.slow
def test_unknown_planners_fail_fast_with_exit_2(tmp_path):
    proc = _run(dict(os.environ), tmp_path / "run", "nope_pkg.mod:Planner")
    assert proc.returncode == 2 and "cannot import module 'nope_pkg.mod'" in proc.stderr
    proc = _run(dict(os.environ), tmp_path / "run", "planners.llm:NoSuchPlanner")
    assert proc.returncode == 2 and "has no attribute 'NoSuchPlanner'" in proc.stderr
    proc = _run(dict(os.environ), tmp_path / "run", "json:dumps")
    assert proc.returncode == 2 and "does not satisfy the Planner protocol" in proc.stderr
    assert not (tmp_path / "run" / "records.jsonl").exists()


def test_conformance_kit_passes_the_builtin_and_example_planners(installed_example):
    assert_planner_conforms("llm")
    sys.path.insert(0, installed_example["PYTHONPATH"].split(os.pathsep)[0])
    try:
        report = assert_planner_conforms("rule_planner:RulePlanner")
    finally:
        sys.path.pop(0)
    assert any("no tools" in c for c in report.checked) and len(report.checked) == 6 * 3


class CrashesWithoutTools:
    def __init__(self, model):
        pass

    def plan(self, view):
        return {"plan": "use " + view.tool_names[0], "tool_chain": []}

    def revise(self, view, plan, critique):
        return "a string, not a plan"


class NoRevise:
    def plan(self, view):
        return {"plan": "x", "tool_chain": []}


def test_conformance_kit_says_what_a_broken_planner_gets_wrong():
    report = check_planner(CrashesWithoutTools, domains=("mock",))
    assert not report.ok
    assert any("plan() raised IndexError on task shape 'no tools'" in p for p in report.problems)
    assert any("revise() raised PlannerLoadError" in p and "returned str" in p for p in report.problems)
    with pytest.raises(AssertionError, match="does not conform"):
        assert_planner_conforms(CrashesWithoutTools, domains=("mock",))
    (problem,) = check_planner(NoRevise, domains=("mock",)).problems
    assert "missing revise()" in problem


def test_async_planners_are_supported():
    class AsyncPlanner:
        def __init__(self, model):
            pass

        async def plan(self, view):
            return {"plan": "async plan", "tool_chain": []}

        async def revise(self, view, plan, critique):
            return plan

    assert_planner_conforms(AsyncPlanner, domains=("mock",))


def test_load_errors_name_the_problem():
    with pytest.raises(PlannerLoadError, match="unknown planner 'nonsense'"):
        load("nonsense")
