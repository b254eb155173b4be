"""Every value-like span of a text, and every value each span can be read as.

The leak guard's value rule is an allow-list: a value-like span of the critic's rationale passes
only if one of its readings is something the tested model has already seen. So this module
answers two questions about any text, the same way for the rationale and for the public texts:

* which tokens are *value-like* — anything with a digit, an ID-shaped code, a name or a
  capitalised non-dictionary word, a number or date written in words (any of
  :data:`critique.guard.number_words.LANGUAGES`, or Chinese numerals), characters spelled one by
  one (``E-H-G-L-P-3``, ``c r e d i t``, NATO words, digit words);
* what each span can be *read* as (:class:`Reading`): a code key (letters and digits only,
  lower case: ``W 237-8156`` → ``w2378156``), a number (thousands and decimal marks of either
  convention, currency codes glued or apart), a date ``(year or None, month, day)`` or a time
  of day in minutes.

Tokens are joined into *runs* across the separators an ID or a number can carry: tight ones
(``-_./#:,'``) always, loose ones (spaces, ``, ``, `` - ``, a line break) between fragments
(single characters, digit groups, short capitals). A token inside characters spelled one by one
is explained only by a reading of the whole spelled stretch, never by itself (the ``3`` of
``E H G L P 3`` is not "a small number").
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from wordfreq import zipf_frequency

from critique.guard import number_words as nw
from critique.guard import value_dates, value_words
from critique.guard.canonical import canonical, fold_accents
from critique.guard.value_types import ORDINAL_SUFFIX, DateKey, Reading, TextValues, Token, gap, word_zipf

_TOKEN = re.compile(r"[^\W_]+")
_TIGHT = re.compile(r"[-_./#:,'+|\\]{1,2}")
_LOOSE = re.compile(r"(?=[\s\S])[ \t]{0,3}(?:[-_.,/|·•][ \t]{0,3}){0,3}(?:\n[ \t]*)?")
"""Between two fragments: spaces, up to three separators (``2 _ - _ 0``), one line break —
unless the next line opens with a list number (``3.``), which is no part of this line's value."""
_LIST_OPENER = re.compile(r"\d{1,2}[.)]\s")
_SENTENCE_END = re.compile(r"(?:^|[.!?;\n]|^\W*)[\s\"'(\[*>#-]*$")
"""Before a sentence's first word (not after a colon: 'passenger: Ivan Garcia' names someone)."""
_CURRENCY = re.compile(r"^(?P<pre>[A-Za-z]{3})?(?P<num>\d+)(?P<post>[A-Za-z]{3})?$")
STRUCTURAL = re.compile(r"(?:e[1-6]|p[01])", re.I)
"""The critique's own vocabulary: error flags E1–E6, the plans p0 and p1."""
GRADES = {0.0, 0.2, 0.4, 0.6, 0.8, 1.0}
_VERB_FOLLOWERS = re.compile(r"\s+(?:the|a|an|your|this|that|these|those|its|it|each|every|all|any|up|out|with|to|before|after)\b")
NAME_ZIPF = 4.0
"""A capitalised word inside a sentence rarer than this in English is read as a name."""



# ---- word classes ----------------------------------------------------------------------------

def _is_fragment(tok: str) -> bool:
    """A piece an ID or number can be split into with spaces: one character, a digit group, a
    short code with a digit, short capitals, a digit word ('nine')."""
    return (len(tok) == 1 or tok.isdigit() or (any(c.isdigit() for c in tok) and len(tok) <= 8)
            or (tok.isalpha() and tok.isupper() and len(tok) <= 4) or nw.digit_word(tok) is not None
            or tok.lower() in nw.SPOKEN_SEPARATORS)


def _sentence_start(text: str, at: int) -> bool:
    return _SENTENCE_END.search(text[max(0, at - 6):at]) is not None


_NO_VOWEL = re.compile(r"[b-df-hj-np-tv-xz]+")


def _latin(word: str) -> bool:
    return all(c.isascii() or unicodedata.name(c, "").startswith("LATIN") for c in word)


def _value_like_word(tok: Token, text: str) -> bool:
    t = tok.text
    if any(c.isdigit() for c in t):
        return True
    if not t.isalpha() or not _latin(t):
        return False  # a word of another script is text; its number words are read apart
    if t.isupper() and len(t) >= 2:
        return zipf_frequency(t.lower(), "en") < 3.5
    if t[0].isupper() and (len(t) > 1 and not t[1:].islower()):
        return True  # iPhone-like mixed case is a name or a code
    if t[0].isupper():
        if _sentence_start(text, tok.start):  # 'Tighten the plan': capitalised as a first word
            return word_zipf(t) < 2.0
        if _VERB_FOLLOWERS.match(text, tok.end):
            return False  # 'Tighten the plan' after a missing full stop: a verb, not a name
        others, lang = max((zipf_frequency(t.lower(), lang), lang) for lang in nw.LANGUAGES if lang != "en")
        if others >= NOUN_ZIPF and _written_in(text, tok, lang):
            return False  # 'Dreißig Aufrufe sind zu viele': a German noun in a German sentence
        return zipf_frequency(t.lower(), "en") < NAME_ZIPF and others < 4.0  # 'Kunde' is a word
    return len(t) >= 3 and t.isascii() and _NO_VOWEL.fullmatch(t.lower()) is not None  # 'hglp' 


NOUN_ZIPF = 3.0
"""A capitalised word this common in the language its sentence is written in is a noun there."""
_WORD = re.compile(r"[^\W\d_]{2,}")


def _written_in(text: str, tok: Token, lang: str) -> bool:
    """Most lower-case words around ``tok`` (its sentence, up to six) are more common in
    ``lang`` than in English: the sentence is written in ``lang``."""
    head = text[max(0, tok.start - 60):tok.start]
    head = re.split(r"[.!?\n]", head)[-1]
    tail = re.split(r"[.!?\n]", text[tok.end:tok.end + 60])[0]
    around = [w for w in _WORD.findall(head)[-3:] + _WORD.findall(tail)[:3] if w.islower()]
    if len(around) < 2:
        return False
    votes = sum(zipf_frequency(w, lang) > zipf_frequency(w, "en") for w in around)
    return votes * 2 > len(around)


# ---- numbers written with digits -------------------------------------------------------------

def digit_readings(parts: list[str], seps: list[str]) -> set[float]:
    """A run of digit groups read as a number in either convention: ``1,270.50`` and
    ``1.270,50`` are both 1270.5; ``1 270`` is 1270; ``7.5`` is 7.5."""
    if not parts or not all(p.isdigit() for p in parts):
        return set()
    if len(parts[0]) > 1 and parts[0].startswith("0") and not (len(parts) == 2 and seps[0].strip() in (".", ",")):
        return set()  # '010', '001 5': a code with leading zeros, not a number
    out: set[float] = set()
    if len(parts) == 1:
        return {float(parts[0])}
    seps = [s.strip() or " " for s in seps]
    for thousands, decimal in ((",", "."), (".", ","), (" ", ","), (" ", "."), ("'", ".")):
        ok = True
        number = parts[0]
        for k, (sep, part) in enumerate(zip(seps, parts[1:])):
            last = k == len(parts) - 2
            if sep == thousands and len(part) == 3:
                number += part
            elif sep == decimal and last:
                number += "." + part
            else:
                ok = False
                break
        if ok:
            out.add(float(number))
    return out


@lru_cache(maxsize=1)
def currency_codes() -> frozenset[str]:
    """ISO 4217 codes (CLDR via babel)."""
    from babel.numbers import list_currencies

    return frozenset(c.lower() for c in list_currencies())


def _currency_number(tok: str) -> float | None:
    """``USD1270`` / ``1270EUR`` → 1270 (a currency code glued to the number)."""
    m = _CURRENCY.match(tok)
    if not m or not (m.group("pre") or m.group("post")):
        return None
    code = (m.group("pre") or m.group("post")).lower()
    return float(m.group("num")) if code in currency_codes() else None


# ---- the analysis ----------------------------------------------------------------------------

def analyse(text: str) -> TextValues:
    """The text's tokens, runs, value-like tokens and readings (cached per text)."""
    return _analyse(text)


@lru_cache(maxsize=2048)
def _analyse(text: str) -> TextValues:
    canon = canonical(text)
    s = canon.text
    tokens = [Token(i, m.start(), m.end(), m.group(0)) for i, m in enumerate(_TOKEN.finditer(s))]
    tv = TextValues(canon, tokens, _runs(s, tokens))
    for tok in tokens:
        if _value_like_word(tok, s):
            tv.value_like.add(tok.index)
    _title_phrases(tv)
    _spelled(tv)
    _snake(tv)
    _digit_groups(tv)
    _code_readings(tv)
    value_words.number_word_readings(tv)
    value_words.nato_readings(tv)
    value_dates.date_time_readings(tv)
    value_dates.hour_word_times(tv)
    value_dates.cjk_readings(tv)
    _scientific(tv)
    value_words.decoded_runs(tv)
    return tv


_SCIENTIFIC = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][+-]?\d+(?![\w.])")


def _scientific(tv: TextValues) -> None:
    """``1.5E+02`` is 150, one value over its three tokens."""
    for m in _SCIENTIFIC.finditer(tv.canon.text):
        inside = [t.index for t in tv.tokens if m.start() <= t.start < m.end()]
        if inside:
            first, last = inside[0], inside[-1]
            tv.readings.append(Reading(first, last, "number", float(m.group(0))))
            for k in inside:
                tv.groups[k] = (first, last)
                tv.value_like.add(k)


def _runs(s: str, tokens: list[Token]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for tok in tokens:
        if runs:
            prev = tokens[runs[-1][1]]
            between = gap(s, prev, tok)
            tight = _TIGHT.fullmatch(between) is not None
            loose = _LOOSE.fullmatch(between) is not None and _is_fragment(prev.text) and _is_fragment(tok.text) \
                and not ("\n" in between and _LIST_OPENER.match(s, tok.start))
            if tight or loose:
                runs[-1] = (runs[-1][0], tok.index)
                continue
        runs.append((tok.index, tok.index))
    return runs


def _title_phrases(tv: TextValues) -> None:
    """'Ivan Garcia', 'Premium Plan', 'Smartphone Pro Max': capitalised words in a row inside a
    sentence name a thing, even when each word alone is ordinary; read as their joined key."""
    s = tv.canon.text
    toks = tv.tokens
    i = 0
    while i < len(toks):
        j = i
        while (j + 1 < len(toks) and _capitalised(toks[j + 1].text) and _capitalised(toks[j].text)
               and gap(s, toks[j], toks[j + 1]) == " "):
            j += 1
        if j > i and not _sentence_start(s, toks[i].start) and \
                any(zipf_frequency(t.lower, "en") < 5.0 for t in toks[i:j + 1]):
            tv.value_like.update(range(i, j + 1))
            for k in range(i, j + 1):
                tv.groups.setdefault(k, (i, j))
            tv.readings.append(Reading(i, j, "code", "".join(t.lower for t in toks[i:j + 1])))
        i = j + 1


def _capitalised(word: str) -> bool:
    return len(word) > 1 and word[0].isupper() and word[1:].islower() and word.isalpha()


def _piece(tok: Token) -> bool:
    """One spelled character or two: a letter or digit alone, a pair of capitals (``OG``), a
    digit word ('four', 'neun') or a separator said in words ('underscore')."""
    t = tok.text
    return (len(t) == 1 or (len(t) == 2 and t.isalpha() and t.isupper()) or nw.digit_word(t) is not None
            or t.lower() in nw.SPOKEN_SEPARATORS)


def _spelled(tv: TextValues) -> None:
    """Three or more spelled characters in a row inside a run (``E H G``, ``four O G six``):
    characters written out one by one."""
    for first, last in tv.runs:
        i = first
        while i <= last:
            j = i
            while j + 1 <= last and _piece(tv.tokens[j + 1]):
                j += 1
            if _piece(tv.tokens[i]) and j - i >= 2 and not _counting(tv, i, j) and not _numeral(tv, i, j) \
                    and any(len(t.text) == 1 for t in tv.tokens[i:j + 1]):
                # the stretch with the multi-character pieces it is glued to ('c r e d i t _ 7815')
                stretch = (first, last)
                for k in range(stretch[0], stretch[1] + 1):
                    tv.spelled[k] = stretch
                    tv.value_like.add(k)
                for k in range(i, j + 1):
                    word = tv.tokens[k].text
                    digit = nw.digit_word(word) if len(word) > 1 else None
                    if digit is not None:
                        tv.decoded[k] = digit
                    elif word.lower() in nw.SPOKEN_SEPARATORS:
                        tv.decoded[k] = ""
                tv.readings.append(Reading(first, last, "code", "".join(t.lower for t in tv.tokens[first:last + 1])))
                tv.readings.append(Reading(i, j, "code", "".join(t.lower for t in tv.tokens[i:j + 1])))
                break
            i = j + 1


def _country_code(s: str, first: Token, at_first: bool, gap: str) -> bool:
    """'+1 555-123-2002': a country code is not part of the number it prefixes."""
    return at_first and gap == " " and s[first.start - 1:first.start] == "+"


def _digit_groups(tv: TextValues) -> None:
    """Digit groups glued by separators (``10/05/2024``, ``555-123-4567``, ``1,270.50``,
    ``237 8156``) are one value: each group is explained only by a reading of all of it."""
    s = tv.canon.text
    for first, last in tv.runs:
        i = first
        while i <= last:
            j = i
            while (j + 1 <= last and tv.tokens[j].text.isdigit() and tv.tokens[j + 1].text.isdigit()
                   and re.fullmatch(r"[-_./:,'\\]{1,2}| ", gap(s, tv.tokens[j], tv.tokens[j + 1]))
                   and not _country_code(s, tv.tokens[i], j == i, gap(s, tv.tokens[j], tv.tokens[j + 1]))):
                j += 1
            if j > i and tv.tokens[i].text.isdigit():
                for k in range(i, j + 1):
                    tv.groups[k] = (i, j)
            i = j + 1


def _snake(tv: TextValues) -> None:
    """``ivan_m``, ``h_muller_``, ``mei_brown_7075``: words glued by underscores are a code,
    read whole (a public tool or parameter name passes as the code it is)."""
    s = tv.canon.text
    for first, last in tv.runs:
        i = first
        while i <= last:
            j = i
            while j + 1 <= last and "_" in gap(s, tv.tokens[j], tv.tokens[j + 1]) and \
                    _TIGHT.fullmatch(gap(s, tv.tokens[j], tv.tokens[j + 1])):
                j += 1
            edge = s[tv.tokens[j].end:tv.tokens[j].end + 1] == "_" or s[tv.tokens[i].start - 1:tv.tokens[i].start] == "_"
            if j > i or edge:
                for k in range(i, j + 1):
                    if k not in tv.spelled:
                        tv.groups[k] = (i, j)
                        tv.value_like.add(k)
            i = j + 1


def _numeral(tv: TextValues, i: int, j: int) -> bool:
    """``0.2/1.0``, ``1.2.3``, ``5/6/24``: single digits glued by number or date marks are a
    numeral, not characters spelled one by one (its digit group is read whole anyway)."""
    s = tv.canon.text
    toks = tv.tokens[i:j + 1]
    return all(t.text.isdigit() for t in toks) and all(
        gap(s, a, b).strip() in (".", "/", ":", ",") for a, b in zip(toks, toks[1:]))


def _counting(tv: TextValues, i: int, j: int) -> bool:
    """``1, 2, 3`` counts steps; it spells nothing."""
    texts = [t.text for t in tv.tokens[i:j + 1]]
    if not all(t.isdigit() for t in texts):
        return False
    values = [int(t) for t in texts]
    return values == list(range(values[0], values[0] + len(values)))


def _code_readings(tv: TextValues) -> None:
    s = tv.canon.text
    for first, last in tv.runs:
        for i in range(first, last + 1):
            for j in range(i, min(last, i + 9) + 1):
                parts = [t.text for t in tv.tokens[i:j + 1]]
                key = "".join(p.lower() for p in parts)
                tv.readings.append(Reading(i, j, "code", key))
                seps = [gap(s, a, b) for a, b in zip(tv.tokens[i:j], tv.tokens[i + 1:j + 1])]
                for value in digit_readings(parts, seps):
                    tv.readings.append(Reading(i, j, "number", value))
        for i in range(first, last + 1):
            tok = tv.tokens[i].text
            glued = _currency_number(tok)
            if glued is not None:
                tv.readings.append(Reading(i, i, "number", glued))
                # 'USD1270.50': the glued code and its decimals
                if i + 1 <= last and gap(s, tv.tokens[i], tv.tokens[i + 1]) in (".", ",") and tv.tokens[i + 1].text.isdigit():
                    tv.readings.append(Reading(i, i + 1, "number", float(f"{int(glued)}.{tv.tokens[i + 1].text}")))
                    tv.groups[i] = tv.groups[i + 1] = (i, i + 1)  # its decimals are not a number apart
            if glued is not None and i > first and gap(s, tv.tokens[i - 1], tv.tokens[i]) in (".", ",") \
                    and tv.tokens[i - 1].text.isdigit() and _CURRENCY.match(tok).group("post"):
                # '1270.50EUR': the number before the glued decimals
                tv.readings.append(Reading(i - 1, i, "number", float(f"{tv.tokens[i - 1].text}.{int(glued)}")))
                tv.groups[i - 1] = tv.groups[i] = (i - 1, i)
            m = ORDINAL_SUFFIX.match(tok)
            if m:
                tv.readings.append(Reading(i, i, "number", float(m.group("n"))))


_GRADE_CUE = re.compile(r"(?:grade|graded|score|scored|rating|rated|rate|mark|put (?:this|the|it)\b.{0,20}\bat)\W{0,3}(?:of|is|at|as|:|=|would\s+\w+\s+to)?\W{0,3}$", re.I)
_FRACTION = re.compile(r"(?P<n>\d+(?:\.\d+)?)\s*(?:/|out of|of)\s*(?P<m>\d+(?:\.\d+)?)$", re.I)


def is_grade(tv: TextValues, i: int) -> bool:
    """A grade or score of the plan: a number in [0, 1] (``0.7``), a fraction of 1, 5, 10 or
    100 (``3/10``, ``0.5/1.0``, ``4 out of 5``), or a small number after 'grade'/'score'."""
    s = tv.canon.text
    if i in tv.spelled:
        return False
    first, last = tv.groups.get(i, (i, i))
    a, b = tv.span(first, last)
    written = s[a:b]
    whole = re.fullmatch(r"(?!0\d)\d+(?:\.\d+)?", written)  # '01' is a code, '0.1' a grade
    value = float(written) if whole else None
    if value is not None and 0 <= value <= 1 and len(written) <= 4:
        return True
    if re.fullmatch(r"\d+(?:\.\d+)?(?:/\d+(?:\.\d+)?)+", written):  # '0.7/1.0', '3/10'
        numbers = [float(x) for x in written.split("/")]
        if all(d in (1.0, 5.0, 10.0, 100.0) for d in numbers[1:]) and numbers[0] <= numbers[1]:
            return True
    tail = s[b:b + 16]
    m = re.match(r"\s*(?:/|out of)\s*(\d+(?:\.\d+)?)", tail, re.I)
    if value is not None and m and float(m.group(1)) in (1.0, 5.0, 10.0, 100.0) and value <= float(m.group(1)):
        return True
    head = s[max(0, a - 24):a]
    fraction = _FRACTION.search(head + written)
    if fraction and float(fraction.group("m")) in (1.0, 5.0, 10.0, 100.0) and float(fraction.group("n")) <= float(fraction.group("m")):
        return True
    return value is not None and value <= 10 and _GRADE_CUE.search(head) is not None


# ---- what a public text states ---------------------------------------------------------------

@dataclass(frozen=True)
class PublicValues:
    """Every reading of a public text, by kind, and its words."""

    codes: frozenset[str]
    numbers: frozenset[float]
    dates: frozenset[DateKey]
    times: frozenset[int]
    words: frozenset[str]

    def __or__(self, other: "PublicValues") -> "PublicValues":
        return PublicValues(self.codes | other.codes, self.numbers | other.numbers,
                            self.dates | other.dates, self.times | other.times, self.words | other.words)

    def has(self, r: Reading) -> bool:
        if r.kind == "code":
            key = str(r.key)
            return key in self.codes or (len(key) >= 4 and any(key in c for c in self.long_codes))
        if r.kind == "number":
            return any(abs(n - float(r.key)) < 1e-6 for n in self.numbers)
        if r.kind == "time":
            return r.key in self.times
        if r.kind == "numbers":  # several numbers in one run of words: all of them public
            return all(any(abs(n - v) < 1e-6 for n in self.numbers) for v in r.key)
        if r.kind == "date":  # month 0: a day alone ('the ninth')
            y, m, d = r.key
            return any((m == 0 or dm == m) and dd == d and (y is None or dy is None or dy == y)
                       for dy, dm, dd in self.dates)
        return False

    @property
    def long_codes(self) -> frozenset[str]:
        return self._long()

    def _long(self) -> frozenset[str]:
        cached = self.__dict__.get("_long_cache")
        if cached is None:
            cached = frozenset(c for c in self.codes if len(c) >= 5 and any(ch.isdigit() for ch in c))
            object.__setattr__(self, "_long_cache", cached)
        return cached


@lru_cache(maxsize=512)
def public_values(text: str) -> PublicValues:
    """Parsed once per text: a policy is shared by every task of its domain."""
    tv = analyse(text)
    by_kind: dict[str, set] = {"code": set(), "number": set(), "date": set(), "time": set()}
    for r in tv.readings:
        if r.kind == "numbers":
            by_kind["number"].update(r.key)
        else:
            by_kind[r.kind].add(r.key)
    for tok in tv.tokens:
        by_kind["code"].add(tok.lower)
        if tok.text.isdigit():
            by_kind["number"].add(float(tok.text))
    for a, b, c in zip(tv.tokens, tv.tokens[1:], tv.tokens[2:] + [None]):  # 'John Smith' → johnsmith
        if a.text.isalpha() and b.text.isalpha() and gap(tv.canon.text, a, b) == " ":
            by_kind["code"].add(a.lower + b.lower)
            if c is not None and c.text.isalpha() and gap(tv.canon.text, b, c) == " ":
                by_kind["code"].add(a.lower + b.lower + c.lower)
    words = {fold_accents(t.lower) for t in tv.tokens if t.text.isalpha()}
    return PublicValues(frozenset(by_kind["code"]), frozenset(by_kind["number"]),
                        frozenset(by_kind["date"]), frozenset(by_kind["time"]), frozenset(words))
