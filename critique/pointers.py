"""What points at the answer without a value: one record by its position or rank, and a device
or line state the reference's actions repair.

* **Record pointers.** "the third reservation on the profile", "the most recent order", "the
  cheapest flight": a position or a rank with a record noun picks one record, which only the
  database resolves. The guard reads no database, so a pointer counts when the reference acts
  on a record of that kind by an identifier the tested model has not seen (its argument key
  names the kind: ``reservation_id``, ``order_id``, ``payment_method_id`` …) and the tested
  model's own texts do not use the same words.
* **States.** "Airplane Mode is switched on", "the SIM card is not seated", "roaming is off on
  the line": a setting the reference's actions touch (the objects of the action's name:
  ``toggle_airplane_mode`` → *airplane mode*) stated with a state word (on, off, enabled,
  missing, locked, broken, suspended …) — an assertion, not a question ('check whether …').
"""

from __future__ import annotations

import re

from envs.base import Supervision, scalar_values

_POSITION = (r"first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|latest|final|"
             r"most\s+recent|newest|oldest|earliest|previous|penultimate|second[-\s]to[-\s]last|"
             r"\d{1,2}(?:st|nd|rd|th)|cheapest|priciest|most\s+expensive|least\s+expensive|longest|shortest|"
             r"largest|biggest|smallest|highest|lowest|more\s+expensive|cheaper|earlier|later|older|newer|"
             r"upcoming|next|only\s+other")
KINDS = {
    "reservation": ("reservation", "booking", "trip"),
    "order": ("order", "purchase"),
    "flight": ("flight", "leg"),
    "payment": ("payment", "card", "certificate", "gift card", "method"),
    "item": ("item", "product", "variant"),
    "line": ("line", "number", "plan"),
    "user": ("account", "profile"),
}
_KEYS = {"reservation": ("reservation",), "order": ("order",), "flight": ("flight",),
         "payment": ("payment",), "item": ("item", "product"), "line": ("line",), "user": ("user",)}
_NOUN = {w: kind for kind, words in KINDS.items() for w in words}
POINTER = re.compile(rf"\b(?:the|your|their|his|her|its|this|that)\s+(?P<pos>{_POSITION})\s+(?:\w+\s+){{0,2}}?"
                     rf"(?P<noun>{'|'.join(sorted(map(re.escape, _NOUN), key=len, reverse=True))})s?\b"
                     rf"|\b(?P<of>cheaper|more\s+expensive|earlier|later|longer|shorter|bigger|smaller)\s+of\s+the\s+"
                     rf"(?:two|three|\d)\b", re.I)

_STATE = (r"on|off|enabled|disabled|active|inactive|missing|broken|wrong|locked|pin[-\s]locked|suspended|"
          r"stuck|not\s+seated|unseated|loose|exceeded|used\s+up|overdue|expired|ended|turned\s+on|turned\s+off|"
          r"switched\s+on|switched\s+off|set\s+to\s+\w+|blocked|denied|revoked|empty|full|maxed\s+out|"
          r"corrupt(?:ed)?|misconfigured|incorrect|come\s+loose|running|connected|lacks?|blank|"
          r"(?:is|are|was)n't\s+\w+|in\s+(?:\w+[\s-]+)?mode")
STATE = re.compile(rf"\b(?:is|are|was|has\s+been|have\s+been|got|gets|remains?|stays?|left|'s)\s+(?:\w+\s+){{0,2}}?"
                   rf"(?:{_STATE})\b|\b(?:{_STATE})\b", re.I)
DOUBT = re.compile(r"\b(?:whether|if|check|verify|ask|confirm|might|may|could|possibly|perhaps|maybe|"
                    r"any|each|every|without\s+assuming|suppose|usually|typically|generally|normally|often|"
                    r"sometimes|indicates?|means|when|unless)\b|\?", re.I)
"""A question, a condition or a rule in general ('the status bar usually shows …'): no claim
about this user's device."""
_VERBS = {"break", "unseat", "toggle", "set", "reset", "reseat", "grant", "enable", "disable", "turn", "reboot", "refuel",
          "send", "make", "resume", "suspend", "update", "change", "remove", "add", "check", "connect",
          "disconnect", "install", "uninstall", "unlock", "lock", "restart", "reconnect"}
_NOT_SETTINGS = {"on", "off", "info", "location", "search", "simulate", "for", "usage"}
"""Words of a set-up call's name that name no setting (``set_user_location``, ``turn_data_off``)."""
_SYNONYMS = {"flight": "airplane", "cellular": "mobile", "wi": "wifi", "apns": "apn"}
_GENERIC = {"device", "settings", "setting", "status", "user", "app", "the", "by", "id",
            "details", "card", "request"}


def _clauses(text: str):
    return re.finditer(r"(?:[^.;:!?\n—–-]|-(?! ))+", text)  # canonical text writes a dash " - "


def record_pointers(text: str, supervision: Supervision, public_codes: frozenset[str],
                    public_text: str, resolved: frozenset[str] = frozenset()) -> list[tuple[int, int]]:
    """Spans of pointers at one record of a kind the reference acts on by an unseen identifier
    (kinds in ``resolved`` are left to the records' own resolution: ``critique.record_refs``)."""
    kinds = set()
    for action in supervision.reference_actions:
        for key, value in action.arguments.items():
            values = [v.lower() for v in scalar_values(value)]
            if values and any(re.sub(r"\W", "", v) not in public_codes for v in values):
                kinds |= {k for k, parts in _KEYS.items() if any(p in key.lower() for p in parts)}
    kinds -= resolved
    if not kinds:
        return []
    said = public_text.lower()
    out = []
    for m in POINTER.finditer(text):
        if m.group("of"):
            hit = True
        else:
            hit = _NOUN[m.group("noun").lower()] in kinds
        if hit and re.sub(r"\s+", " ", m.group(0).lower()) not in said:
            out.append(m.span())
    return out


def repaired_settings(supervision: Supervision) -> list[set[str]]:
    """The settings the reference's actions touch, as word sets (``toggle_airplane_mode`` →
    {airplane, mode}), and those the task's initial state breaks (``Supervision.records`` of the
    table ``initial_state``: ``break_apn_settings`` → {apn}); an action whose name holds no
    setting (``reboot_device``, ``set_user_info``) gives none."""
    out = []
    names = [a.name for a in supervision.reference_actions]
    names += [r["record"].get("func_name", "") for r in supervision.records
              if r.get("table") == "initial_state" and isinstance(r.get("record"), dict)]
    for name in names:
        words = [w for w in name.lower().split("_") if w]
        if not words or words[0] not in _VERBS:
            continue  # 'get_user_details' reads; it repairs nothing
        objects = {w for w in words[1:] if w not in _VERBS and w not in _GENERIC and w not in _NOT_SETTINGS}
        if objects and objects not in out:
            out.append(objects)
    return out


def state_claims(text: str, settings: list[set[str]], public_text: str) -> list[tuple[int, int]]:
    """Clauses that assert a state of a setting the reference repairs ('mobile data is off')."""
    if not settings:
        return []
    said = public_text.lower()
    out = []
    for m in _clauses(text):
        clause = m.group(0)
        words = {_SYNONYMS.get(w, w).rstrip("s") for w in re.findall(r"[a-z]+", clause.lower().replace("wi-fi", "wifi"))}
        if not STATE.search(clause) or DOUBT.search(clause):
            continue
        if any(len(setting & words) >= max(1, len(setting) - (len(setting) >= 3))
               for setting in ({w.rstrip("s") for w in s} for s in settings)) \
                and clause.strip().lower() not in said:
            out.append(m.span())
    return out
