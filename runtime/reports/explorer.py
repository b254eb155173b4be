"""The episode explorer: a static HTML site in ``<run folder>/explorer/`` that shows why Refine
helped or hurt, task by task. Opens from disk; no server, nothing fetched.

``index.html`` holds the report's tables and plots, the flips (tasks where Refine and Plan-first
disagree: wins, then losses), the errored episodes and every task with each arm's score per
trial. Each task gets its own page (``tasks/<slug>.html``) holding a collapsed panel for each of
its episodes (:mod:`runtime.reports.episode_view`), so no page grows with the size of the run:
a Table 3 folder of thousands of records opens as quickly as a two-task run.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import jinja2
from markdown_it import MarkdownIt

from runtime.folder.records import RECORD_MODES, EpisodeRecord
from runtime.reports import episode_view
from runtime.reports.summary import arm
from runtime.folder.store import write_text_atomic

FOLDER = "explorer"
SUPERVISION_NOTE = "supervision-only: hidden from the tested model"

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("runtime.reports", "templates"),
    autoescape=True, trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined,
)


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


_env.filters["score"] = _score
_env.filters["json_class"] = lambda text: "json" if text and episode_view.looks_like_json(text) else ""
_env.globals["SUPERVISION_NOTE"] = SUPERVISION_NOTE


def task_slug(env: str, domain: str, task_id: str) -> str:
    """A file name for a task page: readable, and unique through a short hash of the task key."""
    readable = re.sub(r"[^A-Za-z0-9_-]+", "-", f"{env}-{domain}-{task_id}").strip("-")[:60]
    digest = hashlib.sha256(f"{env}\0{domain}\0{task_id}".encode()).hexdigest()[:8]
    return f"{readable}-{digest}"


def arm_order(arms: Iterable[str]) -> list[str]:
    """Direct, Plan-first, then Refine and its strategies (the summary's order)."""
    return sorted(set(arms), key=lambda a: (RECORD_MODES.index(a.split(":")[0]), a))


@dataclass
class TaskRow:
    """One task under one tested model: each arm's scores by trial (``None``: errored)."""

    env: str
    domain: str
    task_id: str
    model: str
    page: str
    scores: dict[str, dict[int, float | None]] = field(default_factory=lambda: defaultdict(dict))
    anchors: dict[str, dict[int, str]] = field(default_factory=lambda: defaultdict(dict))

    def mean(self, arm_name: str) -> float | None:
        values = [v for v in self.scores.get(arm_name, {}).values() if v is not None]
        return sum(values) / len(values) if values else None

    def trials(self, arm_name: str) -> list[tuple[int, float | None, str]]:
        """(trial, score, episode anchor) in trial order."""
        return [(t, s, self.anchors[arm_name][t]) for t, s in sorted(self.scores.get(arm_name, {}).items())]


@dataclass
class Flip:
    """A task where a Refine arm's mean over trials differs from Plan-first's."""

    row: TaskRow
    arm: str
    delta: float


def task_rows(records: list[EpisodeRecord]) -> list[TaskRow]:
    rows: dict[tuple[str, str, str, str], TaskRow] = {}
    for r in records:
        k = r.key
        key = (k.env, k.domain, k.task_id, k.model)
        if key not in rows:
            rows[key] = TaskRow(k.env, k.domain, k.task_id, k.model, task_slug(k.env, k.domain, k.task_id))
        name = arm(k.mode, k.strategy)
        rows[key].scores[name][k.trial] = r.score if r.status == "ok" else None
        rows[key].anchors[name][k.trial] = episode_view.episode_anchor(r.record_id)
    return [rows[key] for key in sorted(rows, key=_natural)]


def _natural(key: tuple[str, ...]) -> tuple:
    """Task ids in number order where they are numbers ('2' before '10')."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in key)


def flips(rows: list[TaskRow]) -> tuple[list[Flip], list[Flip]]:
    """(wins, losses) of every Refine arm against Plan-first, largest difference first."""
    wins, losses = [], []
    for row in rows:
        first = row.mean("plan-first")
        if first is None:
            continue
        for name in row.scores:
            if not name.startswith("refine"):
                continue
            refined = row.mean(name)
            if refined is None or abs(refined - first) < 1e-12:
                continue
            (wins if refined > first else losses).append(Flip(row, name, refined - first))
    wins.sort(key=lambda f: -f.delta)
    losses.sort(key=lambda f: f.delta)
    return wins, losses


def errored(records: list[EpisodeRecord]) -> list[dict[str, Any]]:
    out = []
    for r in records:
        if r.status != "error":
            continue
        k = r.key
        out.append({"env": k.env, "domain": k.domain, "task_id": k.task_id, "model": k.model,
                    "arm": arm(k.mode, k.strategy), "trial": k.trial,
                    "page": task_slug(k.env, k.domain, k.task_id),
                    "anchor": episode_view.episode_anchor(r.record_id),
                    "stage": r.error.stage if r.error else "?", "type": r.error.type if r.error else "?",
                    "message": r.error.message if r.error else ""})
    return sorted(out, key=lambda e: _natural((e["env"], e["domain"], e["task_id"], e["model"], e["arm"])))


def _image(path: Path) -> dict[str, str]:
    """A plot embedded as a data URI, so the page still shows it when moved."""
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return {"name": Path(path).stem, "src": f"data:image/png;base64,{data}"}


def _summary_html(summary_markdown: str) -> str:
    """The report's Markdown as HTML (its title dropped: the page has one); raw HTML in it is
    escaped, not passed through."""
    lines = summary_markdown.lstrip().splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return MarkdownIt("commonmark", {"html": False}).enable("table").render("\n".join(lines))


def _task_page(key: tuple[str, str, str], records: list[EpisodeRecord], rows: list[TaskRow],
               title: str) -> str:
    env, domain, task_id = key
    by_model: dict[str, dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        by_model[r.key.model][r.key.trial].append(episode_view.view(r))
    groups = []
    for model in sorted(by_model):
        trials = []
        for trial in sorted(by_model[model]):
            episodes = by_model[model][trial]
            order = arm_order(e["arm"] for e in episodes)
            trials.append({"trial": trial, "episodes": sorted(episodes, key=lambda e: order.index(e["arm"]))})
        groups.append({"model": model, "trials": trials})
    arms = arm_order(a for row in rows for a in row.scores)
    return _env.get_template("task.html.j2").render(
        title=title, env=env, domain=domain, task_id=task_id, rows=rows, arms=arms, groups=groups)


def deltas(records: list[EpisodeRecord]) -> list[dict[str, Any]]:
    """Every arm against Plan-first per environment (``runtime.reports.deltas``): the index's
    headline, each Δ with its interval, detectable size and verdict."""
    from runtime.reports.deltas import comparisons
    from runtime.reports.summary import frame

    df = frame(records)
    if df.empty:
        return []
    return [{"env": env, **row} for env, part in df.groupby("env", sort=True) for row in comparisons(part)]


def write(folder: Path, records: list[EpisodeRecord], title: str, summary_markdown: str = "",
          images: Iterable[Path] = (), comparisons: list[dict[str, Any]] | None = None) -> dict[str, Path]:
    """Write ``<folder>/explorer/index.html`` and one page per task; returns the index's path.
    ``comparisons``: the Δ rows (``deltas``), computed here when not given."""
    out = Path(folder) / FOLDER
    # folders are made by write_text_atomic: a full disk is its WriteFailed, like every file
    rows = task_rows(records)
    wins, losses = flips(rows)
    by_task: dict[tuple[str, str, str], list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        by_task[(r.key.env, r.key.domain, r.key.task_id)].append(r)
    rows_by_task: dict[tuple[str, str, str], list[TaskRow]] = defaultdict(list)
    for row in rows:
        rows_by_task[(row.env, row.domain, row.task_id)].append(row)
    for key, task_records in by_task.items():
        page = out / "tasks" / f"{task_slug(*key)}.html"
        write_text_atomic(page, _task_page(key, task_records, rows_by_task[key], title))
    arms = arm_order(a for row in rows for a in row.scores)
    index = out / "index.html"
    write_text_atomic(index, _env.get_template("index.html.j2").render(
        title=title, summary_html=_summary_html(summary_markdown) if summary_markdown else "",
        comparisons=deltas(records) if comparisons is None else comparisons,
        images=[_image(p) for p in images], rows=rows, arms=arms, wins=wins, losses=losses,
        errors=errored(records), n_records=len(records), n_tasks=len(by_task),
        models=sorted({r.key.model for r in records}), envs=sorted({r.key.env for r in records}),
    ))
    return {"explorer": index}
