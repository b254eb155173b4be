"""The database records around a τ² task's reference, for the supervision (``Supervision.records``).

A critic that sees the reference can point at its record without its identifier: "the most
recent order on the account", "the cheapest variant", "the cancelled reservation". Only the
database resolves such a phrase, so the adapter hands the guard the records the reference
actions name by identifier, and the records a phrase could pick among: the record that lists
them (the user whose reservations they are), the other records of that list, and the product a
variant belongs to. Plain data read from the domain's initial database; nothing here is rendered
for a model.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from envs.base import ReferenceAction, scalar_values

MAX_SIBLINGS = 30
"""Records of one list kept around an acted-on record (a user has a few orders, not hundreds)."""


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class RecordIndex:
    """A domain's database as tables of id → record, with who lists whom, built once a domain.

    A dict table is taken as it is, a list table by its first ``*_id`` field; nested dicts of
    records keyed by identifiers (a product's variants, a user's payment methods) are a table
    ``products.variants`` of their own (keyed by dates, a flight's days, they are no records)."""

    def __init__(self, db: dict):
        self.tables: dict[str, dict[str, dict]] = {}
        self.owners: dict[str, dict[str, tuple[str, str]]] = {}
        """nested table → record id → (owner table, owner id)."""
        self.listed_by: dict[str, list[tuple[str, str, str, list[str]]]] = {}
        """record id → (table, id, field, the ids of that field) of every record listing it."""
        for name, table in db.items():
            if isinstance(table, dict):
                rows = {str(k): v for k, v in table.items() if isinstance(v, dict)}
            elif isinstance(table, list):
                rows = {}
                for row in table:
                    key = next((k for k in row if k.endswith("_id")), None) if isinstance(row, dict) else None
                    if key is not None:
                        rows[str(row[key])] = row
            else:
                continue
            self.tables[name] = rows
            for rid, row in rows.items():
                for field, value in row.items():
                    if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()) \
                            and not any(_DATE.fullmatch(str(k)) for k in value):
                        nested = self.tables.setdefault(f"{name}.{field}", {})
                        owners = self.owners.setdefault(f"{name}.{field}", {})
                        for k, v in value.items():
                            nested[str(k)] = v
                            owners[str(k)] = (name, rid)
                    elif isinstance(value, list) and value and all(isinstance(v, (str, int)) for v in value):
                        ids = [str(v) for v in value]
                        for v in ids:
                            self.listed_by.setdefault(v, []).append((name, rid, field, ids))

    def around(self, actions: Iterable[ReferenceAction]) -> list[dict[str, Any]]:
        """The records the reference names by identifier (``acted_on``) and those around them."""
        named = sorted({v for a in actions for v in scalar_values(a.arguments)})
        out: dict[tuple[str, str], dict[str, Any]] = {}

        def add(table: str, rid: str, acted_on: bool, owner: dict | None = None) -> None:
            entry = out.get((table, rid))
            if entry is None:
                entry = out[(table, rid)] = {"table": table, "id": rid, "acted_on": acted_on,
                                             "record": json.loads(json.dumps(self.tables[table][rid], default=str))}
            entry["acted_on"] |= acted_on
            if owner and "owner" not in entry:
                entry["owner"] = owner

        for rid in named:
            for table, rows in self.tables.items():
                if rid not in rows:
                    continue
                if table in self.owners:  # a variant: its product, and the product's other variants
                    otable, oid = self.owners[table][rid]
                    owner = {"table": otable, "id": oid, "field": table.split(".", 1)[1]}
                    add(table, rid, True, owner)
                    add(otable, oid, False)
                    for sibling in [k for k, o in self.owners[table].items() if o == (otable, oid)][:MAX_SIBLINGS]:
                        add(table, sibling, False, owner)
                else:
                    add(table, rid, True)
                for otable, oid, field, ids in self.listed_by.get(rid, []):  # the user's orders …
                    if otable == table:
                        continue
                    owner = {"table": otable, "id": oid, "field": field}
                    add(otable, oid, False)
                    for sibling in ids[:MAX_SIBLINGS]:
                        if sibling in rows:
                            add(table, sibling, False, owner)
                    out[(table, rid)]["owner"] = owner
        return list(out.values())
