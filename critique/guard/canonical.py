"""One canonical spelling of a text, with a map back to the original characters.

A value can hide in how it is typed: full-width digits, zero-width characters or soft hyphens
inside an ID, Cyrillic or Greek look-alike letters, HTML entities, Markdown emphasis around a
part of it. The leak guard reads the canonical text and redacts in the original, so every
canonical character remembers which original characters it came from.

The steps, in order: HTML entities and URL escapes (``%33``) of letters and digits decoded; Unicode NFKC (full-width and compatibility forms);
format characters (category ``Cf``: zero-width spaces and joiners, soft hyphens, bidi marks)
and Markdown emphasis marks (``*``, `````, ``~``) dropped; confusable letters folded to their
ASCII look-alike with Unicode's confusables table (the ``confusable_homoglyphs`` package ships
it), keeping the letter's case where the table allows; dashes and spaces of every kind made
``-`` and `` ``.
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

_ENTITY = re.compile(r"&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]{1,30});")
_EMPHASIS = set("*`~")


@lru_cache(maxsize=1)
def confusable_fold() -> dict[str, str]:
    """Non-ASCII characters that Unicode lists as confusable with one ASCII letter or digit."""
    from confusable_homoglyphs.utils import load

    fold: dict[str, str] = {}
    for char, entries in load("confusables.json").items():
        if len(char) != 1 or char.isascii() or "\u2e80" <= char <= "\u9fff":
            continue  # CJK characters (〇 is a zero, not an O) stay as they are
        ascii_twins = [e["c"] for e in entries if len(e["c"]) == 1 and e["c"].isascii() and e["c"].isalnum()]
        if not ascii_twins:
            continue
        same_case = [c for c in ascii_twins if c.isalpha() and c.isupper() == char.isupper()]
        letters = [c for c in ascii_twins if c.isalpha()]
        twin = (same_case or letters or ascii_twins)[0]
        # the table folds I and l together; an upper-case look-alike of 'l' is an 'I'
        fold[char] = "I" if twin == "l" and char.isupper() else twin
    return fold


@dataclass(frozen=True)
class Canonical:
    """``text`` is the canonical form; ``starts[i]``/``ends[i]`` are the original character
    range that canonical character ``i`` came from."""

    original: str
    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The original range a canonical range ``[start, end)`` covers."""
        if start >= end:
            at = self.starts[start] if start < len(self.starts) else len(self.original)
            return at, at
        return self.starts[start], self.ends[end - 1]


_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")


def _percent(text: str, i: int) -> str | None:
    """``%33`` → ``3`` inside a code (``12%33%35``): URL escapes of letters and digits, when
    glued to another escape or to a letter or digit."""
    m = _PERCENT.match(text, i)
    if not m:
        return None
    ch = chr(int(m.group(1), 16))
    glued = (i > 0 and text[i - 1].isalnum()) or _PERCENT.match(text, m.end()) is not None or \
        (m.end() < len(text) and text[m.end()].isalnum() and i > 0 and text[i - 1] == "%")
    return ch if ch.isascii() and ch.isalnum() and glued else None


def _pieces(text: str):
    """(original start, original end, replacement) for every original character, entity or
    URL escape."""
    i = 0
    while i < len(text):
        decoded = _percent(text, i) if text[i] == "%" else None
        if decoded is not None:
            yield i, i + 3, decoded
            i += 3
            continue
        m = _ENTITY.match(text, i) if text[i] == "&" else None
        if m:
            decoded = html.unescape(m.group(0))
            if decoded != m.group(0):
                yield i, m.end(), decoded
                i = m.end()
                continue
        yield i, i + 1, text[i]
        i += 1


@lru_cache(maxsize=4096)
def canonical(text: str) -> Canonical:
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for a, b, piece in _pieces(text):
        for ch in unicodedata.normalize("NFKC", piece):
            if ch in _EMPHASIS or unicodedata.category(ch) == "Cf":
                continue
            if not ch.isascii():
                if unicodedata.decimal(ch, None) is not None:
                    ch = str(unicodedata.decimal(ch))  # ७, ٣, ๕: a digit of another script
                elif unicodedata.category(ch) == "Pd":
                    ch = "-"
                elif ch.isspace():
                    ch = " "
            out.append(ch)
            starts.append(a)
            ends.append(b)
    _fold_lookalikes(out)
    _cjk_digits(out)
    return Canonical(text, "".join(out), tuple(starts), tuple(ends))


_WORD = re.compile(r"[^\W_]+")
_CJK_DIGITS = "零〇一二三四五六七八九"
_CJK_RUN = re.compile(r"[零〇一二三四五六七八九]{2,}")
_CJK_PLACES = set("十百千万亿點点")


def _fold_lookalikes(chars: list[str]) -> None:
    """Look-alike letters folded inside a token that is written in Latin letters or digits
    anyway (``ЕНGLР3``), or that is made of look-alikes only (``АРТ``); a word of Russian or
    Greek (``три``) stays as written."""
    fold = confusable_fold()
    text = "".join(chars)
    for m in _WORD.finditer(text):
        word = m.group(0)
        foreign = [c for c in word if not c.isascii()]
        if not foreign or not all(c in fold for c in foreign) and not any(c.isascii() for c in word):
            continue
        for i in range(m.start(), m.end()):
            if chars[i] in fold:
                chars[i] = fold[chars[i]]


def _cjk_digits(chars: list[str]) -> None:
    """``七〇一五`` → ``7015``: Chinese numerals written digit by digit (no 十/百/千 between)."""
    text = "".join(chars)
    for m in _CJK_RUN.finditer(text):
        if text[m.start() - 1:m.start()] in _CJK_PLACES or text[m.end():m.end() + 1] in _CJK_PLACES:
            continue  # 二十四 is positional: read by the numeral reader, not digit by digit
        for i in range(m.start(), m.end()):
            chars[i] = str(_CJK_DIGITS.index(chars[i]) - 1 if chars[i] != "零" else 0)


def fold_accents(word: str) -> str:
    """``dólares`` → ``dolares``: month and number words compared without their accents."""
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))
