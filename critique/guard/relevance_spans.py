"""Which value spans the guard keeps: a bare number about the plan that no derivation reaches.

``critique.guard.relevance`` says what the supervision's derivations reach and when a number is
about the plan; this module reads a span of the critique's values (``critique.guard.values``) and
decides whether it is such a bare number: digits or number words only (a Chinese clause with
digits inside too), no date or time unless it is counted ('12-20 calls'), no currency beside
it, not record-shaped, not a piece of an ID pointed at ('ending in 85').
"""

from __future__ import annotations

import re

from critique.guard.relevance import (
    CURRENCY,
    STEP_BEFORE,
    UNIT_AFTER,
    UNIT_WORD,
    Relevance,
    about_the_plan,
    record_shaped,
)
from critique.guard.value_types import TextValues

_JOINER = re.compile(r"and|or|to|e|y|o|a|u|et|ou|und|oder|en|of|i")
"""Conjunctions between numbers in the languages the readers know ('3 e 4', '3 y 4')."""
_CJK_NUMERAL = re.compile(r"[0-9零〇一二两三四五六七八九十百千]+")
_LATIN_LETTER = re.compile(r"[A-Za-z\u00c0-\u024f]")


def could_carry(tv: TextValues, i: int, first: int, last: int, relevance: Relevance, cued: bool) -> bool:
    """False only for a bare number (digits or number words, no currency, not record-shaped,
    not a piece of an ID pointed at) that no derivation of the supervision reaches."""
    numbers = bare_number(tv, i, first, last, cued)
    if numbers is None:
        return True
    a, b = tv.span(first, last)
    s = tv.canon.text
    written = s[a:b]
    if CURRENCY.search(s[max(0, a - 4):a]) or CURRENCY.search(written) or CURRENCY.match(s[b:b + 14].lstrip()):
        return True
    tok = tv.tokens[i]
    if _CJK_NUMERAL.search(tok.text) and not _LATIN_LETTER.search(tok.text):  # '第11步和第12步…': one token
        places = [(tok.start + m.start(), tok.start + m.end()) for m in _CJK_NUMERAL.finditer(tok.text)]
        contexts = [about_the_plan(s, x, y) for x, y in places]
        about = None if None in contexts else ("count" if "count" in contexts else "step")
    else:
        reading = [tv.span(r.first, r.last) for r in tv.readings if r.kind == "number" and r.covers(i)]
        ta, tb = min(reading, key=lambda x: x[1] - x[0]) if reading else (tok.start, tok.end)
        about = about_the_plan(s, a, b) or about_the_plan(s, ta, tb)
    if not about:
        return True  # a bare number about something else may be a record's (the guard has no DB)
    return any(record_shaped(n, written) or relevance.reaches(n, about) for n in numbers)

def bare_number(tv: TextValues, i: int, first: int, last: int, cued: bool) -> list[float] | None:
    """The values of a span that is only a number, or None (an ID, a date, a spelled code)."""
    if cued:
        return None
    stretch = tv.spelled.get(i)
    if stretch and not all(_JOINER.fullmatch(tv.tokens[k].lower) or any(
            r.kind in ("number", "numbers") and r.covers(k) and r.first >= stretch[0] and r.last <= stretch[1]
            for r in tv.readings) or UNIT_WORD.fullmatch(tv.tokens[k].text) for k in range(stretch[0], stretch[1] + 1)):
        return None  # characters spelled one by one, not a number in words ('nineteen', '3 e 4')
    numbers: list[float] = []
    a, b = tv.span(first, last)
    counted = STEP_BEFORE.search(tv.canon.text[max(0, a - 40):a]) or UNIT_AFTER.match(tv.canon.text, b)
    for r in tv.readings:
        if r.last < first or r.first > last:
            continue
        if r.kind in ("date", "time") and not counted:  # '12-20 calls' is a range, not a date
            return None
        if r.kind == "number" and r.first >= first and r.last <= last:
            numbers.append(float(r.key))
        elif r.kind == "numbers" and r.first >= first and r.last <= last:
            numbers += [float(v) for v in r.key]
    for k in range(first, last + 1):
        tok = tv.tokens[k]
        if k not in tv.value_like or tok.text.isdigit() or _JOINER.fullmatch(tok.lower) or UNIT_WORD.fullmatch(tok.text):
            continue
        if any(r.kind in ("number", "numbers") and r.covers(k) for r in tv.readings):
            continue
        if any(c.isdigit() for c in tok.text) and not _LATIN_LETTER.search(tok.text):
            numbers += [float(g) for g in re.findall(r"\d+", tok.text)]  # '第11步': CJK around digits
            continue
        return None
    return numbers or None
