"""Shared fixtures. Tests run offline: litellm uses its bundled price map, τ²'s data is local."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import json  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from loguru import logger  # noqa: E402


@pytest.fixture(autouse=True)
def _quiet_loguru():
    logger.remove()
    yield


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
