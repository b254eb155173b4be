"""What the benchmark scripts share: the scripted model server in its own process, the two
runners' command lines, timing a whole process (wall, CPU, peak RSS), the machine's line, and
writing a block of Markdown between its markers. Below every script, so none imports another.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ROOT = Path(__file__).resolve().parents[1]


MARK = "<!-- runtime_vs_tau2:{part}:{edge} -->"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def task_ids(domain: str, n: int) -> list[str]:
    """The first ``n`` base-split tasks that have reference actions (the stub replays them)."""
    from tau2.registry import registry

    ids = registry.get_task_splits_loader(domain)()["base"]
    tasks = {t.id: t for t in registry.get_tasks_loader(domain)()}
    return [i for i in ids if tasks[i].evaluation_criteria.actions][:n]


class Stub:
    """``bench/stub_server.py`` in its own process (it must not share the runners' CPU time)."""

    def __init__(self, latency: float):
        self.latency = latency
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "stub_server.py"), "--port", str(self.port),
             "--latency", str(latency)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.proc.stdout.readline()  # "stub model on ..."
        self.base = f"http://127.0.0.1:{self.port}/v1"

    def calls(self) -> int:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=10) as r:
            return json.load(r)["chat"]

    def __enter__(self) -> "Stub":
        return self

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        self.proc.wait()


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": "bench-dummy", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            **(extra or {})}


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one process, read from its own ``wait4``."""
    wall, rss, _ = timed_cpu(cmd, env)
    return wall, rss


def timed_cpu(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MB) and CPU seconds (user + system, the process and the children
    it waited for) of one process, read from its own ``wait4``. On a loaded machine the CPU
    figure moves much less than the wall time."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=child_env(env), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            tail = err.read().decode(errors="replace")[-3000:]
            raise RuntimeError(f"{' '.join(cmd[:6])} … exited {proc.returncode}:\n{tail}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def run_tau2(stub: Stub, domain: str, ids: list[str], concurrency: int) -> tuple[float, float]:
    """``tau2 run`` with τ²'s own LLM agent and user simulator, both on the stub: wall and CPU s."""
    from tau2.utils import DATA_DIR

    args = json.dumps({"api_base": stub.base, "temperature": 0.0})
    name = f"bench_{uuid.uuid4().hex[:8]}"
    cmd = [str(Path(sys.executable).with_name("tau2")), "run", "--domain", domain,
           "--agent-llm", "openai/stub", "--user-llm", "openai/stub",
           "--agent-llm-args", args, "--user-llm-args", args, "--task-ids", *ids,
           "--max-concurrency", str(concurrency), "--save-to", name, "--log-level", "ERROR"]
    try:
        wall, _, cpu = timed_cpu(cmd)
        saved = DATA_DIR / "simulations" / f"{name}.json"
        sims = json.loads(saved.read_text())["simulations"] if saved.exists() else []
        rewards = [s["reward_info"]["reward"] for s in sims]
        if len(rewards) != len(ids) or any(r != 1.0 for r in rewards):
            raise RuntimeError(f"tau2 run scored {rewards} on {domain} {ids}: the stub replay must score 1.0")
        return wall, cpu
    finally:
        for path in (DATA_DIR / "simulations").glob(f"{name}*"):
            if path.is_file():
                path.unlink()


def runtime_cmd(stub: Stub, domain: str, ids: list[str], concurrency: int, out: Path,
                trials: int = 1, cache: Path | None = None, report: bool = False) -> list[str]:
    """The runtime's command for the same work as ``tau2 run`` (records, no report: ``tau2 run``
    writes none); ``report=True`` adds the report and explorer a plain run writes by default."""
    cmd = [sys.executable, "-m", "runtime.validate", "--env", "tau2", "--mode", "direct",
           "--domain", domain, "--task-ids", ",".join(ids), "--model", "openai/stub",
           "--api-base", stub.base, "--concurrency", str(concurrency), "--trials", str(trials),
           "--no-judge", "--out", str(out), *([] if report else ["--no-report"])]
    return cmd + (["--cache-dir", str(cache)] if cache else ["--no-cache"])


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]


def check_scored(out: Path, expected: int) -> list[dict]:
    rows = records(out)
    scores = [r["score"] for r in rows]
    if len(rows) != expected or any(s != 1.0 for s in scores):
        raise RuntimeError(f"{out}: {len(rows)} records, scores {scores}; the stub replay must score 1.0")
    return rows


def run_runtime(stub: Stub, domain: str, ids: list[str], concurrency: int, trials: int = 1,
                env: dict[str, str] | None = None, report: bool = False) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MB) and CPU seconds of one ``runtime.validate`` run."""
    with tempfile.TemporaryDirectory() as out:
        wall, rss, cpu = timed_cpu(runtime_cmd(stub, domain, ids, concurrency, Path(out), trials,
                                               report=report), env)
        check_scored(Path(out), len(ids) * trials)
    return wall, rss, cpu


RUN_IMPORTS = ("import runtime.compose.build, runtime.cli.lifecycle, runtime.backends, envs.tau2, envs.tau2.episode, "
               "runtime.reports.summary")


"""What a run imports before its first episode (litellm, LangGraph, τ², the runtime)."""


IMPORTS_ONLY = [sys.executable, "-c", RUN_IMPORTS + "; from runtime.cli.process_end import end; end(0)"]


def write_block(path: Path, part: str, block: str) -> None:
    """Replace this part's block between its markers in ``path`` (appended when absent)."""
    replace_between(path, MARK.format(part=part, edge="start"), MARK.format(part=part, edge="end"), block)


def replace_between(path: Path, start: str, end: str, block: str) -> None:
    """Replace what stands between the lines ``start`` and ``end`` in ``path`` with ``block``
    (both markers appended with it when absent)."""
    doc = path.read_text(encoding="utf-8") if path.exists() else ""
    text = f"{start}\n{block}\n{end}"
    if start in doc and end in doc:
        doc = doc[: doc.index(start)] + text + doc[doc.index(end) + len(end):]
    else:
        doc = doc.rstrip() + "\n\n" + text + "\n"
    path.write_text(doc, encoding="utf-8")


def machine() -> str:
    return (f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
            f"{time.strftime('%Y-%m-%d')}")
"""A process that only imports what a run imports, then ends as the commands do."""
