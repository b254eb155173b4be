"""What every one-time set-up of a benchmark in a virtualenv of its own shares: where the venvs
live, running a step with its output kept in a log, telling a git URL from a folder, hashing a
source tree, and writing the record atomically. ToolSandbox's and τ³'s set-ups use it."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from envs.base import EnvError

HOME_VAR = "EVR_ENVS_HOME"
SKIPPED_PARTS = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", "build"}


class SetupError(EnvError):
    """Setup could not finish; the message names the cause."""


def envs_home() -> Path:
    return Path(os.environ.get(HOME_VAR) or "~/.cache/exec-validation-runtime/envs").expanduser()


def is_git_url(source: str) -> bool:
    return bool(re.match(r"^(https?|git|ssh|file)://", source) or re.match(r"^[\w.-]+@[\w.-]+:", source)
                or (source.endswith(".git") and not Path(source).exists()))


def run_logged(argv: list[str], log: Path, what: str, cwd: Optional[Path] = None,
               env: Optional[dict[str, str]] = None) -> str:
    """Run one step, its output appended to ``log``; ``SetupError`` naming the first error line."""
    with log.open("a", encoding="utf-8") as out:
        out.write(f"\n$ {' '.join(argv)}\n")
        out.flush()
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              cwd=cwd, env=env)
        out.write(proc.stdout)
    if proc.returncode != 0:
        lines = [line for line in proc.stdout.splitlines()
                 if line.strip() and "is ignored: it is neither a file nor a directory" not in line]
        cause = next((line for line in lines if re.match(r"^\s*(fatal|error)\b", line, re.I)), None) \
            or next((line for line in reversed(lines) if "error" in line.lower()), lines[-1] if lines else "")
        raise SetupError(f"{what} failed (exit {proc.returncode}): {cause.strip()[:300]} (full log: {log})")
    return proc.stdout


def obtain_checkout(source: str, home: Path, what: str, check: Callable[[Path], None],
                    say: Callable[[str], None]) -> tuple[Path, Path]:
    """The benchmark's source as a checkout (a local folder as it is, a git URL cloned shallow
    under ``home``) and the set-up's fresh log; ``check`` refuses a folder that is not the
    benchmark's, before anything is touched when the source is local."""
    if not is_git_url(source):
        check(Path(source).expanduser().resolve())
    home.mkdir(parents=True, exist_ok=True)
    log = home / "setup.log"
    log.write_text(f"{what} setup from {source} at {datetime.now(timezone.utc).isoformat()}\n")
    if is_git_url(source):
        checkout = home / "src"
        shutil.rmtree(checkout, ignore_errors=True)
        say(f"cloning {source} …")
        run_logged(["git", "clone", "--depth", "1", source, str(checkout)], log, f"git clone {source}")
    else:
        checkout = Path(source).expanduser().resolve()
    check(checkout)
    return checkout, log


def git_commit(path: Path) -> Optional[str]:
    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    except OSError:
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def tree_digest(checkout: Path, extra: Iterable[str] = ()) -> str:
    """A hash of what a venv is built from: ``extra`` (pins, the interpreter's version) and every
    file of the source (paths and bytes). Version-control and build leftovers do not count."""
    digest = hashlib.sha256()
    for part in extra:
        digest.update(part.encode() + b"\0")

    def counts(f: Path) -> bool:
        parts = f.relative_to(checkout).parts
        return (f.is_file() and not SKIPPED_PARTS.intersection(parts) and not f.name.endswith(".pyc")
                and not any(part.endswith(".egg-info") for part in parts))

    for f in sorted(filter(counts, checkout.rglob("*"))):
        digest.update(f.relative_to(checkout).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(f.read_bytes()).digest())
    return digest.hexdigest()


def load_json(path: Path) -> Optional[dict[str, Any]]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_json(path: Path, record: Any, *, indent: Optional[int] = 2) -> None:
    """Atomically: two set-ups at once must not leave half a record, and a helper that dies
    mid-write leaves the runtime no half file to read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=indent), encoding="utf-8")
    tmp.replace(path)
