"""The composition root: validated settings in, a ready-to-run run out (its ``RunSpec``, the
services its episodes run on, its run folder).

Every command (``validate``, ``ablate``, ``table3``) builds its runs here, so every default —
the models per role, the domain, the task sample, the run id, the step limit, the cache — is
decided in one place. Nothing here calls a model; bad settings raise ``UsageError`` before any
episode starts.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from critique.sealed_options import SealedOptions
from runtime.compose import fingerprint
from runtime.compose.opening import FolderOpening, open_cache, record_changes, run_info
from runtime.compose.config import EMBEDDED_DEFAULTS, EMBEDDED_MODEL, RunConfig, UsageError
from runtime.episode.services import Services, planner_factory, register_providers
from runtime.episode.spec import RunSpec, check_size
from runtime.compose.preflight import check_count, task_selection
from runtime.llm.layer import ModelSpec
from runtime.llm.roles import EMBEDDED_STAGE_MAX_TOKENS, ROLES, any_configured, endpoint, resolve
from runtime.folder.logs import log_to, quiet_loguru
from runtime.folder.records import MODES, EpisodeKey
from runtime.folder.store import RunStore

DEFAULT_MAX_STEPS = 200
"""τ²'s own default (``tau2.config.DEFAULT_MAX_STEPS``), so Direct runs as long as ``tau2 run``."""


@dataclass
class Run:
    """One run: its episodes' settings (``spec``), what they run on in this process
    (``services``), its run folder (``store``) and the settings that made it."""

    config: RunConfig
    spec: RunSpec
    services: Services
    store: RunStore
    embedded: bool
    """True when no model was configured and every role uses the embedded offline model."""

    @property
    def out(self) -> Path:
        return self.store.root

    @property
    def specs(self) -> dict[str, ModelSpec]:
        return self.spec.models

    @property
    def keys(self) -> list[EpisodeKey]:
        return self.spec.keys()

    @property
    def models(self) -> dict[str, dict]:
        """Each role's model settings as they may be written (never a key)."""
        return {role: spec.public() for role, spec in self.specs.items()}


def build_run(config: RunConfig, say: Callable[[str], None], *, modes: list[str] | None = None,
              strategies: list[str] | None = None, run_id_prefix: str = "") -> Run:
    """Validate ``config`` and assemble its episode matrix; ``say`` prints a line for a person.

    ``modes``/``strategies`` default to the config's; ``run_id_prefix`` marks the command that
    made the run when the run id is derived (``ablate-…``).
    """
    quiet_loguru()
    from critique.strategies import resolve
    from envs import EnvError, get_environment, registry
    from envs.catalogue import unknown_domain
    from runtime.llm.guarded_cache import GuardedCache
    from runtime.llm.layer import ModelConfigError, ModelLayer, check_credentials, check_provider

    modes = modes or config.modes
    run_mode = config.mode  # the run id names the mode asked for (an ablation: refine)
    config = recorded_modes(config, modes)
    specs, embedded = model_specs(config)
    add_nl_judge(config, specs, say)
    check_priced(config, specs)
    if embedded:
        say(f"[yellow]No model configured: every role uses the embedded model {EMBEDDED_MODEL} "
            "(pass --model, e.g. --model openai/gpt-4o, to test a real one).[/]")
    max_steps = config.max_steps or (EMBEDDED_DEFAULTS["max_steps"] if embedded else DEFAULT_MAX_STEPS)
    judge = judge_on(config, embedded)
    if embedded and not judge and config.no_judge is None:
        say("Plan judge off for the embedded model (it would cost about a third of the run); "
            "--judge turns it on.")
    note = self_review_note(config, modes, strategies or [config.strategy], judge)
    if note:
        say(note)
    check_ranges(specs)
    try:
        for spec in specs.values():
            check_credentials(spec)
        register_providers(specs)
        for spec in specs.values():
            check_provider(spec)
        env_spec = registry.spec(config.env)
        selection = task_selection(config, env_spec, embedded)
        domain = selection.domain
        embeddings = embeddings_endpoint(config)
        if config.retrieval is not None:
            from envs.tau3.retrieval import check as check_retrieval

            check_retrieval(config.retrieval, domain, embeddings=embeddings is not None)
        env = get_environment(config.env, sandbox=config.sandbox, retrieval=config.retrieval,
                              embeddings=embeddings)
        if domain not in env.domains():
            raise unknown_domain(config.env, domain, env.domains())
        if embedded and config.task_count_or_ids() == (None, None):
            say(f"Default for the embedded model: {selection.count} tasks of {config.env}'s {domain} "
                f"domain, at most {max_steps} steps (set --domain, --tasks, --max-steps).")
        task_ids = env.select(selection)
        check_count(config, selection, len(task_ids))
        chosen = resolve(strategies or [config.strategy])
        make_planner = planner_factory(config.planner)
    except (EnvError, ModelConfigError, ValueError) as exc:
        raise UsageError(str(exc)) from exc

    run_id = config.run_id or run_id_prefix + default_run_id(config.env, domain, run_mode,
                                                             specs["model"].model)
    out = config.out or Path("runs") / run_id
    cache_dir = config.cache_dir or out.parent / ".cache"
    try:
        check_size(len(task_ids), config.trials, modes, len(chosen))
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    spec = RunSpec(
        run_id=run_id, env=config.env, sandbox=config.sandbox, domain=domain, task_ids=task_ids,
        modes=modes, trials=config.trials, seed=config.seed,
        seeding=config.seeding, models=specs, planner=config.planner,
        strategies=[s.name for s in chosen], max_steps=max_steps, concurrency=config.concurrency,
        judge=judge, auditor=not config.no_auditor, limits=episode_limits(config),
        sealed=SealedOptions(writer=config.sealed_writer, findings=config.sealed_findings,
                             guard=config.sealed_guard),
        env_options={k: v for k, v in (("retrieval", config.retrieval),
                                       ("embeddings_api_base", config.embeddings_api_base),
                                       ("embeddings_model", config.embeddings_model)) if v is not None},
    )
    if config.ray_address:  # before the folder is touched, whether or not work is pending
        from runtime.backends.ray_backend import ACCEPTED_ADDRESS, reachable

        reachable(config.ray_address, ACCEPTED_ADDRESS)
    identity = fingerprint.fingerprint(spec, config.env, env_object=env)
    opening = FolderOpening(out)
    try:
        store = open_folder(out, "--out", RunStore)
        opening.lock(config.wait_for_lock)  # one writer: what follows reads a settled folder
        info = run_info(out)
        changed = fingerprint.changed_settings(fingerprint.previous(out, identity["scope"]), identity)
        changed += [c for c in record_changes(store, spec, identity, info) if c not in changed]
        if changed and not config.allow_changed_settings:
            raise UsageError(f"{out} holds run {run_id} made with other settings: {'; '.join(changed)}; "
                             "give a new --out folder, or --allow-changed-settings to mix both in "
                             "this one (nothing was written)")
        spec = spec.model_copy(update={"fingerprint": identity["id"]})
        cache = None
        if not config.no_cache:
            cache = open_cache(cache_dir, config.unwritable_cache,
                               lambda d: GuardedCache(d / "responses.sqlite"), say, open_folder)
    except BaseException:
        opening.undo()
        raise
    log_to(out)
    from runtime.folder.scrub import scrub

    env.capture_logs(out / "containers", scrub=scrub)
    layer = ModelLayer(specs, cache=cache)
    if config.model_concurrency:
        from runtime.llm.limits import LocalLimiter

        layer.limiter = LocalLimiter(config.model_concurrency)
    services = Services(env=env, layer=layer, make_planner=make_planner)
    run = Run(config=config, spec=spec, services=services, store=store, embedded=embedded)
    try:
        note_invocation(run, identity, changed, task_ids)
    except BaseException:
        opening.undo()
        raise
    return run


def note_invocation(run: Run, identity: dict, changed: list[str], task_ids: list[str]) -> None:
    """Add this invocation to ``run.json``: the config, what ran, and the fingerprint."""
    config, spec = run.config, run.spec
    run.store.note_invocation({
        "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "config": config.model_dump(mode="json"),
        # What ran: a command's own choices (ablate's two modes, table3's per-cell modes, the
        # strategies of --strategies) are not in the config above.
        "modes": list(spec.modes),
        "strategies": list(spec.strategies) if "refine" in spec.modes else [],
        "models": run.models,
        "task_ids": task_ids,
        "fingerprint": identity,
        **({"allow_changed_settings": True, "changed_settings": changed} if changed else {}),
    })


def recorded_modes(config: RunConfig, modes: list[str]) -> RunConfig:
    """``config`` as it ran: its ``mode`` says the modes ``modes`` (a command's own choice, such
    as ablate's plan-first and refine or a table3 cell's) when they are not the config's."""
    if modes == config.modes:
        return config
    mode = "all" if modes == list(MODES) else modes[0] if len(modes) == 1 else list(modes)
    return config.model_copy(update={"mode": mode})


def open_folder(path: Path, option: str, make: Callable[[Path], object]):
    """``make(path)``, a folder-backed object; a path that cannot be a writable folder (a file,
    a file among its parents, a read-only or virtual file system) is a usage error."""
    from runtime.folder.store import StoreError

    try:
        return make(path)
    except StoreError as exc:  # says which file and what to do
        raise UsageError(f"{option} {path}: {exc}") from exc
    except (OSError, sqlite3.Error) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        raise UsageError(f"{option} {path}: cannot use it as a folder ({why}); give a writable "
                         "folder path") from exc


BARE_PURPOSES = ("executor", "user")
"""The purposes that stand in for a benchmark's own agent and user roles."""


def model_specs(config: RunConfig) -> tuple[dict[str, ModelSpec], bool]:
    """The model of each role, and whether all of them fell back to the embedded model."""
    from envs.registry import ENVIRONMENTS

    configured = {role: getattr(config, role) for role in ROLES}
    models = resolve(configured, EMBEDDED_MODEL)
    env_spec = ENVIRONMENTS.get(config.env)
    bare = BARE_PURPOSES if env_spec is not None and not env_spec.native_sampling else ()
    layout = env_spec.request_layout if env_spec is not None else None
    user_set = tuple(k for k in ("temperature", "seed") if k in config.model_fields_set)

    def spec(name: str, api_base: str | None) -> ModelSpec:
        max_tokens, stages = config.max_tokens, ()
        if max_tokens is None and name == EMBEDDED_MODEL:
            max_tokens = EMBEDDED_DEFAULTS["max_tokens"]
            stages = tuple(EMBEDDED_STAGE_MAX_TOKENS.items())
        price = config.prices.get(name)
        return ModelSpec(model=name, api_base=api_base, temperature=config.temperature,
                         max_tokens=max_tokens, timeout=config.request_timeout,
                         stage_max_tokens=stages, bare_purposes=bare, user_set=user_set,
                         body_order=layout, price=(price.input, price.output) if price is not None else None)

    return ({role: spec(models[role], endpoint(role, config.api_base, config.critic_api_base,
                                               config.user_api_base)) for role in ROLES},
            not any_configured(configured))


def embeddings_endpoint(config: RunConfig):
    """The embeddings endpoint τ³ banking's dense retrieval configurations need, when the run
    configured one (``--embeddings-api-base`` or ``--embeddings-model``); None otherwise."""
    if config.embeddings_api_base is None and config.embeddings_model is None:
        return None
    from envs.registry import ENVIRONMENTS
    from envs.tau3.retrieval import EMBEDDINGS

    env_spec = ENVIRONMENTS.get(config.env)
    if env_spec is None or "embeddings" not in env_spec.options or config.retrieval not in EMBEDDINGS:
        raise UsageError(f"--embeddings-api-base/--embeddings-model apply to --env tau3 with a dense "
                         f"--retrieval only ({', '.join(EMBEDDINGS)}); got --env {config.env} "
                         f"--retrieval {config.retrieval}")
    from runtime.llm.embeddings import EmbeddingsEndpoint

    return EmbeddingsEndpoint(config.embeddings_api_base, config.embeddings_model, config.request_timeout)


def add_nl_judge(config: RunConfig, specs: dict[str, ModelSpec], say: Callable[[str], None]) -> None:
    """The model answering the environment's own LLM judge (τ³'s NL assertions), added to
    ``specs`` as ``nl_judge_model`` when the environment has one and it can be reached: τ³'s
    model (gpt-4.1) at its provider by default, as the release runs it; a model named with
    ``--nl-judge-model`` on the judge's endpoint. One line says when it stays ungraded."""
    from envs.registry import ENVIRONMENTS
    from runtime.llm.layer import ModelConfigError, check_credentials, check_provider

    named = config.nl_judge_model
    env_spec = ENVIRONMENTS.get(config.env)
    if env_spec is None or env_spec.nl_judge is None:
        if named is not None and named.lower() != "none":
            raise UsageError(f"--nl-judge-model {named}: --env {config.env} grades with no LLM "
                             "judge of its own; only --env tau3 does (NL assertions)")
        return
    if named is not None and named.lower() == "none":
        say("NL assertions ungraded (--nl-judge-model none): scores leave NL_ASSERTION out and say so.")
        return
    model = named or env_spec.nl_judge
    price = config.prices.get(model)
    spec = ModelSpec(model=model, api_base=specs["judge_model"].api_base if named else None,
                     temperature=0.0, timeout=config.request_timeout, body_order=env_spec.request_layout,
                     price=(price.input, price.output) if price is not None else None)
    try:
        check_credentials(spec)
        check_provider(spec)
    except ModelConfigError as exc:
        if named:
            raise UsageError(f"--nl-judge-model {model}: {exc}") from exc
        say(f"NL assertions ungraded: {config.env}'s judge model {model} cannot be reached ({exc}); "
            "set its key, or name one with --nl-judge-model (none: ungraded on purpose).")
        return
    specs["nl_judge_model"] = spec


def check_priced(config: RunConfig, specs: dict[str, ModelSpec]) -> None:
    """A cost limit needs every role priced: an unpriced model's calls count as $0, so the run
    could spend without bound under it."""
    if config.max_cost is None:
        return
    from runtime.llm.prices import unpriced_roles

    unpriced = unpriced_roles({role: s.model for role, s in specs.items()}, config.prices)
    if unpriced:
        models = sorted(set(unpriced.values()))
        roles = ", ".join(f"{role} = {model}" for role, model in unpriced.items())
        raise UsageError(f"--max-cost {config.max_cost:g}: no price known for {roles}; give one "
                         f"with --price {models[0]}=IN/OUT (USD per million tokens; =0/0 if it is "
                         "free) or prices: in the config")


def check_ranges(specs: dict[str, ModelSpec]) -> None:
    """Each role's temperature and answer budget within its provider's documented range
    (``runtime.llm.param_ranges``), before anything starts."""
    from runtime.llm.param_ranges import range_problems

    for role, spec in specs.items():
        problems = range_problems(spec.model, temperature=spec.temperature, max_tokens=spec.max_tokens)
        if problems:
            raise UsageError(f"--{role.replace('_', '-')} {spec.model}: {'; '.join(problems)}; "
                             "give --temperature / --max-tokens within it (nothing was written)")


def episode_limits(config: RunConfig):
    from runtime.episode.limits import EpisodeLimits

    return EpisodeLimits(max_tokens=config.episode_max_tokens, max_cost=config.episode_max_cost,
                         timeout_s=config.episode_timeout)


def self_review_note(config: RunConfig, modes: list[str], strategies: list[str],
                     judge: bool = True) -> str | None:
    """One line when the tested model critiques or judges its own plan (no --critic-model /
    --judge-model): the paper used a separate, stronger critic."""
    from critique.strategies import STRATEGIES

    roles = []
    uses_critic = any(STRATEGIES[s].critic_role == "critic_model" for s in strategies if s in STRATEGIES)
    if "refine" in modes and uses_critic and not config.critic_model:
        roles.append("critiquing")
    if set(modes) - {"direct"} and judge and not (config.judge_model or config.critic_model):
        roles.append("judging")
    if not roles:
        return None
    return (f"No {'/'.join(r for r, on in (('--critic-model', 'critiquing' in roles), ('--judge-model', True)) if on)}"
            f" given: the tested model is {' and '.join(roles)} its own plan "
            "(the paper used a separate, stronger critic).")


def judge_on(config: RunConfig, embedded: bool) -> bool:
    """Whether the plan judge runs: as told (``--judge``/``--no-judge``), else on except for the
    embedded model, where it would cost about a third of the run."""
    if config.no_judge is not None:
        return not config.no_judge
    return EMBEDDED_DEFAULTS["judge"] if embedded else True


def default_run_id(env: str, domain: str, mode: str | list[str], model: str) -> str:
    mode = mode if isinstance(mode, str) else "-".join(mode)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-")
    return f"{env}-{domain}-{mode}-{slug}"
