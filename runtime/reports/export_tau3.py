"""A τ² or τ³ run folder as τ-bench's own results files (``--export tau3 DIR``): one file per
environment, domain and arm, in the schema of the release's ``Results`` (tau2-bench 1.0.1,
``tau2.data_model.simulation``): ``info`` (agent, user simulator, domain policy, trials, seed),
``tasks`` (the task definitions the episodes ran), and ``simulations`` (each episode's messages
with tool calls and results, termination reason, reward info, trial, seed, costs). Each file is
``DIR/<env.domain.arm.model>/results.json``, the layout the release's ``tau2 view --dir DIR``
lists; ``tau2 evaluate-trajs`` re-scores them (``--fresh-tasks``: against its current tasks),
and ``tau2 submit prepare DIR`` checks them for the leaderboard. An arm whose critic saw the
hidden supervision is written only when asked for by name (``arms``), and then says so inside,
in fields the release's loader keeps (``info.agent_info.implementation``, each simulation's
``info``).

Written from the records alone; nothing of the release is imported here. The task definitions
come from the environment that ran the episodes: τ²'s from the wheel installed beside the
runtime, τ³'s from the release in its own venv (``envs.tau3.export_tasks``, a subprocess).

What the records do not hold, and so no file holds: per-message timestamps, costs and token
usage (the episode's start and end and its per-purpose totals are kept), whether a tool call
raised (``ToolMessage.error``), and the agent's system prompt (the policy is in ``info``; the
plan it executed is in each simulation's ``info.runtime``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Optional

from runtime.folder.records import EpisodeRecord
from runtime.reports.export_common import (LEADERBOARD_RULE, ArmKey, Export, Folder, errored, tokens_and_cost,
                                           write_json_file)

ENVS = ("tau2", "tau3")
TERMINATIONS = ("user_stop", "agent_stop", "max_steps", "timeout", "too_many_errors", "agent_error",
                "user_error", "infrastructure_error", "context_window_exceeded", "unexpected_error")
"""The release's ``TerminationReason`` values; an episode the runtime ended on its own limit
(``envs.base.TurnRefused``) was scored as one run out of steps, and is exported so."""
MAX_ERRORS = 10
"""The orchestrator's ``max_errors`` in every runtime episode (``envs.tau2.episode.play``)."""
AGENT_PURPOSES = ("planner", "executor", "reviser", "critic", "self-critic")
"""The calls that make up the submitted agent (the scaffold, its critic included); the user
simulator's calls are the user's cost; the plan judge, leak auditor and NL judge evaluate."""

RESULTS = "results.json"
"""The name of each arm's file, in a folder of its own: the release lists ``<dir>/<run>/results.json``."""

TaskDefs = dict[str, dict[str, Any]]
"""domain → {"tasks": [Task JSON], "base": [ids], "policy": str, "user_guidelines": str} or
{"missing": why}."""


# ---- the task definitions ----------------------------------------------------------------------

def tau2_definitions(domains: list[str], ids: dict[str, set[str]]) -> TaskDefs:
    """τ²'s (the wheel beside the runtime) tasks of ``ids`` and policy per domain."""
    from runtime.folder.logs import quiet_loguru

    quiet_loguru()  # τ² logs from import on
    from envs.tau2 import tasks

    out: TaskDefs = {}
    for domain in domains:
        try:
            policy, _ = tasks.policy_and_tools(domain)
            dumped = [tasks.task(domain, t).model_dump(mode="json") for t in sorted(ids[domain])]
            out[domain] = {"tasks": dumped, "base": list(tasks.splits(domain).get("base") or []),
                           "policy": policy, "user_guidelines": user_guidelines()}
        except Exception as exc:  # noqa: BLE001 - a domain whose tasks cannot be read is named
            out[domain] = {"missing": f"{type(exc).__name__}: {str(exc)[:200]}"}
    return out


def user_guidelines() -> str | None:
    """The user simulator's global guidelines as the release writes them into ``user_info``
    (the text guidelines, as ``tau2 run`` records them), from the τ² beside the runtime."""
    try:
        from tau2.user.user_simulator import get_global_user_sim_guidelines

        return get_global_user_sim_guidelines()
    except Exception:  # noqa: BLE001 - a wheel without them: the field stays empty
        return None


def tau3_definitions(domains: list[str], ids: dict[str, set[str]] | None = None,
                     timeout: float = 600) -> TaskDefs:
    """The release's tasks and policy per domain, read in its venv (``envs.tau3.export_tasks``)."""
    from envs.server_client import EnvUnavailableError
    from envs.shim import envs_only_path
    from envs.tau3.setup import installed

    try:
        record = installed()
    except EnvUnavailableError as exc:
        return {d: {"missing": str(exc)} for d in domains}
    with tempfile.TemporaryDirectory(prefix="evr-export-") as tmp:
        out = Path(tmp) / "tasks.json"
        env = {**os.environ, "PYTHONPATH": envs_only_path(), "TAU2_DATA_DIR": record["data_dir"]}
        env = {k: v for k, v in env.items() if not any(s in k.upper() for s in ("API_KEY", "TOKEN", "SECRET"))}
        proc = subprocess.run([record["python"], "-m", "envs.tau3.export_tasks", "--domains", ",".join(domains),
                               "--out", str(out)], capture_output=True, text=True, env=env, timeout=timeout)
        if proc.returncode != 0:
            tail = [line for line in proc.stderr.strip().splitlines() if line.strip()][-1:] or ["(no output)"]
            return {d: {"missing": f"reading τ³'s tasks failed: {tail[0][:300]}"} for d in domains}
        return json.loads(out.read_text(encoding="utf-8"))


def definitions(env: str, domains: list[str], ids: dict[str, set[str]]) -> TaskDefs:
    return tau2_definitions(domains, ids) if env == "tau2" else tau3_definitions(domains, ids)


# ---- one simulation per episode ----------------------------------------------------------------

def messages(record: EpisodeRecord) -> list[dict[str, Any]]:
    """The conversation in the release's message shapes: a tool result knows who asked for it
    (the agent or, in telecom, the user), and every message its turn index."""
    out, requestor_of = [], {}
    stamp = record.started_at
    for m in record.messages:
        role = m.get("role")
        if role == "tool":
            call = m.get("tool_call_id")
            out.append({"role": "tool", "id": call or "", "content": m.get("content"),
                        "requestor": requestor_of.get(call, "assistant"), "timestamp": stamp})
        elif role in ("assistant", "user"):
            calls = []
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                requestor_of[tc.get("id")] = role
                raw = fn.get("arguments")
                try:
                    arguments = json.loads(raw) if isinstance(raw, str) and raw else (raw or {})
                except ValueError:
                    arguments = {"__unparsable_arguments__": raw}
                if not isinstance(arguments, dict):
                    arguments = {"__unparsable_arguments__": raw}
                calls.append({"id": tc.get("id") or "", "name": fn.get("name", ""), "arguments": arguments,
                              "requestor": role})
            out.append({"role": role, "content": m.get("content"), "tool_calls": calls or None,
                        "timestamp": stamp})
        elif role == "system":
            out.append({"role": "system", "content": m.get("content"), "timestamp": stamp})
    for i, m in enumerate(out):
        m["turn_idx"] = i
    return out


def simulation_id(record: EpisodeRecord) -> str:
    """A stable id per record (the release names its per-simulation files by it)."""
    return hashlib.sha256(record.record_id.encode()).hexdigest()[:32]


def termination(record: EpisodeRecord) -> str:
    value = record.termination or "agent_error"
    return value if value in TERMINATIONS else "max_steps"


def _duration(record: EpisodeRecord) -> float:
    try:
        return max(0.0, (datetime.fromisoformat(record.finished_at)
                         - datetime.fromisoformat(record.started_at)).total_seconds())
    except (TypeError, ValueError):
        return 0.0


def simulation(record: EpisodeRecord, key: ArmKey, reward_info: Optional[dict] = None) -> dict[str, Any]:
    """One episode as the release's ``SimulationRun`` (JSON); ``reward_info`` replaces the
    run's own (a re-grade's)."""
    prompt, completion, agent_cost = tokens_and_cost(record, AGENT_PURPOSES)
    _, _, user_cost = tokens_and_cost(record, ("user",))
    reward = reward_info if reward_info is not None else (record.score_info or {}).get("reward_info")
    runtime = {"record_id": record.record_id, "arm": key.label, "mode": key.mode, "strategy": key.strategy,
               "saw_supervision": key.saw_supervision, "opening_request": record.opening_request,
               "plan_executed": record.p1 if record.p1 is not None else record.p0,
               "score": record.score, "breakdown": record.breakdown,
               "agent_tokens": {"prompt": prompt, "completion": completion}}
    if key.saw_supervision:
        runtime["leaderboard"] = "not eligible: " + LEADERBOARD_RULE
    if record.termination and record.termination not in TERMINATIONS:
        runtime["termination"] = record.termination
    if ungraded := (record.score_info or {}).get("ungraded"):
        runtime["ungraded"] = ungraded
    return {"id": simulation_id(record), "task_id": record.key.task_id, "timestamp": record.started_at,
            "start_time": record.started_at, "end_time": record.finished_at, "duration": _duration(record),
            "termination_reason": termination(record), "agent_cost": agent_cost, "user_cost": user_cost,
            "reward_info": reward, "messages": messages(record), "trial": record.key.trial,
            "seed": record.seed, "info": {"runtime": runtime}}


# ---- one results file per arm ------------------------------------------------------------------

NL_JUDGE_NOTE = ("the release grades them with an LLM judge (gpt-4.1 by default), so `tau2 evaluate-trajs` "
                 "needs that judge's key (OPENAI_API_KEY) to re-score them, and exits 1 without it")


def _with_nl_assertions(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The simulations of ``data`` whose task's reward has NL assertions to judge (the task has
    some, and its reward basis names them: airline's tasks carry some that no reward reads)."""
    asserted = set()
    for task in data["tasks"]:
        criteria = task.get("evaluation_criteria") or {}
        if criteria.get("nl_assertions") and "NL_ASSERTION" in (criteria.get("reward_basis") or []):
            asserted.add(task.get("id"))
    return [s for s in data["simulations"] if s["task_id"] in asserted]


def _role(settings: dict[str, Any], role: str) -> tuple[Optional[str], Optional[dict]]:
    spec = (settings.get("models") or {}).get(role) or {}
    args = {k: spec[k] for k in ("temperature", "max_tokens") if spec.get(k) is not None}
    return spec.get("model"), args or None


def results(key: ArmKey, records: list[EpisodeRecord], settings: dict[str, Any], defs: dict[str, Any],
            rewards: Optional[dict[str, dict]] = None) -> dict[str, Any]:
    """The arm's ``Results`` (JSON). ``rewards`` (record id → reward info) replace the run's."""
    user_llm, user_args = _role(settings, "user_model")
    agent_llm, agent_args = _role(settings, "model")
    mark = (f" — its critic saw the hidden supervision: for viewing only, not for the leaderboard; "
            f"{LEADERBOARD_RULE}" if key.saw_supervision else "")
    task_set = settings.get("task_set") or {}
    ran = {r.key.task_id for r in records}
    return {
        "timestamp": min((r.started_at for r in records), default=None),
        "info": {
            "git_commit": " ".join(str(task_set[k]) for k in ("package", "version") if task_set.get(k)),
            "num_trials": max((r.key.trial for r in records), default=-1) + 1,
            "max_steps": int(settings.get("max_steps") or 0),
            "max_errors": MAX_ERRORS,
            "user_info": {"implementation": "user_simulator", "llm": user_llm or None, "llm_args": user_args,
                          "global_simulation_guidelines": defs.get("user_guidelines")},
            "agent_info": {"implementation": f"exec-validation-runtime {key.label}{mark}",
                           "llm": agent_llm or key.model, "llm_args": agent_args},
            "environment_info": {"domain_name": key.domain, "policy": defs.get("policy", "")},
            "seed": settings.get("seed"),
            "retrieval_config": settings.get("retrieval"),
        },
        "tasks": [t for t in defs.get("tasks", []) if t.get("id") in ran],
        "simulations": [simulation(r, key, (rewards or {}).get(r.record_id)) for r in records],
        # not part of the release's schema (its loader ignores it); what the file is, for a person
        "exec_validation_runtime": {"arm": key.label, "mode": key.mode, "strategy": key.strategy,
                                    "tested_model": key.model, "saw_supervision": key.saw_supervision,
                                    "leaderboard": ("not eligible: " + LEADERBOARD_RULE) if key.saw_supervision
                                    else "eligible as a custom submission (all base tasks, >= 4 trials)"},
    }


def export(folder: Folder, out: Path, arms: Optional[Callable[[ArmKey], bool]] = None,
           defs_of: Callable[[str, list[str], dict[str, set[str]]], TaskDefs] = definitions,
           rewards: Optional[dict[str, dict]] = None, suffix: str = "") -> Export:
    """Write one results file per arm of ``folder`` (those ``arms`` accepts: by default every arm
    but those whose critic saw the supervision, named as left out) under ``out``."""
    done = Export(left_out=list(folder.left_out))
    groups = {k: v for k, v in folder.arms().items() if arms is None or arms(k)}
    if arms is None:
        for k in [k for k in groups if k.saw_supervision and k.env in ENVS]:
            done.leave_out(f"{k.env}/{k.domain}/{k.label}: its critic saw the hidden supervision, so it is "
                           f"not written as a τ-bench results file ({LEADERBOARD_RULE}); write it for "
                           f"viewing with --arm {k.label}")
            del groups[k]
    other = sorted({k.env for k in groups if k.env not in ENVS})
    if other:
        n = sum(len(v) for k, v in groups.items() if k.env not in ENVS)
        done.leave_out(f"{n} episode(s) of {', '.join(other)}: not a τ-bench environment (export them "
                       "with --export inspect)")
    wanted: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for k, records in groups.items():
        if k.env in ENVS:
            for r in records:
                wanted[k.env][k.domain].add(r.key.task_id)
    defs = {env: defs_of(env, sorted(domains), domains) for env, domains in wanted.items()}
    for k, records in groups.items():
        if k.env not in ENVS:
            continue
        bad = errored(records)
        whole = [r for r in records if r not in bad]
        if bad:
            done.leave_out(f"{k.env}/{k.domain}/{k.label}: {len(bad)} errored episode(s) (no scored conversation): "
                           + ", ".join(f"task {r.key.task_id} trial {r.key.trial}" for r in bad[:5])
                           + (", …" if len(bad) > 5 else ""))
        if not whole:
            continue
        domain_defs = defs[k.env].get(k.domain) or {"missing": "not read"}
        if "missing" in domain_defs:
            done.leave_out(f"{k.env}/{k.domain}: the task definitions ({domain_defs['missing']}); the file "
                           "shows the conversations but `tau2 evaluate-trajs` cannot re-score it")
        else:
            have = {t.get("id") for t in domain_defs.get("tasks", [])}
            if lost := sorted({r.key.task_id for r in whole} - have):
                done.leave_out(f"{k.env}/{k.domain}: no task definition for task(s) {', '.join(lost[:5])}")
        settings = next((s for r in whole if (s := folder.settings_of(r))), {})
        if not settings:
            done.leave_out(f"{k.env}/{k.domain}/{k.label}: the run's settings (models, seed, max steps) are "
                           "unknown; info holds the tested model only")
        data = results(k, whole, settings, domain_defs, rewards)
        judged = _with_nl_assertions(data)
        if judged:
            tasks = sorted({s["task_id"] for s in judged}, key=lambda t: (len(t), t))
            done.notes.append(f"{k.env}/{k.domain}/{k.label}: {len(judged)} episode(s) (task(s) {', '.join(tasks[:5])}"
                              f"{', …' if len(tasks) > 5 else ''}) have NL assertions: " + NL_JUDGE_NOTE)
        path = Path(out) / f"{k.file_stem()}{suffix}" / RESULTS
        done.written.append(write_json_file(path, json.dumps(data, indent=1, ensure_ascii=False)))
    return done
