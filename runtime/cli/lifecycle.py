"""What every command does around its runs: bad input → one line and exit 2; a progress bar;
Ctrl-C → environments closed (containers removed), a line saying how to resume, exit 130; the
end-of-run summary. ``validate``, ``ablate`` and ``table3`` share it so they cannot drift.

Exit codes: 0 done; 2 bad input, a missing key or rejected credentials; 3 the run stopped on an
endpoint that stays unreachable, a Ray worker that cannot be placed or a lost Ray head node
(resumable), or finished with more errored episodes than
``--max-error-rate`` allows; 4 the run stopped at its ``--max-cost`` (resumable); 5 a file of
the run folder or its cache could not be written (disk full, a file-size limit, a read-only
file system: nothing partial is left, the same command resumes once there is room); 130
interrupted (SIGINT, Ctrl-C); 143 terminated (SIGTERM). Everything printed passes ``runtime.folder.scrub``; text that is not ours (error messages,
task ids) is markup-escaped before rich prints it.
"""

from __future__ import annotations

import itertools
import sys
from typing import TYPE_CHECKING, Callable, Sequence

from rich.markup import escape

from envs.base import EnvError
from runtime.compose.config import UsageError
from runtime.cli import signals
from runtime.folder.durable import WRITE_FAILED, WriteFailed
from runtime.folder.scrub import protect_console, scrub

if TYPE_CHECKING:  # the parts that run episodes are imported when a run starts, not to parse
    from rich.console import Console

    from runtime.compose.build import Run
    from runtime.folder.records import EpisodeRecord

TOO_MANY_ERRORS = 3
_said: set[str] = set()
"""Folder warnings already printed by this process."""

EMBEDDED_NOTE = (
    "The embedded 135M model exists to prove the pipeline offline; expect near-zero rewards. "
    "Real results need a real model."
)
INTERRUPTED = "interrupted: finished records are saved; run the same command again to resume"


def guarded(body: Callable[[], int]) -> int:
    """Run a command's body: bad input (a ``UsageError``, or an ``EnvError`` such as an unknown
    domain or an environment that is not set up) becomes ``error: …`` on stderr and exit 2;
    Ctrl-C before the runs start (while the environment starts: a container importing τ²) ends
    like Ctrl-C during them, one line and exit 130 (started containers go at exit). Its stdout
    and stderr are scrubbed of secrets first."""
    protect_console()
    signals.install()
    try:
        return body()
    except (UsageError, EnvError) as exc:
        print(f"error: {scrub(str(exc))}", file=sys.stderr)
        return 2
    except WriteFailed as exc:
        return write_failed(exc)
    except KeyboardInterrupt as exc:
        return interrupted(exc)


def interrupted(exc: KeyboardInterrupt) -> int:
    """One line for Ctrl-C (exit 130) or SIGTERM (exit 143)."""
    print(INTERRUPTED.replace("interrupted", signals.word(exc), 1), file=sys.stderr)
    return signals.exit_code(exc)


def execute(runs: Sequence[Run], console: Console, finish: Callable[[], int],
            run_one: Callable[[Run, Console], None] | None = None) -> int:
    """Run every pending episode of ``runs`` in order (``run_one``: how one run's episodes run,
    by default all at once; ``runtime.cli.waves``: in waves until decided), then ``finish()``
    (summaries, reports).

    On Ctrl-C the environments are closed at once, so in-flight episodes stop instead of
    finishing in containers nobody waits for; what finished is already on disk.
    """
    from runtime.batch import BUDGET_SPENT, BudgetSpent, RunStopped

    try:
        for run in runs:
            (run_one or run_with_progress)(run, console)
        return finish()
    except BudgetSpent as exc:
        close_environments(runs)
        finish()  # the summary and report of what finished
        print(f"stopped: {scrub(exc.describe())}", file=sys.stderr)
        return BUDGET_SPENT
    except RunStopped as exc:
        with signals.held():
            close_environments(runs)
            save_summaries(runs)
        print(f"error: run stopped: {scrub(str(exc))}; finished records are saved, and the same "
              "command resumes once this is fixed", file=sys.stderr)
        return 2 if exc.cause.credentials else TOO_MANY_ERRORS
    except WriteFailed as exc:
        with signals.held():
            close_environments(runs)
            save_summaries(runs)
        return write_failed(exc)
    except KeyboardInterrupt as exc:
        with signals.held():
            close_environments(runs)
            save_summaries(runs)  # summary.json true to the records, not stale until a resume
            return interrupted(exc)
    finally:
        close_environments(runs)
        release_folders(runs)


def write_failed(exc: WriteFailed) -> int:
    print(f"error: {scrub(str(exc))}; finished records are saved (nothing partial was left); "
          f"{exc.remedy} and the same command resumes", file=sys.stderr)
    return WRITE_FAILED


def release_folders(runs: Sequence[Run]) -> None:
    """Let go of each run folder's writer lock (``runtime.folder.lock``)."""
    from runtime.folder import lock

    for run in runs:
        lock.release(run.out)


def close_environments(runs: Sequence[Run]) -> None:
    for env in {id(r.services.env): r.services.env for r in runs}.values():
        try:
            env.close()
        except Exception as exc:  # noqa: BLE001 - closing the rest matters more than this one
            print(f"warning: closing {env.name}: {exc}", file=sys.stderr)


def run_with_progress(run: Run, console: Console) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from runtime import backends
    from runtime.batch import pending
    from runtime.batch.budget import cost_of
    from runtime.folder import call_ledger, lost_attempts
    from runtime.llm.roles import PURPOSES

    store, keys = run.store, run.keys
    todo, _ = pending(run.spec, store, run.config.retry_errors)
    if note := store.skipped_note():
        console.print(f"[yellow]warning: {escape(note)}; their episodes run again[/]",
                      highlight=False)
    if legacy := store.legacy_note():
        console.print(f"note: {escape(legacy)}", highlight=False)
    if todo and (found := call_ledger.recover(store.root))[0]:
        console.print(f"note: {found[1]} call(s) of {found[0]} attempt(s) that a run which ended before "
                      f"counting them (Ray's exit, a kill) left in {call_ledger.DIR}/ are now counted, "
                      f"in {lost_attempts.FILE}", highlight=False, soft_wrap=True)
    if (lost := lost_attempts.skipped_note(store.root)) and lost not in _said:
        _said.add(lost)  # once, though table3 opens several runs on one folder
        console.print(f"[yellow]warning: {escape(lost)}[/]", highlight=False, soft_wrap=True)
    console.print(f"run {escape(run.spec.run_id)}: {len(keys)} episodes ({len(keys) - len(todo)} "
                  f"already done) → {escape(str(store.root))}")
    limit = run.config.max_cost
    recorded = store.records(light=True) if limit is not None else []
    spent = [sum(cost_of(r) for r in recorded) + sum(  # and lost attempts no record holds yet
        a.cost_usd for tries in lost_attempts.unrecorded(store.root, recorded).values()
        for a in tries)] if limit is not None else [0.0]
    del recorded

    def spend() -> str:
        return f"${spent[0]:.4f}" + (f" of ${limit:g}" if limit is not None else "")

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("{task.fields[spend]}"),
                  TextColumn("[dim]{task.fields[stage]}"), console=console,
                  transient=False) as progress:
        bar = progress.add_task("episodes", total=len(todo), stage="", spend=spend())

        def done(record: EpisodeRecord) -> None:
            spent[0] += cost_of(record)
            progress.update(bar, advance=1, spend=spend())
        calls = itertools.count(1)

        def show_stage(purpose: str, request: dict) -> None:
            # Episodes take minutes on a small local model: say what is happening meanwhile.
            stage = PURPOSES[purpose].words if purpose in PURPOSES else purpose
            progress.update(bar, stage=f"model call {next(calls)}: {stage}")

        layer = run.services.layer  # the threads' layer; Ray workers have their own
        layer.observers.append(show_stage)
        try:
            backends.run_episodes(run, on_done=done,
                                  on_status=lambda text: progress.update(bar, description=f"episodes ({text})"))
        finally:
            layer.observers.remove(show_stage)
        progress.update(bar, stage="")


def finished_records(run: Run) -> list[EpisodeRecord]:
    """This run's records (a run folder may hold other runs' records too, e.g. table3's cells),
    without their conversations (``RunStore.records(light=True)``): what summaries need."""
    wanted = {k.id() for k in run.keys}
    return [r for r in run.store.records(light=True) if r.record_id in wanted]


def summary_of(run: Run) -> tuple[dict, list[EpisodeRecord]]:
    """The run's ``summary.json`` content from the records, and its records."""
    from runtime.reports import summary
    from runtime.reports.groups import describe

    folder = run.store.records(light=True)  # read once: this run's records are among them
    wanted = {k.id() for k in run.keys}
    records = [r for r in folder if r.record_id in wanted]
    spec, config = run.spec, run.config
    result = summary.summarize(records)
    # env, domain and models as the records say (not this invocation's options); ``groups``:
    # every record of the folder by env, domain and fingerprint
    result.update({"run_id": spec.run_id, **describe(records, run.out),
                   "folder": describe(folder, run.out)["groups"],
                   "embedded_default": run.embedded})
    if not records:  # nothing recorded yet: what was asked
        result.update(env=config.env, domain=spec.domain)
    if run.embedded:
        result["note"] = EMBEDDED_NOTE
    if run.config.until_decided and records:  # the sequence's state is the records: recomputed
        from runtime.cli.decision_state import decision_of

        result["decision"] = decision_of(run, records)
    return result, records


def save_summaries(runs: Sequence[Run]) -> None:
    """``summary.json`` of each run as its records stand, without printing (a run that stops
    early); a summary that cannot be written is left as it was (the records are what count)."""
    for run in runs:
        try:
            run.store.write_summary(summary_of(run)[0])
        except Exception:  # noqa: BLE001 - the line saying why the run stopped matters more
            pass


def write_summary(run: Run, console: Console) -> list[EpisodeRecord]:
    """Write ``summary.json`` for the run and print it; returns the run's records."""
    from runtime.reports import summary

    result, records = summary_of(run)
    spec, config = run.spec, run.config
    run.store.write_summary(result)
    summary.print_summary(result, console, title=f"{config.env}/{spec.domain} — {spec.tested_model}")
    if run.embedded:
        console.print(f"[yellow]{EMBEDDED_NOTE}[/]")
    if result.get("decision"):
        from runtime.reports.decision import print_decision

        print_decision(result["decision"], console)
    errors = [r for r in records if r.status == "error"]
    if errors:
        first = errors[0].error
        console.print(escape(f"{len(errors)} episode(s) errored; first: {first.stage}: "
                             f"{first.type}: {first.message[:200]} (see records.jsonl)"))
    console.print(escape(f"records: {run.store.records_path}  summary: {run.out / 'summary.json'}"))
    return records


def write_report(run: Run, console: Console) -> None:
    """The report and the episode explorer of the run folder (unless ``--no-report``), and as
    the run's last line, where to open them."""
    if run.config.no_report:
        return
    from runtime.reports import report

    console.print(report_line(report.build(run.out)), soft_wrap=True)  # paths whole, to copy


def report_line(paths: dict) -> str:
    """``report: …/report.md  explorer: …/explorer/index.html``, escaped for rich."""
    return escape(f"report: {paths['markdown']}  explorer: {paths['explorer']}")


def error_rate_exit(records: list[EpisodeRecord], max_error_rate: float | None) -> int:
    """``TOO_MANY_ERRORS`` (with one line) when the share of errored episodes is above
    ``max_error_rate`` — by default, when every episode errored — else 0."""
    errors = sum(r.status == "error" for r in records)
    if not records or not errors:
        return 0
    share = errors / len(records)
    limit = max_error_rate
    if (share > limit) if limit is not None else errors == len(records):
        allowed = f"--max-error-rate {limit:g}" if limit is not None else "the default (not every episode)"
        print(f"error: {errors} of {len(records)} episodes errored ({share:.0%}), more than "
              f"{allowed} allows", file=sys.stderr)
        return TOO_MANY_ERRORS
    return 0
