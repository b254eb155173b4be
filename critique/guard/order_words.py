"""The order a sentence means, when it tells it as a constraint rather than as a list.

"B only after A", "don't B until you have A", "B? Not before A", "before you B, A", "the plan
tries to B too early; A first", "Solo debes B después de A", "B erst, nachdem A", "N'essaie pas
de B avant de A": the calls are written B then A, but the order they tell is A, then B. The
leak guard reads each sentence's mentions of calls in the order meant (``meant_order``) beside
the order written, so a constraint is an order like any other; and it cuts clauses at these
words (``CLAUSE_END``), so that each side of the constraint is read as a call of its own.
"""

from __future__ import annotations

import re

_AFTER = (r"(?:only\s+)?(?:after|once|until|till|unless|not\s+before|no\s+sooner\s+than|despu[eé]s\s+de|"
          r"hasta\s+que|nachdem|erst\s+wenn|apr[eè]s(?:\s+avoir)?|une\s+fois\s+que|dopo\s+(?:aver|che)|depois\s+de)")
_BEFORE = r"(?:before|prior\s+to|ahead\s+of|antes\s+de|bevor|vor|avant\s+de|avant\s+d'|prima\s+di)"
_NEGATION = re.compile(r"\b(?:don't|do\s+not|never|not|no|nunca|nicht|kein|ne|n'|pas|non)\b|n't\b", re.I)
_LATER = re.compile(r"\btoo\s+(?:early|soon)\b|\bprematurely\b|\bdemasiado\s+pronto\b|\bzu\s+früh\b|\btrop\s+tôt\b", re.I)
_FIRST = re.compile(r"\b(?:first|primero|zuerst|erst|d'abord|prima)\b", re.I)

_ELIDED = r"(?:\w{1,3}')?"
"""An elided word before a marker (French and Italian elision: qu'après, qu'avant)."""
CLAUSE_END = (rf"\s+(?:and\s+)?then\b|\s+(?:only\s+)?(?:after|before)\b|\s+{_ELIDED}{_AFTER}\b|\s+{_ELIDED}{_BEFORE}\b"
              r"|\s+too\s+(?:early|soon)\b|\s+first\b|\?|\s+que\b")
"""Where a clause that names one call ends: 'then', 'after', 'until', 'before', 'first' …, in
any of the languages, also after an elided word ('qu'après')."""
_UNIT = re.compile(r"(?:[^.!\n?]|\?(?=\s*(?:not|no|nicht|pas)\b))+", re.I)
"""A sentence; 'B? Not before A' is one."""
_MID_AFTER = re.compile(rf"\b{_AFTER}\b", re.I)
_MID_BEFORE = re.compile(rf"\b{_BEFORE}\b", re.I)
_LEAD = re.compile(rf"^\W*(?P<before>{_BEFORE})\b|^\W*(?P<after>{_AFTER})\b", re.I)


def _split(inside: list, at: int) -> list:
    """The mentions told after ``at`` first (a clause that names a call ends where the marker
    begins, so a mention is on the far side when it ends beyond it)."""
    return [m for m in inside if m[1] > at] + [m for m in inside if m[1] <= at]


def _unit_order(unit: str, start: int, inside: list) -> list:
    """The mentions of one sentence in the order it means."""
    if len(inside) < 2:
        return inside
    lead = _LEAD.match(unit)
    if lead:  # 'Before you B, A' tells A first; 'After you A, B' tells A first as written
        if lead.group("before"):
            cut = unit.find(",", lead.end())
            if cut > 0:
                at = start + cut
                return _split(inside, at)
        return inside
    later = _LATER.search(unit)
    if later:  # 'the plan tries to B too early; A first'
        at = start + later.end()
        return _split(inside, at)
    after = _MID_AFTER.search(unit)
    before = _MID_BEFORE.search(unit)
    if after and (not before or after.start() < before.start()):
        at = start + after.start()
        return _split(inside, at)
    if before and _NEGATION.search(unit[:before.start()]):  # "don't B before A": A first
        at = start + before.start()
        return _split(inside, at)
    first = _FIRST.search(unit)
    if first:  # 'A first, then B' as written; 'B, but A first' → A first
        at = start + first.start()
        ahead = [m for m in inside if m[0] < at]
        if ahead and ahead[-1] is not inside[0]:
            return [ahead[-1]] + [m for m in inside if m is not ahead[-1]]
    return inside


def meant_order(text: str, mentions: list) -> list:
    """Mentions ``(start, end, name)`` in the order the sentences mean."""
    out = []
    for unit in _UNIT.finditer(text):
        inside = [m for m in mentions if unit.start() <= m[0] < unit.end()]
        out += _unit_order(unit.group(0), unit.start(), inside)
    return out
