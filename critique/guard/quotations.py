"""Quotations of a supervision text: five words in a row of a reference argument's free text,
an outcome check or the hidden instructions that the view and ``p0`` do not say — also when
each word is spelled out letter by letter. A quotation carries the answer whatever its values."""

from __future__ import annotations

from functools import lru_cache

from critique.guard import person
from critique.guard import values as vs
from envs.base import Supervision, scalar_values

STOP = set("""a about above after again all also an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from further
had has have having he her here hers him his how i if in into is it its itself just me more most my
no nor not now of off on once only or other our out over own same she should so some such than that
the their them then there these they this those through to too under until up very was we were what
when where which while who whom why will with would you your yours yourself""".split())

def stem(word: str) -> str:
    """A crude English stem, enough to match 'refunded' with 'refund' and 'flights' with 'flight'."""
    w = word.lower()
    for suffix in ("ations", "ation", "ings", "ing", "edly", "ed", "ies", "es", "s", "ly"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            return w[: -len(suffix)]
    return w



class Quotations:
    """The supervision's five-word windows the tested model has not read, ready to find."""

    def __init__(self, supervision: Supervision, public_parts: list[str]):
        public_grams: set[tuple[str, ...]] = set()
        for part in public_parts:
            public_grams |= _grams(part)
        self.secret_grams = {g for text in _supervision_texts(supervision) for g in _grams(text)} - public_grams

    def find(self, tv: vs.TextValues) -> list[tuple[tuple[int, int], str]]:
        """Five words in a row of a supervision text (a reference argument's free text, an
        outcome, the hidden instructions) that the view and ``p0`` do not say — also when each
        word is spelled out letter by letter."""
        if not self.secret_grams:
            return []
        words = _units(tv)
        spans: list[tuple[int, int]] = []
        quoted: list[str] = []
        for i in range(len(words) - GRAM + 1):
            gram = tuple(w for w, _ in words[i:i + GRAM])
            if gram in self.secret_grams:
                spans.append((words[i][1][0], words[i + GRAM - 1][1][1]))
                quoted.append(" ".join(gram))
        merged = merge(spans)
        return [(span, next(q for (a, b), q in zip(spans, quoted) if span[0] <= a < span[1])) for span in merged]

GRAM = 5
"""Words in a row that make a quotation of a supervision text."""


def _supervision_texts(supervision: Supervision) -> list[str]:
    texts = [v for a in supervision.reference_actions for v in scalar_values(a.arguments) if len(v.split()) >= GRAM]
    return texts + list(supervision.expected_outcomes) + [supervision.hidden_user_instructions]


@lru_cache(maxsize=1024)
def _grams(text: str) -> frozenset[tuple[str, ...]]:
    """Stemmed five-word windows of a text with two or more content words."""
    words = [w for w, _ in _units(vs.analyse(text))] if text else []
    windows = (tuple(words[i:i + GRAM]) for i in range(len(words) - GRAM + 1))
    return frozenset(g for g in windows if sum(w not in STOP and w != person.PERSON for w in g) >= 2)


def _units(tv: vs.TextValues) -> list[tuple[str, tuple[int, int]]]:
    """The text's words with their spans; a word spelled out letter by letter is one word, a
    pronoun or possessive of any person one placeholder (``critique.guard.person``: the hidden
    instructions' "your trip" is the opening's "my trip")."""
    out: list[tuple[str, tuple[int, int]]] = []
    i = 0
    while i < len(tv.tokens):
        stretch = tv.spelled.get(i)
        if stretch and stretch[0] == i:
            word = "".join(tv.decoded.get(k, tv.tokens[k].lower) for k in range(stretch[0], stretch[1] + 1))
            out.append((stem(word), tv.span(*stretch)))
            i = stretch[1] + 1
            continue
        tok = tv.tokens[i]
        if tok.lower in person.USER_NOUNS and out and out[-1][0] in ("the", "this", "that"):
            out[-1] = (person.PERSON, (out[-1][1][0], tok.end))  # 'the user' is 'I' of the opening
        else:
            out.append((person.word(tok.lower) or stem(tok.lower), (tok.start, tok.end)))
        i += 1
    return out



def merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping or touching spans as one."""
    merged: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged
