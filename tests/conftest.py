"""Shared fixtures. Tests run offline: litellm uses its bundled price map, τ²'s data is local."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Facts the commands remember between runs (envs.facts) go to a folder of this session's, so a
# test neither reads a developer's nor leaves its own behind.
os.environ.setdefault("EVR_FACTS_HOME", tempfile.mkdtemp(prefix="evr-facts-"))
# Ray starts its workers 15 nicer than their raylet. The clusters the tests start with `ray start`
# (as a user would) inherit this instead, so that their workers are not starved by the other
# pytest worker on a 2-core machine (the instances the runtime starts set it themselves).
os.environ.setdefault("RAY_worker_niceness", "0")

import json  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from loguru import logger  # noqa: E402


@pytest.fixture(autouse=True)
def _quiet_loguru():
    logger.remove()
    yield


VOLATILE = ("timings_s", "started_at", "finished_at", "reused", "usage", "fingerprint", "digest",
            "attempts")
"""Timing, and which of two concurrent modes happened to make the shared p0 (and so paid for
it): both vary between two runs of the same backend too; the settings fingerprint, which
holds the endpoint's address (each run's loopback proxy listens on a port of its own); and the
attempts of an episode re-run after a lost node (how many depends on which node died when)."""


def comparable(rows: list[dict]) -> dict[str, dict]:
    """Records by id, minus :data:`VOLATILE` fields and with random tool-call ids masked: what two
    runs of the same command must agree on, whichever backend ran them."""
    import re

    out = {}
    for row in rows:
        kept = {k: v for k, v in row.items() if k not in VOLATILE}
        text = re.sub(r"call_[0-9a-f]{12}", "call_X", json.dumps(kept, sort_keys=True))
        out[row["record_id"]] = json.loads(text)
    return out


def calls_by_purpose(rows: list[dict]) -> Counter:
    """Model calls per purpose over a run's records: what two backends must agree on."""
    total: Counter = Counter()
    for row in rows:
        for purpose, usage in row["usage"]["by_purpose"].items():
            total[purpose] += usage["calls"]
    return total


def stub_server():
    """``bench/stub_server.py`` as a module (bench/ is no package): the gold stub that replays
    τ²'s reference solutions for agent and user (``serve``, ``Replay``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "stub_server", Path(__file__).resolve().parents[1] / "bench" / "stub_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_records(run_dir: Path) -> list[dict]:
    path = Path(run_dir) / "records.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def validate(tmp_path):
    """Run the CLI in-process: ``validate(*args) -> (exit code, records)`` in a fresh run folder."""
    from runtime import validate as cli

    def run(*args: str, out: Path | None = None) -> tuple[int, list[dict]]:
        out = out or tmp_path / "run"
        argv = [*args]
        if "--out" not in argv:
            argv += ["--out", str(out)]
        if "--cache-dir" not in argv and "--no-cache" not in argv:
            argv += ["--cache-dir", str(tmp_path / "cache")]
        code = cli.main(argv)
        return code, read_records(out)

    return run


# ---- ToolSandbox: a set-up source, or a skip that says how (a failure where CI requires it) ---------

REQUIRE_TOOLSANDBOX = "EVR_REQUIRE_TOOLSANDBOX"
ENABLE_TOOLSANDBOX = ("ToolSandbox tests skipped: run `python -m runtime.envs setup toolsandbox --source "
                      "<path or git URL of apple/ToolSandbox>`, then set TOOLSANDBOX_SOURCE=<that source>")


def toolsandbox_python() -> str:
    """The interpreter of the set-up ToolSandbox venv, or a skip naming what is missing."""
    if not os.environ.get("TOOLSANDBOX_SOURCE"):
        pytest.skip(ENABLE_TOOLSANDBOX)
    from envs.server_client import EnvUnavailableError
    from envs.toolsandbox.setup import python_path

    try:
        return python_path()
    except EnvUnavailableError as exc:
        pytest.skip(f"TOOLSANDBOX_SOURCE is set but {exc}")


@pytest.fixture(scope="module")
def ts_python():
    return toolsandbox_python()


@pytest.fixture(scope="module")
def ts_env(ts_python):
    from envs.toolsandbox import ToolSandboxEnvironment

    env = ToolSandboxEnvironment(python=ts_python, max_servers=3)
    yield env
    env.close()


# ---- τ³: the same, for tau2-bench 1.0.1 in its venv ---------------------------------------------

REQUIRE_TAU3 = "EVR_REQUIRE_TAU3"
ENABLE_TAU3 = ("τ³ tests skipped: run `python -m runtime.envs setup tau3 --source <path or git URL of "
               "sierra-research/tau2-bench 1.0.1>`, then set TAU3_SOURCE=<that source>")


def tau3_record() -> dict:
    """The set-up τ³ (its record), or a skip naming what is missing."""
    if not os.environ.get("TAU3_SOURCE"):
        pytest.skip(ENABLE_TAU3)
    from envs.server_client import EnvUnavailableError
    from envs.tau3.setup import installed

    try:
        return installed()
    except EnvUnavailableError as exc:
        pytest.skip(f"TAU3_SOURCE is set but {exc}")


@pytest.fixture(scope="module")
def tau3_env():
    tau3_record()
    from envs.tau3 import Tau3Environment

    env = Tau3Environment(max_servers=2)
    yield env
    env.close()


@pytest.fixture(scope="module")
def tau3_golden_env():
    """τ³ with banking's ``golden_retrieval`` (the task's required documents in the policy)."""
    tau3_record()
    from envs.tau3 import Tau3Environment

    env = Tau3Environment(retrieval="golden_retrieval", max_servers=2)
    yield env
    env.close()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Every test marked ``ray`` on one worker (tests/one_ray_at_a_time.py says why)."""
    from tests.one_ray_at_a_time import make_scheduler

    return make_scheduler(config, log)


REQUIRED = {"toolsandbox": REQUIRE_TOOLSANDBOX, "tau3": REQUIRE_TAU3}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """With ``EVR_REQUIRE_TOOLSANDBOX=1`` / ``EVR_REQUIRE_TAU3=1`` (CI with the source at hand) a
    skipped ToolSandbox / τ³ test is a failure: a check that silently did not run proves nothing."""
    outcome = yield
    report = outcome.get_result()
    module = item.nodeid.split("::")[0].lower()
    for word, var in REQUIRED.items():
        if report.skipped and os.environ.get(var) == "1" and word in module:
            reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            report.outcome = "failed"
            report.longrepr = f"skipped although {var}=1: {reason}"

