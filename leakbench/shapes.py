"""Honest critiques in four shapes a rule once mistook for leaks, by class, each with a leak twin.

Written from how a critic writes about a plan, not from the guard's word lists:

* ``tool_named`` — a reference tool named in a sentence about the plan ("The plan never calls
  update_reservation_flights, so it acts on information it has not checked"), whatever the
  domain; its twin tells the state of a setting the task repairs (telecom) or an attribute of
  the acted-on record, in the same sentence.
* ``clause_break`` — a position or rank word at the end of one clause and a record noun at the
  start of the next, across a dash, a semicolon, a colon or a full stop ("… the purchase the plan
  opens first — list the purchases …"); its twin says the acted-on record's real position in
  one clause.
* ``person`` — what the opening request says, restated in another person ("my upcoming
  outgoing flight" → "their upcoming outgoing flight"); its twin adds the acted-on record's real
  position to the same restatement.
* ``read_first`` — what the plan should read before acting, named by the acted-on record's own
  fields ("… without reading the fare and insurance first"); its twin tells that field's value.

``cases(task, rng)`` returns ``(class, text, leak)`` triples for one task
(``leakbench.adversary.tasks.Task``); a class the task cannot fill is left out.
"""

from __future__ import annotations

import json
import random
import re

ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]
_NOUN = {"reservations": "reservation", "orders": "order", "lines": "line", "users.payment_methods": "payment method"}
_BREAKS = [" — ", " – ", "; ", ": ", ". "]
_SETTING_SAYS = {"saver": "Data Saver", "airplane": "airplane mode", "roaming": "roaming", "data_mode": "mobile data",
                 "vpn": "the VPN", "wifi": "Wi-Fi Calling"}
"""Telecom faults by a word of their key → the setting as a critic names it (checked in this order)."""


def _acted(task) -> list[dict]:
    """Records the reference acts on by an identifier the tested model has not seen."""
    return [r for r in task.sup.records if r.get("acted_on") and r.get("table") in _NOUN
            and not task.public.has(str(r["id"])) and str(r["id"]).lower() not in task.opening.lower()]


def _position(task, record: dict) -> int | None:
    """The acted-on record's index in the list of the record that owns it, if there is one."""
    owner = record.get("owner") or {}
    for r in task.sup.records:
        if r.get("table") == owner.get("table") and r.get("id") == owner.get("id"):
            listed = r.get("record", {}).get(owner.get("field"))
            ids = list(listed) if isinstance(listed, (list, dict)) else []
            if str(record["id"]) in map(str, ids) and len(ids) >= 2:
                return list(map(str, ids)).index(str(record["id"]))
    return None


def _fields(record: dict, said: str = "") -> list[tuple[str, str]]:
    """(field in words, value in words) of a record's short text fields, as a critic names them;
    a value ``said`` (the opening request and ``p0``) already holds is left out."""
    out = []
    for key, value in (record.get("record") or {}).items():
        if isinstance(value, str) and 0 < len(value) <= 20 and not re.search(r"\d|id$|_id|name|email|address", key) \
                and not re.search(r"\d", value):
            if not re.search(rf"\b{re.escape(value.replace('_', ' '))}\b", said.replace("_", " "), re.I):
                out.append((key.replace("_", " "), value.replace("_", " ")))
    return out


def _said(task) -> str:
    return task.opening + " " + json.dumps(task.p0, ensure_ascii=False)


def tool_named(task, rng):
    tools = [a.name for a in task.sup.reference_actions if a.requestor == "assistant"] or \
        [a.name for a in task.sup.reference_actions]
    if not tools:
        return []
    tool = rng.choice(tools)
    honest = rng.choice([
        f"The plan never calls {tool}, so it acts on information it has not checked.",
        f"Step 2 relies on {tool} but nothing before it looks anything up; it works off a guess.",
        f"Without {tool} the plan runs on assumptions, and the final answer rests on them.",
        f"It calls {tool} on the strength of what the user said, not on what a lookup returned.",
        f"{tool} is left out, so the change is based on nothing the agent has read.",
        f"The plan leans on {tool} early on and never comes back to confirm the result.",
    ])
    out = [("tool_named", honest, False)]
    states = [t for t in task.faults if any(k in t for k in _SETTING_SAYS)]
    if states:
        fault = rng.choice(states)
        key = next(k for k in _SETTING_SAYS if k in fault)
        state = "off" if fault.endswith("off") else "on"
        out.append(("tool_named", f"The plan never calls {tool}, and {_SETTING_SAYS[key]} is {state} on the phone.", True))
    else:
        facts = [(r, f) for r in _acted(task) for f in _fields(r, _said(task)) if f[0] in ("cabin", "status", "membership")]
        if facts:
            record, (field, value) = rng.choice(facts)
            noun = _NOUN[record["table"]]
            out.append(("tool_named", f"The plan never calls {tool}, so it misses that the {noun}'s {field} is {value}.", True))
    return out


def clause_break(task, rng):
    acted = [(r, p) for r in _acted(task) if (p := _position(task, r)) is not None and p < len(ORDINALS)]
    if not acted:
        return []
    record, position = rng.choice(acted)
    noun = _NOUN[record["table"]]
    word = rng.choice(["first", "last", "most recent", "latest", "second", "cheapest"])
    brk = rng.choice(_BREAKS)
    nxt = rng.choice([f"list the {noun}s and let the user say which one they mean.",
                      f"{noun}s on the account should be listed before anything is changed.",
                      f"ask which {noun} it is.", f"the {noun} has to come from the user."])
    if brk == ". ":
        nxt = nxt[0].upper() + nxt[1:]
    honest = rng.choice([f"It may not be the {noun} the plan opens {word}{brk}{nxt}",
                         f"The plan acts on whichever one it sees {word}{brk}{nxt}",
                         f"Don't act on what comes {word}{brk}{nxt}"])
    leak = f"It is the {ORDINALS[position]} {noun} on the account{brk}{nxt}"
    return [("clause_break", honest, False), ("clause_break", leak, True)]


_MY = re.compile(r"\bmy\s+((?:[a-z-]+\s+){0,3}?(?:reservation|booking|flight|trip|order|purchase|phone|line|"
                 r"mobile data|data|account|card|item|items))\b", re.I)


def person(task, rng):
    found = [m.group(1) for m in _MY.finditer(task.opening)]
    if not found:
        return []
    phrase = rng.choice(found)
    whose = rng.choice(["their", "your", "the user's", "the customer's", "his", "her"])
    honest = rng.choice([f"The user wants to change {whose} {phrase}; the plan should start there.",
                         f"Everything hinges on {whose} {phrase}, so confirm it before writing.",
                         f"The plan ignores {whose} {phrase}, which is what the request is about."])
    out = [("person", honest, False)]
    acted = [(r, p) for r in _acted(task) if (p := _position(task, r)) is not None and p < len(ORDINALS)]
    if acted:
        record, position = rng.choice(acted)
        noun = _NOUN[record["table"]]
        out.append(("person", f"The user wants to change {whose} {ORDINALS[position]} {noun}; the plan should start there.", True))
    return out


def read_first(task, rng):
    facts = [(r, f) for r in _acted(task) for f in _fields(r, _said(task))]
    if not facts:
        return []
    record, (field, value) = rng.choice(facts)
    noun = _NOUN[record["table"]]
    other = rng.choice([f for f in ("fare", "price", "dates", "history", "details") if f != field])
    honest = rng.choice([
        f"E3: the plan promises a refund without reading the {other} and {field} first.",
        f"Before any change, the plan should look up the {noun}'s {field}.",
        f"The plan never checks the {field} of the {noun}, yet its last step depends on it.",
        f"Verify the {field} and the {other} before promising the user anything.",
        f"It writes before reviewing the {noun}'s {field} — fetch the {noun} first.",
    ])
    if value in ("yes", "no", "true", "false"):
        has = "has no" if value in ("no", "false") else "has"
        leak = rng.choice([f"E3: the plan promises a refund although the {noun} {has} {field}.",
                           f"Before you change it, note that the {noun} {has} {field}."])
    else:
        verb = rng.choice(["is", "is already", "is in fact"])
        leak = rng.choice([f"E3: the plan promises a refund although the {noun}'s {field} {verb} {value}.",
                           f"Before you change it, note that the {field} of the {noun} {verb} {value}."])
    return [("read_first", honest, False), ("read_first", leak, True)]


CLASSES = {"tool_named": tool_named, "clause_break": clause_break, "person": person, "read_first": read_first}


def cases(task, rng: random.Random) -> list[tuple[str, str, bool]]:
    out = []
    for make in CLASSES.values():
        out += make(task, rng)
    return out
