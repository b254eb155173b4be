"""What points at one record without a value: its position or its rank.

"the third reservation on the profile", "the most recent order", "the cheapest flight": a
position or a rank with a record noun picks one record, which only the database resolves. Where
the task carries no records to resolve it against (``critique.guard.record_refs`` does where it
does), a pointer counts when the reference acts on a record of that kind by an identifier the
tested model has not seen (its argument key names the kind: ``reservation_id``, ``order_id``,
``payment_method_id`` …) and the tested model's own texts do not use the same words, in any
person ("their upcoming flight" is the user's "my upcoming flight"). A pointer lives in one
clause (``critique.guard.clauses``). States of settings are ``critique.guard.device_states``.
"""

from __future__ import annotations

import re

from critique.guard import clauses, person
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

DOUBT = re.compile(r"\b(?:whether|if|check|verify|ask|confirm|might|may|could|possibly|perhaps|maybe|"
                    r"any|each|every|suppose|usually|typically|generally|normally|often|"
                    r"sometimes|indicates?|means|when|unless)\b|\?", re.I)
"""A question, a condition or a rule in general ('the status bar usually shows …'): no claim
about this user's device."""


def record_pointers(text: str, supervision: Supervision, public_codes: frozenset[str],
                    public_text: str, resolved: frozenset[str] = frozenset()) -> list[tuple[int, int]]:
    """Spans of pointers at one record of a kind the reference acts on by an unseen identifier
    (kinds in ``resolved`` are left to the records' own resolution: ``critique.guard.record_refs``)."""
    kinds = set()
    for action in supervision.reference_actions:
        for key, value in action.arguments.items():
            values = [v.lower() for v in scalar_values(value)]
            if values and any(re.sub(r"\W", "", v) not in public_codes for v in values):
                kinds |= {k for k, parts in _KEYS.items() if any(p in key.lower() for p in parts)}
    kinds -= resolved
    if not kinds:
        return []
    out = []
    for a, b in clauses.spans(text):
        for m in POINTER.finditer(text, a, b):
            if m.group("of"):
                hit = True
            else:
                hit = _NOUN[m.group("noun").lower()] in kinds
            if hit and not person.said(m.group(0), public_text):
                out.append(m.span())
    return out
