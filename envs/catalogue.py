"""A benchmark's domains, splits and task ids as plain data, and the one way tasks are picked.

Two readers share it. The adapter builds a :class:`Catalogue` from the benchmark's own registry
and selects through it (so the rules and the error lines exist once). And the commands, before
they import the benchmark (τ² with litellm and LangGraph: seconds), read the catalogue an
earlier run *remembered* (:func:`remember`, :func:`remembered`), so a bad ``--domain``,
``--split`` or ``--task-ids`` is refused at once with the same line. A remembered catalogue is
keyed by the installed benchmark (its distribution's version and the size and time of its task
files): another version makes it stale, never wrong. Where nothing is remembered the commands
go on to the full check, which remembers it for next time.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from envs import facts
from envs.base import TaskSelection, UnknownTaskError

FORMAT = 1
"""Bumped when the remembered catalogue's shape changes."""

SHOWN = 60
"""The most characters of a task id (or a list of them) an error line echoes."""


def shown(text: str, most: int = SHOWN) -> str:
    """``text`` cut to a readable length for a one-line error, saying how long it was: a
    120,000-character task id must not fill the terminal."""
    return text if len(text) <= most else f"{text[:most]}… ({len(text):,} characters)"


@dataclass(frozen=True)
class Source:
    """What a benchmark's catalogue is read from: its distribution (for the version), its
    import package and the folder of its task files inside it (for their sizes and times)."""

    distribution: str
    package: str
    tasks_folder: str


@dataclass
class Catalogue:
    """Domains in the benchmark's registry; for the domains read so far, their task ids in the
    benchmark's order and their splits (name → ids)."""

    label: str
    """How error lines name the benchmark (``τ²-bench``)."""
    domains: list[str]
    tasks: dict[str, list[str]] = field(default_factory=dict)
    splits: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def check_domain(self, domain: str) -> None:
        if domain not in self.domains:
            raise unknown_domain(self.label, domain, self.domains)

    def knows(self, domain: str) -> bool:
        return domain in self.tasks

    def check_task(self, domain: str, task_id: str) -> None:
        ids = self.tasks[domain]
        if task_id not in set(ids):
            raise UnknownTaskError(
                f"unknown task id {shown(task_id)!r} in {self.label} domain {domain!r}; "
                f"accepted: {len(ids)} ids such as {', '.join(ids[:5])}")

    def select(self, selection: TaskSelection) -> list[str]:
        """Task ids in the benchmark's order: explicit ids, else a split (default ``base``),
        optionally a seeded sample of ``count`` of them."""
        domain = selection.domain
        self.check_domain(domain)
        tasks = self.tasks[domain]
        if selection.ids:
            for task_id in selection.ids:
                self.check_task(domain, task_id)
            return list(selection.ids)
        available = self.splits.get(domain, {})
        split = selection.split or ("base" if "base" in available else None)
        if split is None:
            ids = list(tasks)
        elif split not in available:
            accepted = ", ".join(sorted(available)) or "(this domain has no splits)"
            raise UnknownTaskError(
                f"unknown split {split!r} for {self.label} domain {domain!r}; accepted: {accepted}")
        else:
            known = set(tasks)
            ids = [i for i in available[split] if i in known]
        if selection.count is not None:
            rng = random.Random(selection.seed)
            ids = sorted(rng.sample(ids, min(selection.count, len(ids))), key=ids.index)
        return ids


def unknown_domain(label: str, domain: str, accepted: list[str]) -> UnknownTaskError:
    return UnknownTaskError(f"unknown {label} domain {domain!r}; accepted: {', '.join(sorted(accepted))}")


def source_key(source: Source) -> str | None:
    """The installed benchmark's identity, found without importing it (None: not installed)."""
    spec = importlib.util.find_spec(source.package)
    if spec is None or not spec.submodule_search_locations:
        return None
    from importlib import metadata

    try:
        version = metadata.version(source.distribution)
    except metadata.PackageNotFoundError:
        version = "?"
    root = Path(list(spec.submodule_search_locations)[0])
    parts = [FORMAT, version, str(root)]
    for path in sorted((root / source.tasks_folder).glob("*/*")):
        if path.is_file():
            stat = path.stat()
            parts.append(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def remembered(env: str, source: Source) -> Catalogue | None:
    """The catalogue an earlier run remembered for the installed benchmark, or None."""
    return _read(env, source_key(source))


def _read(env: str, key: str | None) -> Catalogue | None:
    fact = facts.read(f"catalogue-{env}", key)
    try:
        return Catalogue(**fact) if fact else None
    except TypeError:
        return None


def remember(env: str, source: Source, catalogue: Catalogue) -> None:
    """Keep ``catalogue`` for the next command, merged with the domains already kept."""
    key = source_key(source)
    old = _read(env, key)
    tasks = {**(old.tasks if old else {}), **catalogue.tasks}
    splits = {**(old.splits if old else {}), **catalogue.splits}
    if old is not None and old.domains == catalogue.domains and tasks == old.tasks and splits == old.splits:
        return
    facts.write(f"catalogue-{env}", key, {"label": catalogue.label, "domains": catalogue.domains,
                                          "tasks": tasks, "splits": splits})
