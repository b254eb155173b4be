"""The types the value readers share: a token, a reading of tokens as one value, a text's
values, and the small helpers every reader uses (the gap between two tokens, a word's
frequency). They live below the readers (``critique.guard.values``, ``critique.guard.value_dates``,
``critique.guard.value_words``) so the readers import them without importing each other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from wordfreq import zipf_frequency

from critique.guard import number_words as nw
from critique.guard.canonical import Canonical

DateKey = tuple[int | None, int, int]

ORDINAL_SUFFIX = re.compile(r"^(?P<n>\d{1,2})(?:st|nd|rd|th|er|e|eme|o|a|º|ª)$", re.I)
TIME_TOKEN = re.compile(r"^(?P<h>\d{1,2})(?:(?P<ampm>am|pm|a|p)|h(?P<m>\d{2})?|uhr)$", re.I)


@dataclass(frozen=True)
class Token:
    index: int
    start: int
    end: int
    text: str

    @property
    def lower(self) -> str:
        return self.text.lower()


@dataclass(frozen=True)
class Reading:
    """Tokens ``first..last`` (inclusive) read as one value."""

    first: int
    last: int
    kind: str  # code | number | date | time
    key: object

    def covers(self, i: int) -> bool:
        return self.first <= i <= self.last


@dataclass
class TextValues:
    canon: Canonical
    tokens: list[Token]
    runs: list[tuple[int, int]]
    value_like: set[int] = field(default_factory=set)
    readings: list[Reading] = field(default_factory=list)
    spelled: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Token → the stretch spelled out one piece at a time (letters, NATO words, number words)."""
    groups: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Token → its group of glued digit groups (``10/05/2024``, ``0.7``)."""

    decoded: dict[int, str] = field(default_factory=dict)
    """Token → the character it spells (a digit word, a NATO word)."""

    def whole(self, i: int) -> tuple[int, int] | None:
        """The stretch token ``i`` may be explained by only as a whole, if any."""
        return self.spelled.get(i) or self.groups.get(i)

    def run_of(self, i: int) -> tuple[int, int]:
        return next(r for r in self.runs if r[0] <= i <= r[1])

    def span(self, first: int, last: int) -> tuple[int, int]:
        """Canonical character span of tokens ``first..last``."""
        return self.tokens[first].start, self.tokens[last].end


@lru_cache(maxsize=50000)
def word_zipf(word: str) -> float:
    w = word.lower()
    return max(zipf_frequency(w, lang) for lang in nw.LANGUAGES)


def gap(s: str, a: Token, b: Token) -> str:
    """The text between two tokens."""
    return s[a.end:b.start]
