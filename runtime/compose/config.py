"""Run settings, from a YAML config and the command line, validated by pydantic.

Every CLI option is a field here, so anything that can be typed can be kept in a config file;
an unknown key or a bad value fails with the key's name and what is accepted.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from critique.sealed_options import DEFAULT_FINDINGS, MAX_FINDINGS
from envs.registry import SANDBOXES, names
from runtime.llm.prices import Price, parse_option
from runtime.folder.records import MODES

ENV_NAMES = names()
RUN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")


class UsageError(ValueError):
    """Bad input from the user: the CLI prints it on one line and exits with code 2."""


EMBEDDED_MODEL = "local/smollm2-135m"
"""The offline default every role falls back to when no model is configured."""

EMBEDDED_DEFAULTS = {"domain": "mock", "tasks": 2, "max_steps": 20, "max_tokens": 256, "judge": False}
"""What the offline default run uses unless told otherwise. A 135M model on 2 cores reads about
80 prompt tokens a second, so τ²'s small ``mock`` domain (a policy of a few hundred tokens)
keeps the whole run to minutes where airline's 5,000-token policy would take most of an hour.
The plan judge is off (``--judge`` turns it on): its prompts carry the whole supervision and
cost about a third of the run (``bench/RESULTS.md``)."""

RAY_FIXED_PORTS = ("--port", "--node-manager-port", "--object-manager-port",
                   "--runtime-env-agent-port", "--dashboard-agent-grpc-port",
                   "--dashboard-agent-listen-port", "--metrics-export-port")
"""The local Ray head's servers, on the first ports of ``ray_port_range`` (workers take the rest
after a gap of three: ``runtime.backends.ray_ports``)."""
RAY_PORTS_AT_LEAST = len(RAY_FIXED_PORTS) + 3 + 16


def parse_port_range(text: str) -> tuple[int, int]:
    """``"LOW-HIGH"`` → (LOW, HIGH); ``ValueError`` saying what is accepted."""
    accepted = (f"give LOW-HIGH with 1024 <= LOW, HIGH <= 65535 and at least "
                f"{RAY_PORTS_AT_LEAST} ports, e.g. 20000-20099")
    low, sep, high = str(text).partition("-")
    if not sep or not low.strip().isdigit() or not high.strip().isdigit():
        raise ValueError(f"{text!r} is not a port range; {accepted}")
    lo, hi = int(low), int(high)
    if not (1024 <= lo < hi <= 65535) or hi - lo + 1 < RAY_PORTS_AT_LEAST:
        raise ValueError(f"{text!r} is not a usable port range; {accepted}")
    return lo, hi


class RunSettings(BaseModel):
    """The settings every run shares, whichever command makes it (``validate``, ``ablate``, each
    cell of ``table3``): models and endpoints, sampling, trials, concurrency, limits, where env
    servers run, caching and the critique strategy. Each command's config embeds them."""

    model_config = ConfigDict(extra="forbid")

    trials: int = Field(default=1, ge=1, le=1000)
    seed: int = 0
    seeding: Literal["runtime", "tau2"] = Field(default="runtime", description="How each trial's "
        "sampling seed derives from the seed: the runtime's own, or tau2 run's (same --seed, "
        "same requests: 300 sends 626729 in the first trial).")
    critic_model: str | None = None
    judge_model: str | None = None
    auditor_model: str | None = Field(default=None, description="Leak auditor model (default: the judge's).")
    user_model: str | None = None
    nl_judge_model: str | None = Field(default=None, description="The model answering the "
        "benchmark's own LLM judge (τ³'s NL assertions), on the judge's endpoint; default the "
        "benchmark's (gpt-4.1-2025-04-14); 'none': leave them ungraded.")
    api_base: str | None = None
    critic_api_base: str | None = None
    user_api_base: str | None = None
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    concurrency: int = Field(default=4, ge=1, le=256)
    max_steps: int | None = Field(default=None, ge=2, description="τ² step limit; default 200 (τ²'s own) "
                                  "(20 on the embedded model, to keep the offline run short).")
    cache_dir: Path | None = None
    strategy: str = Field(default="anti-leak", description="Critique strategy used by refine.")
    no_judge: bool | None = Field(default=None, description="Skip the plan judge of p0 and p1 "
                                  "(default: judge, except on the embedded model).")
    no_auditor: bool = Field(default=False, description="Guard critiques with the rules alone (no leak auditor).")
    sealed_writer: Literal["rendered", "tested"] = Field(
        default="rendered", description="Who words a sealed critique: rendered (no model: the "
        "closed answer in words, the default) or tested (the tested model's own model). Never the "
        "critic's model.")
    sealed_findings: int = Field(default=DEFAULT_FINDINGS, ge=0, le=MAX_FINDINGS, description=
                                 "At most this many findings per sealed critique (0..6).")
    sealed_guard: Literal["measure", "replace"] = Field(
        default="measure", description="On a sealed arm the guard and auditor measure only; "
        "replace: where they fire, the whole rationale becomes the rendering (1 bit more).")
    request_timeout: float = Field(default=300.0, gt=0, le=3600,
                                   description="Seconds one model request may take.")
    max_error_rate: float | None = Field(
        default=None, ge=0.0, le=1.0,
        description="Exit with code 3 when the share of errored episodes is above this; by "
        "default only when every episode errored.")
    sandbox: Literal[SANDBOXES] = Field(  # type: ignore[valid-type]
        default="inproc",
        description="Where env servers run: inproc (no container), docker (containers; exit 2 "
        "without an engine), auto (containers if an engine is reachable, else inproc).",
    )

    backend: Literal["threads", "ray"] = Field(
        default="threads",
        description="What runs the episodes: threads in this process, or Ray workers (local "
        "or a cluster; see ray_address).",
    )
    ray_address: str | None = Field(
        default=None, description="Ray cluster to join ('auto' or host:port); default: start a "
        "local Ray instance with ray_workers workers.")
    ray_workers: int | None = Field(
        default=None, ge=1, le=1024, description="Ray episode workers (one process each); "
        "default: one per CPU of the Ray instance.")
    ray_port_range: str | None = Field(
        default=None, description="With a local Ray instance: every port it listens on in "
        "LOW-HIGH (at least 26 ports), e.g. 20000-20099, for a firewall rule to name; default: "
        "ports Ray picks.")
    allow_changed_settings: bool = Field(
        default=False, description="Resume a run folder even though settings that change "
        "episodes (models, endpoints, temperature, seed, step limit, strategies, planner, ...) "
        "differ from its earlier invocations; the mix is recorded in run.json.")
    ray_placement_timeout: float = Field(
        default=120.0, gt=0, le=86400, description="Seconds a Ray worker may stay unplaced (at "
        "the start, or after its node was lost) before the run stops with exit 3 (resumable).")
    model_concurrency: int | None = Field(
        default=None, ge=1, le=4096, description="At most this many model calls in flight per "
        "provider (endpoint), across every thread and every Ray worker of the run.")

    max_cost: float | None = Field(
        default=None, gt=0, description="USD the run folder may spend in all: no new episode "
        "starts once spent cost plus the in-flight episodes' estimate would pass it (exit 4; the "
        "same command with a higher limit resumes).")
    episode_max_tokens: int | None = Field(
        default=None, ge=1, description="Tokens (prompt + completion) one episode may use; "
        "past it the episode ends unfinished (termination limit:tokens).")
    episode_max_cost: float | None = Field(
        default=None, gt=0, description="USD one episode may spend; past it the episode ends "
        "unfinished (termination limit:cost).")
    episode_timeout: float | None = Field(
        default=None, gt=0, description="Seconds one episode may run; past it the episode ends "
        "unfinished (termination limit:time).")
    prices: dict[str, Price] = Field(
        default_factory=dict, description="USD per million tokens by model, 'IN/OUT' or "
        "{input, output}, for models litellm does not price (0/0: free).")
    no_report: bool = Field(default=False, description="Do not write the report and episode "
                            "explorer at the end of the run.")
    wait_for_lock: float | None = Field(
        default=None, ge=0, description="Seconds to wait for another run writing the same run "
        "folder to end (default: refuse at once, exit 2; runtime.folder.lock).")
    unwritable_cache: Literal["refuse", "off"] = Field(
        default="refuse", description="A response cache that cannot be written: refuse the run "
        "before the first episode (default), or run without a cache after one warning.")

    @field_validator("prices", mode="before")
    @classmethod
    def _prices(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        return {str(model): Price.parse(price) for model, price in value.items()}

    def shared(self) -> dict[str, Any]:
        """The shared settings alone, to hand on to a run."""
        return {name: getattr(self, name) for name in RunSettings.model_fields}

    @field_validator("critic_model", "judge_model", "user_model", "nl_judge_model", "api_base",
                     "critic_api_base", "user_api_base")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be empty; leave the option out to use the default")
        return value

    @field_validator("ray_port_range")
    @classmethod
    def _a_port_range(cls, value: str | None) -> str | None:
        if value is not None:
            parse_port_range(value)
        return value

    @field_validator("api_base", "critic_api_base", "user_api_base", "embeddings_api_base",
                     check_fields=False)
    @classmethod
    def _a_url(cls, value: str | None) -> str | None:
        from urllib.parse import urlsplit

        if value is None:
            return value
        try:
            parts = urlsplit(value.strip())
            parts.port  # noqa: B018 - raises on a port that is not a number
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("not an http(s) URL; give the endpoint's URL, e.g. "
                             "http://localhost:8000/v1")
        return value

    @field_validator("strategy")
    @classmethod
    def _known_strategy(cls, value: str) -> str:
        from critique.strategies import STRATEGIES

        if value not in STRATEGIES:
            raise ValueError(f"unknown critique strategy; accepted: {', '.join(STRATEGIES)}")
        return value


Mode = Literal["direct", "plan-first", "refine", "plan-first-aa"]


class RunConfig(RunSettings):
    """One run: the shared settings plus what picks its environment, modes, tasks and model."""

    env: Literal[ENV_NAMES] = "tau2"  # type: ignore[valid-type]
    mode: Literal["direct", "plan-first", "refine", "plan-first-aa", "all"] | list[Mode] = Field(
        default="refine", description="One mode, all three, or a list of modes (as a command "
        "records what ran: an ablation's plan-first and refine, a table3 cell's modes).")
    domain: str | None = None
    split: str | None = None
    retrieval: str | None = Field(
        default=None, description="τ³ banking_knowledge's retrieval configuration (an offline "
        "one: bm25, bm25_grep, full_kb, golden_retrieval, grep_only, no_knowledge; default bm25).")
    embeddings_api_base: str | None = Field(
        default=None, description="An embeddings endpoint for τ³ banking's dense retrieval "
        "configurations (openai_embeddings*, qwen_embeddings*, alltools*), reached through "
        "litellm; its key from the environment only.")
    embeddings_model: str | None = Field(
        default=None, description="The litellm embeddings model for them (default: the "
        "release's, e.g. openai/text-embedding-3-large); alone, it configures the endpoint too.")
    tasks: str | None = Field(
        default=None,
        description="A count (a seeded sample of the split), or comma-separated task ids. τ² ids "
        "are often numbers: '7' is a count, '7,' is the task with id 7.",
    )
    task_ids: list[str] | None = Field(default=None, description="Task ids, unambiguously.")
    model: str | None = None
    out: Path | None = None
    run_id: str | None = None
    no_cache: bool = False
    retry_errors: bool = False
    planner: str = Field(default="llm", description="A planner name or 'package.module:Class'.")
    until_decided: bool = Field(default=False, description="Run in waves of one trial of every "
        "task and mode until an anytime-valid confidence sequence decides each planned comparison "
        "(runtime.reports.decision), or max_trials, or max_cost.")
    max_trials: int | None = Field(default=None, ge=1, le=1000, description="With until_decided: "
        "the most waves (trials per task and mode); default 40.")
    decision_alpha: float | None = Field(default=None, gt=0, lt=1, description="With until_decided: "
        "the error rate this run's decisions share (default 0.05; table3 splits 0.05 across its cells).")
    planned_looks: int | None = Field(default=None, ge=1, le=1000, description="With until_decided: "
        "the last wave an alpha-spending boundary is planned for (set from max_trials when it is "
        "given; none: a time-uniform sequence).")
    margin: float | None = Field(default=None, gt=0, lt=1, description="With until_decided: the "
        "smallest effect of interest; an interval inside ±margin decides 'no effect of interest' "
        "(default 0.03, the APB paper's lower τ²-bench figure).")

    @field_validator("model")
    @classmethod
    def _model_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be empty; give a litellm model name, or leave --model out "
                             "to use the embedded model")
        return value

    @field_validator("run_id")
    @classmethod
    def _run_id_is_a_name(cls, value: str | None) -> str | None:
        if value is not None and not RUN_ID.fullmatch(value):
            raise ValueError("a run id is a folder name inside the runs folder: letters, digits, "
                             "'.', '_' and '-', not starting with '.' or '-'")
        return value

    @field_validator("tasks", mode="before")
    @classmethod
    def _tasks_as_text(cls, value: Any) -> Any:
        if isinstance(value, list):
            return ",".join(str(v) for v in value)
        if isinstance(value, int):
            return str(value)
        return value

    @field_validator("mode", mode="before")
    @classmethod
    def _modes_as_list(cls, value: Any) -> Any:
        if isinstance(value, str) and "," in value:
            return [m.strip() for m in value.split(",") if m.strip()]
        return value

    @field_validator("mode")
    @classmethod
    def _some_mode(cls, value: Any) -> Any:
        if isinstance(value, list) and (not value or len(set(value)) < len(value)):
            raise ValueError("give each mode once, and at least one")
        return value

    @property
    def modes(self) -> list[str]:
        if isinstance(self.mode, list):
            return list(self.mode)
        return list(MODES) if self.mode == "all" else [self.mode]

    @field_validator("task_ids", mode="before")
    @classmethod
    def _ids_as_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, list):
            return [str(v) for v in value]
        return value

    def task_count_or_ids(self) -> tuple[int | None, list[str] | None]:
        if self.task_ids is not None:
            if self.tasks is not None:
                raise UsageError("give either --tasks or --task-ids, not both")
            if not self.task_ids:
                raise UsageError("--task-ids is empty; give comma-separated task ids")
            return None, once("--task-ids", self.task_ids)
        if self.tasks is None:
            return None, None
        text = self.tasks.strip()
        if text.isdigit():
            if int(text) < 1:
                raise UsageError(f"--tasks {text}: a count must be at least 1")
            return int(text), None
        ids = [t.strip() for t in text.split(",") if t.strip()]
        if not ids:
            raise UsageError(f"--tasks {self.tasks!r}: give a count or comma-separated task ids")
        return None, once("--tasks", ids)


def once(option: str, ids: list[str]) -> list[str]:
    """``ids`` when each is given once. A task given twice would run the same episode (one
    record id) again and pay for it again: refused; ``--trials`` runs a task more than once."""
    repeated = sorted({i for i in ids if ids.count(i) > 1}, key=ids.index)
    if repeated:
        from envs.catalogue import shown

        said = ", ".join(f"{shown(i)} ({ids.count(i)} times)" for i in repeated)
        raise UsageError(f"{option} {shown(','.join(ids))}: task {said} given more than once; give each "
                         "task once (--trials N runs each task N times; nothing was run)")
    return ids


def load_yaml(path: Path) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read config {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise UsageError(f"config {path} is not UTF-8 text (byte {exc.start}); save it as UTF-8 "
                         "YAML") from exc
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise UsageError(f"config {path} is not valid YAML: {' '.join(str(exc).split())}") from exc
    if not isinstance(data, dict):
        raise UsageError(f"config {path} must be a mapping of option names to values")
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise UsageError(f"config {path}: key {bad[0]!r} is not an option name; keys are option "
                         "names such as env, domain, model")
    return {k.replace("-", "_"): v for k, v in data.items()}


def with_price_options(values: dict[str, Any], options: list[str] | None) -> dict[str, Any]:
    """``values`` with each ``--price MODEL=IN/OUT`` added to (and overriding) its ``prices``."""
    if not options:
        return values
    prices = dict(values.get("prices") or {})
    for text in options:
        try:
            model, price = parse_option(text)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        prices[model] = price
    return {**values, "prices": prices}


def build(file_values: dict[str, Any], cli_values: dict[str, Any], source: str = "config") -> RunConfig:
    cli_values = dict(cli_values)
    file_values = with_price_options(file_values, cli_values.pop("price", None))
    merged = {**file_values, **{k: v for k, v in cli_values.items() if v is not None}}
    try:
        return RunConfig.model_validate(merged)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        value = err.get("input")
        shown = "" if isinstance(value, dict) else f" = {value!r}"
        raise UsageError(f"{source}: {where}{shown}: {err['msg']}") from exc
