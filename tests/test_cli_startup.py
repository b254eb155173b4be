"""Every command answers ``--help``, ``--version`` and bad input without importing what runs
episodes: litellm, LangGraph and τ² (seconds of imports) come in only once a run starts.

A property of the import graph, checked in a fresh interpreter, not a timing test; the timings
are measured by ``bench/cli_startup.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("litellm", "langgraph", "langchain_core", "tau2", "ray", "pandas", "numpy", "scipy", "statsmodels",
         "matplotlib", "openai", "wordfreq", "docker", "inspect_ai", "jinja2")

COMMANDS = {
    # module: a bad input its parser or its settings refuse (exit 2)
    "runtime.validate": ["--trials", "0"],
    "runtime.ablate": ["--mode", "direct"],
    "runtime.table3": ["--config", "no-such-config.yaml"],
    "runtime.report": ["no-such-run-folder"],
    "runtime.envs": ["no-such-command"],
    "runtime.planners": ["--no-such-option"],
    "runtime.leak_eval": ["--corpus", "no-such-corpus"],
    "leakbench.evaluate": ["--sample", "0"],
    "envs.docker": ["no-such-command"],
}

PROBE = r"""
import contextlib, io, json, runpy, sys
HEAVY, COMMANDS = json.loads(sys.argv[1])
import runtime.cli.process_end  # a command's end() would end this probe too: let it raise instead
def _end(code):
    raise SystemExit(code)
runtime.cli.process_end.end = _end
results = []
for module, bad in COMMANDS.items():
    for argv in (["--help"], ["--version"], bad, ["--mode", "nope"] if module == "runtime.validate" else bad):
        out, err = io.StringIO(), io.StringIO()
        sys.argv = [module, *argv]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        results.append({"module": module, "argv": argv, "code": code, "out": out.getvalue(),
                        "err": err.getvalue(),
                        "heavy": sorted(m for m in HEAVY if m in sys.modules)})
print(json.dumps(results))
"""


def _env(**extra: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "LITELLM_LOCAL_MODEL_COST_MAP": "True", **extra}


def _probe(heavy=HEAVY, commands=COMMANDS, env=None) -> list[dict]:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps([heavy, commands])], cwd=REPO,
                          capture_output=True, text=True, timeout=120, env=env or _env())
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_help_version_and_bad_input_import_nothing_heavy():
    results = _probe()
    assert len(results) == 4 * len(COMMANDS)
    for r in results:
        where = f"{r['module']} {' '.join(r['argv'])}"
        assert r["heavy"] == [], f"{where} imported {r['heavy']}"
        if r["argv"] == ["--help"]:
            assert r["code"] == 0 and "usage:" in r["out"], where
        elif r["argv"] == ["--version"]:
            assert r["code"] == 0 and r["out"].startswith(f"python -m {r['module']} "), where
        else:
            lines = r["err"].strip().splitlines()
            assert r["code"] == 2, f"{where}: exit {r['code']}, {r['err'][-300:]}"
            assert len(lines) == 1 and lines[0].startswith("error:"), f"{where}: {r['err']}"


def test_the_probe_sees_what_a_command_imports():
    """The check above could pass by never looking: the settings' YAML reader, which
    runtime.validate does import, is seen."""
    results = _probe(heavy=["yaml", "pydantic"], commands={"runtime.validate": ["--trials", "0"]})
    assert all(r["heavy"] == ["pydantic", "yaml"] for r in results)


DRY = ["--dry-run", "--domain", "airline", "--mode", "all", "--tasks", "12", "--model", "openai/gpt-4o"]


def test_a_dry_run_answers_from_what_an_earlier_command_remembered(tmp_path):
    """The first dry run on a machine asks τ² for the tasks, litellm for the price and
    statsmodels for the detectable Δ, and remembers their answers (``envs.facts``); the next
    dry run prints the same lines without importing any of them."""
    env = _env(EVR_FACTS_HOME=str(tmp_path))
    first = subprocess.run([sys.executable, "-m", "runtime.validate", *DRY], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "36 episodes" in first.stdout and "detectable" in first.stdout, first.stdout
    again = [r for r in _probe(commands={"runtime.validate": DRY}, env=env) if r["argv"] == DRY]
    assert again and all(r["heavy"] == [] and r["code"] == 0 for r in again), again
    assert again[0]["out"] == first.stdout


RUN_PROBE = r"""
import json, sys
from testkit import run_scripted
watched = json.loads(sys.argv[2])
harness = [m for m in watched if m in sys.modules]  # the scripted roles' own imports, before the run
code = run_scripted.main(["--", *json.loads(sys.argv[1])])
print(json.dumps({"code": code, "harness": harness,
                  "loaded": sorted(m for m in watched if m in sys.modules and m not in harness)}))
"""
REPORT_ONLY = ("scipy", "statsmodels", "matplotlib", "ray", "inspect_ai", "docker", "wordfreq", "babel",
               "num2words")
"""What a run that writes no report never needs: the report's statistics and plots, Ray, the
guard's word lists, the container SDK."""


def test_a_run_without_its_report_imports_only_what_runs_episodes(tmp_path):
    """Run with its report (drop ``--no-report``), the same probe sees matplotlib."""
    argv = ["--env", "tau2", "--mode", "direct", "--domain", "airline", "--tasks", "1", "--model",
            "scripted/roles", "--no-judge", "--no-report", "--no-cache", "--out", str(tmp_path / "run")]
    done = subprocess.run([sys.executable, "-c", RUN_PROBE, json.dumps(argv),
                           json.dumps(REPORT_ONLY)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, env=_env(EVR_FACTS_HOME=str(tmp_path)))
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["code"] == 0 and (tmp_path / "run" / "records.jsonl").exists()
    assert len(result["harness"]) <= 1, result  # the scripted roles' leak decoder: num2words
    assert result["loaded"] == [], f"a run without its report imported {result['loaded']}"
