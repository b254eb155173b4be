"""What a run folder holds, by environment, domain and settings fingerprint: the part of
``summary.json`` (``groups``, and the ``env``/``domain``/``models`` it names) that is derived from
the records themselves, never from the last invocation's options. A folder resumed on another
domain, or (with ``--allow-changed-settings``) at other settings, is then described as it is:
one group per (env, domain, fingerprint), each with the settings ``run.json`` holds for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.folder.records import EpisodeRecord
from runtime.folder.run_info import settings_or_none


def _one_or_all(values: set[str]) -> str | list[str] | None:
    return None if not values else next(iter(values)) if len(values) == 1 else sorted(values)


def describe(records: list[EpisodeRecord], folder: Path) -> dict[str, Any]:
    """``env``, ``domain``, ``models`` (the settings of the records' fingerprints, by role;
    by fingerprint where they differ) and ``groups`` over every record of ``folder``."""
    from runtime.reports.summary import summarize

    known = settings_or_none(folder)
    by_group: dict[tuple[str, str, str], list[EpisodeRecord]] = {}
    for r in records:
        by_group.setdefault((r.key.env, r.key.domain, r.fingerprint or "unrecorded"), []).append(r)
    groups = []
    for (env, domain, fp), part in sorted(by_group.items()):
        settings = (known.get(fp) or {}).get("settings")
        summary = summarize(part)
        groups.append({
            "env": env, "domain": domain, "fingerprint": fp, "n_records": len(part),
            "tested_models": sorted({r.key.model for r in part}),
            "settings": settings,
            "by_arm": {arm: {k: row[k] for k in ("n", "errors", "mean_score", "cost_usd")}
                       for arm, row in summary["by_arm"].items()},
        })
    fingerprints = {g["fingerprint"] for g in groups}
    models: dict[str, Any] | None
    if len(fingerprints) == 1:
        models = ((known.get(next(iter(fingerprints))) or {}).get("settings") or {}).get("models")
    else:
        models = {fp: ((known.get(fp) or {}).get("settings") or {}).get("models") for fp in sorted(fingerprints)}
    return {"env": _one_or_all({r.key.env for r in records}),
            "domain": _one_or_all({r.key.domain for r in records}),
            "models": models, "groups": groups}
