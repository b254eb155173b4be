"""Bad input refused before the heavy imports, from what an earlier command learnt.

Building a run imports litellm, LangGraph and the benchmark (seconds) before it can say that an
API key is missing or a domain, split or task id does not exist. What those libraries answered
an earlier command is remembered (``runtime.llm.credentials``: the key names a model lacked;
``envs.catalogue``: the benchmark's domains, splits and task ids, keyed by its installed
version), so the commands call :func:`refuse_early` first and a bad input costs a fraction of a
second. It only refuses, with the line the full check gives; whatever it cannot decide (nothing
remembered, a key set since) goes on to :func:`runtime.compose.build.build_run`, which checks
everything. Given two bad inputs at once, the two may name different ones first.

The task choice itself (the domain a run defaults to, the embedded run's task count, the
"more tasks than the split has" line) is decided here once, for both.
"""

from __future__ import annotations

from envs.base import TaskSelection, UnknownTaskError
from envs.catalogue import Catalogue, unknown_domain
from envs.registry import ENVIRONMENTS, EnvSpec, remembered_catalogue
from runtime.compose.config import EMBEDDED_DEFAULTS, EMBEDDED_MODEL, RunConfig, UsageError
from runtime.llm import credentials
from runtime.llm.roles import ROLES, any_configured, endpoint, resolve


def is_embedded(config: RunConfig) -> bool:
    """No role has a model of its own: every role uses the embedded offline model."""
    return not any_configured({role: getattr(config, role) for role in ROLES})


def task_selection(config: RunConfig, env_spec: EnvSpec, embedded: bool) -> TaskSelection:
    """The tasks the settings ask for: the domain (given, else the embedded run's, else the
    benchmark's default), explicit ids or a seeded sample, the split."""
    domain = config.domain or (env_spec.embedded_domain if embedded else None) or env_spec.default_domain
    count, ids = config.task_count_or_ids()
    if count is None and ids is None and embedded:
        count = EMBEDDED_DEFAULTS["tasks"]
    return TaskSelection(domain=domain, split=config.split, ids=ids, count=count, seed=config.seed)


def check_count(config: RunConfig, selection: TaskSelection, found: int) -> None:
    """``--tasks N`` asks for no more tasks than the split has."""
    if selection.count is not None and selection.count > found:
        raise UsageError(f"--tasks {selection.count}: {config.env}'s {selection.domain} domain has "
                         f"{found} tasks in split {config.split or 'default'}; give at most {found}")


def refuse_early(config: RunConfig) -> None:
    """Raise ``UsageError`` for a bad input an earlier command's answers already show."""
    models = resolve({role: getattr(config, role) for role in ROLES}, EMBEDDED_MODEL)
    for role in ROLES:
        api_base = endpoint(role, config.api_base, config.critic_api_base, config.user_api_base)
        if credentials.needs_check(models[role], api_base):
            missing = credentials.still_missing(models[role])
            if missing:
                raise UsageError(credentials.missing_message(models[role], missing))
    check_retrieval(config)
    catalogue = remembered_catalogue(config.env)
    if catalogue is not None:
        check_tasks(config, ENVIRONMENTS[config.env], catalogue, is_embedded(config))


def check_retrieval(config: RunConfig) -> None:
    """``--retrieval`` names a configuration this runtime runs for the run's domain (an offline
    one, or a dense one with an embeddings endpoint configured): a dry run says so too, rather
    than pricing a run that would be refused."""
    if config.retrieval is None or config.env not in ENVIRONMENTS:
        return
    from envs.tau3.retrieval import check

    domain = task_selection(config, ENVIRONMENTS[config.env], is_embedded(config)).domain
    configured = config.embeddings_api_base is not None or config.embeddings_model is not None
    try:
        check(config.retrieval, domain, embeddings=configured)
    except UnknownTaskError as exc:
        raise UsageError(str(exc)) from exc


def check_tasks(config: RunConfig, env_spec: EnvSpec, catalogue: Catalogue, embedded: bool) -> None:
    selection = task_selection(config, env_spec, embedded)
    if selection.domain not in catalogue.domains:
        raise UsageError(str(unknown_domain(config.env, selection.domain, catalogue.domains)))
    if not catalogue.knows(selection.domain):
        return
    try:
        found = catalogue.select(selection)
    except UnknownTaskError as exc:
        raise UsageError(str(exc)) from exc
    check_count(config, selection, len(found))
