"""Where a clause ends, in every language the guard reads.

A phrase that points at a record ("the third order"), a state told of a setting ("airplane mode
is on") or an attribute told of a record lives inside one clause; the words on the far side of
a dash, a semicolon, a colon or a sentence end belong to another statement ("… the plan opens
first — list the purchases …" holds no "first purchase"). The boundaries are punctuation, so
they hold for every language alike: the sentence ends (``. ! ? …`` and the full-width ``。！？``),
the semicolon and the colon (``; :`` and ``；：``), a dash between words (canonical text writes
an em or en dash as `` - ``; an unspaced ``—`` or ``–`` too), the opening ``¿ ¡`` of Spanish, a bar or
a bullet between items (`` | ``, ``•``) and a line break. A point or a colon inside a number or a code (``1.5``, ``10:30``) ends nothing.
"""

from __future__ import annotations

import re

BREAK = re.compile(r"[.!?…;:](?=\s|$)|[。！？；：¿¡\n—–•]|\s[-|]+\s|(?<=\w)\s*-{2,}\s*(?=\w)")
"""One clause boundary."""


def spans(text: str) -> list[tuple[int, int]]:
    """The clauses of ``text`` as (start, end) spans, boundaries left out, empty ones skipped."""
    out, start = [], 0
    for m in BREAK.finditer(text):
        if text[start:m.start()].strip():
            out.append((start, m.start()))
        start = m.end()
    if text[start:].strip():
        out.append((start, len(text)))
    return out


def crosses(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` runs across a clause boundary."""
    return BREAK.search(text, start, end) is not None
