"""Parse a τ²-bench domain's database once per process; give each environment a cheap clone.

τ² builds a fresh environment — and parses the domain's whole DB — three times per episode (the
episode's own, the evaluator's "predicted" and "gold" replays), and its evaluator serialises the
whole DB to hash it, twice an episode. For airline that is most of an episode's CPU when the
model is fast. Here each domain's DB is parsed once and kept read-only:

* an environment gets a *copy-on-read* clone (:class:`CopyOnRead`) whose top-level tables
  (``flights``, ``users``, ``orders``, …) share the parsed entries and deep-copy an entry the
  first time a tool looks it up, so the shared parse never changes;
* its DB hash (:func:`db_hash`) is τ²'s — the same bytes, hashed in the same order — but an
  untouched entry is serialised once a process instead of twice an episode.

Installed into τ²'s own registry (:func:`install`), so τ²'s orchestrator and τ²'s evaluator run
unchanged on top of it. Domains whose DB is not a set of dict tables (telecom keeps lists) keep
τ²'s own constructor. ``EVR_TAU2_DB_CACHE=0`` turns the cache off (to compare, or rule it out).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import threading
from typing import Any, Callable, Optional

from pydantic import BaseModel

from envs.tau2.tasks import once_per_process

OFF_VAR = "EVR_TAU2_DB_CACHE"


class CopyOnRead(dict):
    """A table of a shared parsed DB: an entry is deep-copied (and kept) the first time it is
    looked up (``table[key]``, ``.get``, ``.setdefault``, ``.pop``) — the way τ²'s tools reach an
    entry they change.

    Scans (``.values()``, ``.items()``) read the entries in place, copying nothing: a search over
    every airline flight would otherwise copy the whole DB. τ²'s tools only read what they scan
    (airline ``search_*``, retail ``find_user_id_*``, mock ``get_users``); the tests replay every
    reference solution with and without the cache and check that the shared parse is unchanged.
    Serialising (``model_dump``, which the DB hash uses) reads the raw dict as well: untouched
    entries are the unchanged originals, so the dump equals that of a private copy.
    """

    def __init__(self, shared: dict, shared_json: Optional[dict] = None,
                 layout: Optional["_Layout"] = None) -> None:
        super().__init__(shared)
        self._owned: set = set()
        self._shared_json = {} if shared_json is None else shared_json
        self._layout = layout

    def write_entries(self, digest: Any) -> None:
        """Feed the table's entries to ``digest`` as τ²'s DB hash serialises them, in key order.
        While the keys are the shared table's, the untouched entries go in as slices of one
        buffer made once a process, and only the entries this clone owns are serialised."""
        layout = self._layout
        if layout is not None and dict.keys(self) == layout.keyset:
            buffer, pos = layout.buffer(self._shared_json), 0
            for i in sorted(layout.index[key] for key in self._owned):
                start, end = layout.spans[i]
                digest.update(buffer[pos:start])
                digest.update(_chunk(i, layout.keys[i], _entry_json(dict.__getitem__(self, layout.keys[i]))))
                pos = end
            digest.update(buffer[pos:])
            return
        for j, key in enumerate(sorted(dict.keys(self))):
            digest.update(_chunk(j, key, self.entry_json(key)))

    def entry_json(self, key: Any) -> bytes:
        """The entry as τ²'s DB hash serialises it; for an untouched entry, made once a process."""
        if key in self._owned:
            return _entry_json(dict.__getitem__(self, key))
        cached = self._shared_json.get(key)
        if cached is None:
            cached = self._shared_json[key] = _entry_json(dict.__getitem__(self, key))
        return cached

    def _own(self, key: Any) -> Any:
        value = dict.__getitem__(self, key)
        if key not in self._owned:
            value = copy.deepcopy(value)
            dict.__setitem__(self, key, value)
            self._owned.add(key)
        return value

    def __getitem__(self, key: Any) -> Any:
        return self._own(key)

    def get(self, key: Any, default: Any = None) -> Any:
        return self._own(key) if dict.__contains__(self, key) else default

    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self, key, value)
        self._owned.add(key)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return self._own(key)
        self[key] = default
        return default

    def pop(self, key: Any, *default: Any) -> Any:
        if dict.__contains__(self, key):
            value = self._own(key)
            dict.pop(self, key)
            return value
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[Any, Any]:
        key = next(reversed(dict.keys(self)))
        return key, self.pop(key)

    def copy(self) -> dict:
        return {key: self._own(key) for key in list(dict.keys(self))}

    def __deepcopy__(self, memo: dict) -> dict:
        return {key: copy.deepcopy(value, memo) for key, value in dict.items(self)}

    def __reduce__(self):  # pickles as a plain dict of its current entries
        return (dict, (dict(dict.items(self)),))


def _entry_json(entry: Any) -> bytes:
    value = entry.model_dump() if isinstance(entry, BaseModel) else entry
    return json.dumps(value, sort_keys=True, default=str).encode()


def _chunk(j: int, key: Any, entry_json: bytes) -> bytes:
    """Entry ``j`` of a table as τ²'s hash writes it: ``[", "]"key": <entry JSON>``."""
    return b"%s%s: %s" % (b", " if j else b"", json.dumps(key).encode(), entry_json)


class _Layout:
    """A shared table's entries serialised in key order into one buffer, with each entry's span,
    made on the first hash (under a lock: 32 episode threads may hash at once)."""

    def __init__(self, shared: dict) -> None:
        self.shared = shared
        self.keys = sorted(shared)
        self.keyset = frozenset(self.keys)
        self.index = {key: i for i, key in enumerate(self.keys)}
        self.spans: list[tuple[int, int]] = []
        self._buffer: Optional[memoryview] = None
        self._lock = threading.Lock()

    def buffer(self, shared_json: dict) -> memoryview:
        with self._lock:
            if self._buffer is None:
                chunks, pos = [], 0
                for j, key in enumerate(self.keys):
                    if key not in shared_json:
                        shared_json[key] = _entry_json(self.shared[key])
                    chunks.append(_chunk(j, key, shared_json[key]))
                    self.spans.append((pos, pos + len(chunks[-1])))
                    pos += len(chunks[-1])
                self._buffer = memoryview(b"".join(chunks))
            return self._buffer


def db_hash(tools: Any) -> str:
    """τ²'s ``ToolKitBase.get_db_hash`` — ``sha256(json.dumps(db.model_dump(), sort_keys=True,
    default=str))`` — computed from per-entry JSON, so that untouched entries are serialised once
    a process instead of twice an episode. The same bytes in the same order: the tests compare it
    with τ²'s own on every reference solution. A DB that is not a clone falls back to τ²'s."""
    from tau2.utils import get_dict_hash

    db = tools.db
    names = sorted(type(db).model_fields)
    tables = [getattr(db, name) for name in names]
    if not names or not all(isinstance(table, CopyOnRead) for table in tables):
        return get_dict_hash(db.model_dump())
    digest = hashlib.sha256(b"{")
    for i, (name, table) in enumerate(zip(names, tables)):
        digest.update(b"%s%s: {" % (b", " if i else b"", json.dumps(name).encode()))
        table.write_entries(digest)
        digest.update(b"}")
    digest.update(b"}")
    return digest.hexdigest()


@once_per_process
def _tables(domain: str) -> Optional[tuple[type, dict[str, dict], dict[str, dict], dict[str, _Layout]]]:
    """The parsed DB's class, its dict tables, their entries' JSON (filled as hashed) and their
    hash layouts, or None when the DB is not only dict tables."""
    db = _parse(domain)
    if db is None:
        return None
    tables = {name: getattr(db, name) for name in type(db).model_fields}
    if not tables or not all(type(table) is dict for table in tables.values()):
        return None
    return (type(db), tables, {name: {} for name in tables},
            {name: _Layout(table) for name, table in tables.items()})


def _parse(domain: str) -> Optional[BaseModel]:
    """The domain's DB as τ² parses it: the one its stock constructor builds with ``db=None``."""
    return getattr(_original(domain)().tools, "db", None)


_ORIGINALS: dict[str, Callable] = {}


def _original(domain: str) -> Callable:
    from tau2.registry import registry

    return _ORIGINALS.get(domain) or registry.get_env_constructor(domain)


def clone_db(domain: str) -> Optional[BaseModel]:
    """A fresh DB for one environment, sharing the parsed entries copy-on-read (None: no cache)."""
    parsed = _tables(domain)
    if parsed is None:
        return None
    cls, tables, json_cache, layouts = parsed
    return cls.model_construct(**{name: CopyOnRead(table, json_cache[name], layouts[name])
                                  for name, table in tables.items()})


def _cached_constructor(domain: str, original: Callable) -> Callable:
    @functools.wraps(original)
    def get_environment(db: Any = None, solo_mode: bool = False, **kwargs: Any):
        if db is None:
            db = clone_db(domain)
        if db is None:  # not a DB of dict tables: τ²'s own parse
            return original(solo_mode=solo_mode, **kwargs)
        env = original(db=db, solo_mode=solo_mode, **kwargs)
        env.tools.get_db_hash = functools.partial(db_hash, env.tools)
        return env

    get_environment.evr_db_cache = True  # type: ignore[attr-defined]
    return get_environment


CACHED_DOMAINS = ("airline", "retail", "mock")
"""Domains whose stock constructor takes ``db=`` and whose DB is dict tables (checked at clone)."""


def enabled() -> bool:
    return os.environ.get(OFF_VAR, "1").strip().lower() not in {"0", "false", "no", "off"}


def install() -> list[str]:
    """Route τ²'s registry constructors of :data:`CACHED_DOMAINS` through the cache (idempotent).

    The registry has no public way to replace a domain, so this sets its table entry; the pinned
    τ² version is checked by the tests, which compare every task's gold replay with and without
    the cache.
    """
    if not enabled():
        return []
    from tau2.registry import registry

    installed = []
    for domain in CACHED_DOMAINS:
        if domain not in registry.get_domains():
            continue
        current = registry.get_env_constructor(domain)
        if not getattr(current, "evr_db_cache", False):
            _ORIGINALS[domain] = current
            registry._domains[domain] = _cached_constructor(domain, current)
        installed.append(domain)
    return installed
