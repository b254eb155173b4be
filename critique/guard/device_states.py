"""A state of a setting the task repairs, told as a fact: "airplane mode is on", "the SIM isn't
seated", "they've left roaming off".

The rules of this family are the domain's own, built from that domain alone:

* **Settings.** The objects of a call that sets something up or repairs it
  (``toggle_airplane_mode`` → *airplane mode*), from the reference and from the calls that set
  the task's initial state up (``Supervision.records`` of the table ``initial_state``). A call
  whose name names a record of the domain (``update_reservation_flights``, ``suspend_line``)
  writes a record, which the record rules resolve (``critique.guard.record_refs``): it gives no
  setting. The domain's record kinds come from its own schema: the identifier parameters of
  its tools (``reservation_id``, ``flight_number``, ``line_id``) and the tables its records
  belong to. A word of another domain's vocabulary (``flight`` for *airplane* in flight mode)
  stands for the setting only where it names no record of this domain.
* **A state told.** The clause predicates something of the setting: a copula (*is*, *has
  been*, *remains*, *stays* …) with a predicate — a word the domain's own policy predicates
  after a copula ("is suspended", "is enabled", "is on"), a participle (*-ed*, *-en*, *-ing*)
  or the particles *on*/*off*; the result of an act ("left X on", "has X enabled"); or a
  negated possession ("lacks", "has no"). Questions, conditions and rules in general
  (``DOUBT``), a tool's name written out and what the tested model's own texts say (in any
  person) and a modal's 'can be', 'must be' are no claim; one clause never reaches across a dash or a sentence end.
"""

from __future__ import annotations

import functools
import re

from critique.guard import clauses, person
from critique.guard.pointers import DOUBT
from critique.guard.quotations import STOP
from envs.base import Supervision, TaskView

_VERBS = {"break", "unseat", "toggle", "set", "reset", "reseat", "grant", "enable", "disable", "turn", "reboot", "refuel",
          "send", "make", "resume", "suspend", "update", "change", "remove", "add", "check", "connect",
          "disconnect", "install", "uninstall", "unlock", "lock", "restart", "reconnect"}
"""Verbs a call's name starts with when it changes something (``get_…`` only reads)."""
_NOT_SETTINGS = {"on", "off", "info", "location", "search", "simulate", "for", "usage"}
"""Words of a set-up call's name that name no setting (``set_user_location``, ``turn_data_off``)."""
_SYNONYMS = {"flight": "airplane", "cellular": "mobile", "wi": "wifi", "apns": "apn"}
"""Other names of a setting (flight mode is airplane mode)."""
_GENERIC = {"device", "settings", "setting", "status", "user", "app", "the", "by", "id",
            "details", "card", "request"}
_IDENTIFIER = re.compile(r"^(?P<kind>[a-z][a-z_]*?)_(?:id|ids|number|numbers)$")
_COPULA = (r"(?:is|are|was|were|be|been|being|'s|'re|remains?|remained|stays?|stayed|seems?|seemed|appears?|"
           r"appeared|gets?|got|became|becomes?)(?:n't)?")
_ADVERB = r"(?:not|never|still|already|now|also|just|again|currently|really|actually|completely|\w+ly)"
_PARTICIPLE = r"[\w-]{2,}(?:ed|en|ing)|on|off"
_POSSESSION = r"\b(?:lacks?|lacking|(?:has|have|had)\s+no|(?:is|are)\s+without)\b"
_RESULT = r"\b(?:left|leaves|leaving|keeps|kept|has|had)\s+(?:[\w'-]+\s+){1,4}?"
_MODAL = re.compile(r"\b(?:can|cannot|can't|must|should|shall|will|would|needs?\s+to|has\s+to|have\s+to)\s+(?:not\s+)?be\b", re.I)
"""A modal before the copula ('data that can be refueled', 'it must be enabled'): what may or
should be, a rule, not the state of this user's device."""
_CLOSED = STOP - {"on", "off", "in", "out", "up", "down"}


def record_kinds(view: TaskView, supervision: Supervision) -> frozenset[str]:
    """The words a domain uses for its records: its tools' identifier parameters and the tables
    of the records around the reference (``reservations``, ``users.payment_methods``)."""
    out: set[str] = set()
    for name in _parameter_names(view.tools):
        m = _IDENTIFIER.match(name.lower())
        if m:
            out |= {w for w in m.group("kind").split("_") if w and w not in _GENERIC}
    for record in supervision.records:
        table = str(record.get("table", ""))
        if table and table != "initial_state":
            out |= {w.rstrip("s") for w in re.split(r"[._]", table.split(".")[-1]) if w and w not in _GENERIC}
    return frozenset(w.rstrip("s") for w in out)


def _parameter_names(tools) -> list[str]:
    names: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "properties" and isinstance(value, dict):
                    names.extend(value)
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(tools or [])
    return names


def repaired_settings(supervision: Supervision, kinds: frozenset[str] = frozenset()) -> list[set[str]]:
    """The settings the reference's actions and the task's initial state touch, as word sets
    (``toggle_airplane_mode`` → {airplane, mode}); a call that names a record kind, or whose
    name holds no setting (``reboot_device``), gives none."""
    out = []
    names = [a.name for a in supervision.reference_actions]
    names += [r["record"].get("func_name", "") for r in supervision.records
              if r.get("table") == "initial_state" and isinstance(r.get("record"), dict)]
    for name in names:
        words = [w for w in name.lower().split("_") if w]
        if not words or words[0] not in _VERBS or any(w.rstrip("s") in kinds for w in words[1:]):
            continue
        objects = {w for w in words[1:] if w not in _VERBS and w not in _GENERIC and w not in _NOT_SETTINGS}
        if objects and objects not in out:
            out.append(objects)
    return out


@functools.lru_cache(maxsize=64)
def policy_predicates(policy: str) -> frozenset[str]:
    """The words a domain's policy predicates after a copula ('if Airplane Mode is ON', 'the
    line is suspended'): its own vocabulary of states, open-class words only."""
    found = re.finditer(rf"\b{_COPULA}\s+(?:{_ADVERB}\s+){{0,2}}([^\W\d_][\w-]*)", policy, re.I)
    return frozenset(w for m in found if (w := m.group(1).lower()) not in _CLOSED and not w.endswith("ly"))


@functools.lru_cache(maxsize=64)
def _state_pattern(policy: str) -> re.Pattern:
    predicates = "|".join(sorted(map(re.escape, policy_predicates(policy)), key=len, reverse=True))
    predicate = rf"(?:{predicates}|{_PARTICIPLE})" if predicates else rf"(?:{_PARTICIPLE})"
    return re.compile(rf"\b{_COPULA}\s+(?:{_ADVERB}\s+){{0,2}}{predicate}\b|{_RESULT}(?:{_PARTICIPLE})\b"
                      rf"|{_POSSESSION}", re.I)


@functools.lru_cache(maxsize=256)
def _tool_pattern(names: tuple[str, ...]) -> re.Pattern | None:
    names = sorted((n for n in names if n), key=len, reverse=True)
    return re.compile("|".join(r"[\s_-]+".join(map(re.escape, n.split("_"))) for n in names), re.I) if names else None


class DeviceStates:
    """The state-claim rule of one task, scoped to its domain."""

    def __init__(self, view: TaskView, supervision: Supervision, public_text: str):
        self.kinds = record_kinds(view, supervision)
        self.settings = [{w.rstrip("s") for w in s} for s in repaired_settings(supervision, self.kinds)]
        self.public = public_text
        self._state = _state_pattern(view.policy) if self.settings else None
        self._tools = _tool_pattern(tuple(sorted({*view.tool_names, *(a.name for a in supervision.reference_actions)})))
        """A tool's name written out (``update_reservation_flights``) names no state."""

    def _words(self, clause: str) -> set[str]:
        out = set()
        for w in re.findall(r"[a-z]+", clause.lower().replace("wi-fi", "wifi")):
            w = w.rstrip("s") or w
            out.add(w if w in self.kinds else _SYNONYMS.get(w, w).rstrip("s"))
        return out

    def claims(self, text: str) -> list[tuple[int, int]]:
        """Clauses that assert a state of a setting the task repairs ('mobile data is off')."""
        if not self.settings or self._state is None:
            return []
        out = []
        for a, b in clauses.spans(text):
            clause = text[a:b]
            if self._tools is not None:
                clause = self._tools.sub(lambda t: " " * len(t.group(0)), clause)
            if DOUBT.search(clause) or _MODAL.search(clause) or not self._state.search(clause):
                continue
            words = self._words(clause)
            if any(len(setting & words) >= max(1, len(setting) - (len(setting) >= 3)) for setting in self.settings) \
                    and not person.said(text[a:b], self.public):
                out.append((a, b))
        return out
