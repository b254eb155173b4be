"""Run settings, from a YAML config and the command line, validated by pydantic.

Every CLI option is a field here, so anything that can be typed can be kept in a config file;
an unknown key or a bad value fails with the key's name and what is accepted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from envs.registry import SANDBOXES, names
from runtime.records import MODES

ENV_NAMES = names()


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

EMBEDDED_STAGE_MAX_TOKENS = {"user": 64, "executor": 128, "judge": 128, "critic": 160,
                             "self-critic": 160, "planner": 256, "reviser": 256}
"""Answer budgets per stage on the embedded model (unless ``--max-tokens`` is given). Generating
is where its time goes (about 20 tokens a second), and SmolLM2 rarely stops on its own: it
fills whatever budget it gets. A user turn or a tool call needs a sentence; a plan, a few."""


class RunSettings(BaseModel):
    """The settings every run shares, whichever command makes it (``validate``, ``ablate``, each
    cell of ``table3``): models and endpoints, sampling, trials, concurrency, limits, where env
    servers run, caching and the critique strategy. Each command's config embeds them."""

    model_config = ConfigDict(extra="forbid")

    trials: int = Field(default=1, ge=1)
    seed: int = 0
    critic_model: str | None = None
    judge_model: str | None = None
    user_model: str | None = None
    api_base: str | None = None
    critic_api_base: str | None = None
    user_api_base: str | None = None
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    concurrency: int = Field(default=4, ge=1, le=256)
    max_steps: int | None = Field(default=None, ge=2, description="τ² step limit; default 100 "
                                  "(20 on the embedded model, to keep the offline run short).")
    cache_dir: Path | None = None
    strategy: str = Field(default="anti-leak", description="Critique strategy used by refine.")
    no_judge: bool | None = Field(default=None, description="Skip the plan judge of p0 and p1 "
                                  "(default: judge, except on the embedded model).")
    sandbox: Literal[SANDBOXES] = Field(  # type: ignore[valid-type]
        default="inproc",
        description="Where env servers run: inproc (no container), docker (containers; exit 2 "
        "without an engine), auto (containers if an engine is reachable, else inproc).",
    )

    def shared(self) -> dict[str, Any]:
        """The shared settings alone, to hand on to a run."""
        return {name: getattr(self, name) for name in RunSettings.model_fields}

    @field_validator("strategy")
    @classmethod
    def _known_strategy(cls, value: str) -> str:
        from critique.strategies import STRATEGIES

        if value not in STRATEGIES:
            raise ValueError(f"unknown critique strategy; accepted: {', '.join(STRATEGIES)}")
        return value


class RunConfig(RunSettings):
    """One run: the shared settings plus what picks its environment, modes, tasks and model."""

    env: Literal[ENV_NAMES] = "tau2"  # type: ignore[valid-type]
    mode: Literal["direct", "plan-first", "refine", "all"] = "refine"
    domain: str | None = None
    split: str | None = None
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

    @field_validator("tasks", mode="before")
    @classmethod
    def _tasks_as_text(cls, value: Any) -> Any:
        if isinstance(value, list):
            return ",".join(str(v) for v in value)
        if isinstance(value, int):
            return str(value)
        return value

    @property
    def modes(self) -> list[str]:
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
            return None, self.task_ids
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
        return None, ids


def load_yaml(path: Path) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read config {path}: {exc.strerror or exc}") from exc
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise UsageError(f"config {path} is not valid YAML: {' '.join(str(exc).split())}") from exc
    if not isinstance(data, dict):
        raise UsageError(f"config {path} must be a mapping of option names to values")
    return {k.replace("-", "_"): v for k, v in data.items()}


def build(file_values: dict[str, Any], cli_values: dict[str, Any], source: str = "config") -> RunConfig:
    merged = {**file_values, **{k: v for k, v in cli_values.items() if v is not None}}
    try:
        return RunConfig.model_validate(merged)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        value = err.get("input")
        shown = "" if isinstance(value, dict) else f" = {value!r}"
        raise UsageError(f"{source}: {where}{shown}: {err['msg']}") from exc
