"""Install ToolSandbox into a dedicated virtualenv from a source the user names, and record it.

ToolSandbox is not on PyPI and pins packages (pydantic 2.7, langchain 0.1, numpy 1.26,
openai 1.17) that cannot live beside langgraph 1.x / litellm 1.110, so it gets its own venv:

    python -m runtime.envs setup toolsandbox --source /path/to/ToolSandbox   (or a git URL)

Layout (``$EVR_ENVS_HOME``, default ``~/.cache/exec-validation-runtime/envs``)::

    toolsandbox.json        the record: source, commit, venv, python, scenario counts
    toolsandbox/venv/       the virtualenv (ToolSandbox + its pins + ``httpx<0.28``)
    toolsandbox/src/        the clone, when the source is a git URL
    toolsandbox/setup.log   pip's output

ToolSandbox's code never enters this repository: it is installed from the named source.
``TOOLSANDBOX_PYTHON`` overrides the recorded interpreter (e.g. a venv made by hand).

The record keeps a fingerprint of what went into the venv (every file of the source, the extra
pins, the base interpreter's version): a second setup with the same fingerprint keeps the venv
and only checks that its server starts, so CI on the same machine does not rebuild it.
"""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Optional

from envs.server_client import EnvUnavailableError
from envs.venvs import (HOME_VAR, SetupError, envs_home, is_git_url, load_json, obtain_checkout, tree_digest,
                        write_json)
from envs.venvs import git_commit as _commit
from envs.venvs import run_logged as _run

__all__ = ["HOME_VAR", "SetupError", "envs_home", "is_git_url", "setup", "verify", "python_path",
           "load_record", "record_path", "fingerprint", "check_checkout"]

PYTHON_VAR = "TOOLSANDBOX_PYTHON"
SOURCE_VAR = "TOOLSANDBOX_SOURCE"
EXTRA_PINS = ["httpx<0.28"]  # openai 1.17 passes `proxies=`, which httpx 0.28 removed
SETUP_HINT = ("run `python -m runtime.envs setup toolsandbox --source <path or git URL of "
              "apple/ToolSandbox>` (or set TOOLSANDBOX_PYTHON to a python that has it)")


def record_path() -> Path:
    return envs_home() / "toolsandbox.json"


def load_record() -> Optional[dict[str, Any]]:
    return load_json(record_path())


def python_path() -> str:
    """The interpreter that runs the env server; raises ``EnvUnavailableError`` with the fix."""
    explicit = os.environ.get(PYTHON_VAR)
    if explicit:
        if not Path(explicit).exists():
            raise EnvUnavailableError(f"{PYTHON_VAR}={explicit} does not exist")
        return explicit
    record = load_record()
    if record is None:
        raise EnvUnavailableError(f"ToolSandbox is not set up ({record_path()} is missing): {SETUP_HINT}")
    python = record.get("python", "")
    if not Path(python).exists():
        raise EnvUnavailableError(f"the recorded ToolSandbox venv is gone ({python} is missing): {SETUP_HINT}")
    return python


def check_checkout(path: Path) -> None:
    if not path.exists():
        raise SetupError(f"ToolSandbox source {path} does not exist")
    if not path.is_dir():
        raise SetupError(f"ToolSandbox source {path} is not a directory")
    if not (path / "tool_sandbox" / "__init__.py").is_file() or not (path / "pyproject.toml").is_file():
        raise SetupError(f"{path} is not a ToolSandbox checkout (expected pyproject.toml and "
                         "tool_sandbox/__init__.py; clone github.com/apple/ToolSandbox)")


def fingerprint(checkout: Path, python_version: str) -> str:
    """A hash of what the venv is built from: the source's files (paths and bytes), the extra
    pins and the interpreter's version. Version-control and build leftovers do not count."""
    return tree_digest(checkout, (python_version, *EXTRA_PINS))


def _python_version(python: str, log: Path) -> str:
    return _run([python, "-c", "import sys; print(sys.version)"], log, f"running {python}").strip()


def _reusable(record: Optional[dict[str, Any]], venv: Path, stamp: str) -> bool:
    return bool(record and record.get("fingerprint") == stamp and record.get("venv") == str(venv)
                and Path(record.get("python", "")).exists())


def setup(source: str, python: str = "python3", home: Optional[Path] = None,
          say: Callable[[str], None] = print, force: bool = False) -> dict[str, Any]:
    """Create the venv, install ToolSandbox from ``source``, verify the env server, record it.

    When the recorded venv was built from the same fingerprint (see :func:`fingerprint`) it is
    kept (``reused`` in the result) unless ``force``."""
    home = Path(home) if home else envs_home() / "toolsandbox"
    checkout, log = obtain_checkout(source, home, "ToolSandbox", check_checkout, say)
    if shutil.which(python) is None and not Path(python).exists():
        raise SetupError(f"python interpreter {python!r} not found (pass --python, e.g. python3.11)")
    venv = home / "venv"
    stamp = fingerprint(checkout, _python_version(python, log))
    previous = load_record()
    if not force and _reusable(previous, venv, stamp):
        say(f"{venv} was built from the same source, pins and interpreter: reusing it")
        say("starting the env server to check it …")
        try:
            info = verify(str(previous["python"]))
        except SetupError as exc:
            say(f"the kept venv does not work ({exc}): rebuilding it")
        else:
            record = {**previous, "source": source, "source_path": str(checkout),
                      "scenarios": info.get("scenarios"), "offline_scenarios": info.get("offline"),
                      "checked_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
            _write_record(record)
            return {**record, "reused": True}
    if previous and previous.get("venv") == str(venv):
        _write_record({**previous, "fingerprint": None})  # the venv is about to change
    say(f"creating {venv} …")
    _run([python, "-m", "venv", "--clear", str(venv)], log, "creating the virtualenv")
    venv_python = venv / "bin" / "python"
    say(f"installing ToolSandbox from {checkout} and its pinned dependencies (a few minutes) …")
    _run([str(venv_python), "-m", "pip", "install", str(checkout), *EXTRA_PINS], log,
         "pip install ToolSandbox")
    say("starting the env server to check it …")
    info = verify(str(venv_python))
    record = {
        "source": source,
        "source_path": str(checkout),
        "commit": _commit(checkout),
        "venv": str(venv),
        "python": str(venv_python),
        "extra_pins": EXTRA_PINS,
        "base_python": python,
        "fingerprint": stamp,
        "scenarios": info.get("scenarios"),
        "offline_scenarios": info.get("offline"),
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    _write_record(record)
    return {**record, "reused": False}


def _write_record(record: dict[str, Any]) -> None:
    write_json(record_path(), record)


def verify(python: str, start_timeout: float = 300.0) -> dict[str, Any]:
    """Start one env server with ``python``; its ``hello`` info, or ``SetupError`` with the cause."""
    from envs.server_client import EnvServer
    from envs.toolsandbox.command import server_command

    server = EnvServer(server_command(python), start_timeout=start_timeout)
    try:
        hello = server.start()
    except EnvUnavailableError as exc:
        raise SetupError(str(exc)) from exc
    finally:
        server.close()
    return dict(hello.info)
