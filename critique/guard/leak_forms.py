"""Canonical forms for the leak guard: the many ways one value can be written.

A critic that leaks rarely copies a value byte for byte. Each finder here reads a text and
yields ``(start, end, key)`` spans, where ``key`` is the value's canonical form, so the guard
compares keys, never raw substrings:

* IDs — case, separators (spaces, hyphens, underscores) and a ``#`` prefix do not matter:
  ``#W2378156``, ``w 237 8156`` and ``W-2378156`` share the key ``w2378156``;
* numbers — thousands separators, ``$``/``USD``/``dollars``, decimals and English number words:
  ``$1,270.50``, ``1270.5 USD`` and ``twelve hundred seventy point five`` are all ``1270.5``;
* dates — ISO, day/month and month/day with slashes, dashes or dots, month names, ordinals:
  keys are ``(year or None, month, day)``;
* tool names — snake_case, camelCase, PascalCase, hyphens or spaced words: ``get user details``.
"""

from __future__ import annotations

import re
from typing import Iterator

Span = tuple[int, int]

# -- words and tokens ------------------------------------------------------------------------

_TOKEN = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def tokens(text: str) -> list[tuple[int, int, str]]:
    """Alphanumeric runs with their spans (case kept)."""
    return [(m.start(), m.end(), m.group(0)) for m in _TOKEN.finditer(text)]


def id_key(value: str) -> str:
    """``#W-23 78156`` → ``w2378156``: letters and digits only, lower case."""
    return re.sub(r"[^a-z0-9]", "", value.lower())


def looks_like_id(value: str) -> bool:
    """A code rather than a word or number: has a digit and a letter, or ``_``/``#``, or is an
    all-capitals code of four or more characters."""
    v = value.strip()
    if not v or " " in v.strip() and not re.search(r"\d", v):
        return False
    has_digit = bool(re.search(r"\d", v))
    has_alpha = bool(re.search(r"[A-Za-z]", v))
    return (has_digit and has_alpha) or "_" in v or v.startswith("#") or bool(re.fullmatch(r"[A-Z0-9]{4,}", v))


def joined_keys(text: str, max_tokens: int = 6, max_len: int = 40) -> set[str]:
    """Every run of up to ``max_tokens`` consecutive tokens joined as an ID key: what
    ``joined_spans`` could find in ``text``, as a set for fast membership tests."""
    toks = tokens(text)
    out: set[str] = set()
    for i in range(len(toks)):
        acc = ""
        for j in range(i, min(i + max_tokens, len(toks))):
            if j > i and not re.fullmatch(r"[\s\-_./#]{0,2}", text[toks[j - 1][1]:toks[j][0]]):
                break
            acc += toks[j][2].lower()
            if len(acc) > max_len:
                break
            out.add(acc)
    return out


def joined_spans(text: str, key: str, max_gap: int = 2) -> Iterator[Span]:
    """Where consecutive tokens of ``text``, joined across short separators (spaces, ``-``,
    ``_``, ``.``, ``/``, ``#``), spell ``key`` exactly (token boundaries on both ends)."""
    toks = tokens(text)
    for i, (start, _, _) in enumerate(toks):
        acc = ""
        prev_end = None
        for s, e, t in toks[i:]:
            if prev_end is not None and (s - prev_end > max_gap or not re.fullmatch(r"[\s\-_./#]*", text[prev_end:s])):
                break
            acc += t.lower()
            prev_end = e
            if acc == key:
                yield (start, e)
                break
            if not key.startswith(acc):
                break


# -- numbers ---------------------------------------------------------------------------------

_UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate("_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()) if w != "_"}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_NUMBER_WORDS = set(_UNITS) | set(_TENS) | set(_SCALES)
_DIGITS = re.compile(r"(?<![\w.])(?:[$€£]\s?)?-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])"
                     r"|(?<![\w.])(?:[$€£]\s?)?-?\d+(?:\.\d+)?(?![\d])")
_WORD_RUN = re.compile(
    r"\b(?:(?:" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")(?:[\s-]+(?:and[\s-]+)?|\b))+"
    r"(?:point(?:\s+(?:" + "|".join(_UNITS) + r"))+)?", re.I)


def parse_number(text: str) -> float | None:
    """A number written with digits (``$1,270.50``) or a currency suffix stripped; else None."""
    cleaned = re.sub(r"[$€£,\s]", "", text)
    cleaned = re.sub(r"(?i)(usd|eur|gbp|dollars?|euros?)$", "", cleaned)
    if not re.fullmatch(r"-?\d+(?:\.\d+)?", cleaned):
        return None
    return float(cleaned)


def words_to_number(text: str) -> float | None:
    """``twelve hundred seventy point five`` → 1270.5; ``one thousand two hundred`` → 1200."""
    words = [w for w in re.split(r"[\s-]+", text.lower().strip()) if w and w != "and"]
    if not words:
        return None
    fraction = ""
    if "point" in words:
        at = words.index("point")
        words, decimals = words[:at], words[at + 1:]
        if not decimals or any(d not in _UNITS or _UNITS[d] > 9 for d in decimals):
            return None
        fraction = "".join(str(_UNITS[d]) for d in decimals)
    total = current = 0
    seen = False
    for w in words:
        if w in _UNITS:
            current += _UNITS[w]
        elif w in _TENS:
            current += _TENS[w]
        elif w == "hundred":
            current = (current or 1) * 100
        elif w in _SCALES:
            total += (current or 1) * _SCALES[w]
            current = 0
        else:
            return None
        seen = True
    if not seen:
        return None
    value = total + current
    return float(f"{value}.{fraction}") if fraction else float(value)


def number_spans(text: str) -> Iterator[tuple[int, int, float]]:
    """Every number in ``text``, written with digits or in words."""
    for m in _DIGITS.finditer(text):
        value = parse_number(m.group(0))
        if value is not None:
            yield m.start(), m.end(), value
    for m in _WORD_RUN.finditer(text):
        phrase = m.group(0).strip(" -")
        value = words_to_number(phrase)
        if value is not None:
            yield m.start(), m.start() + len(m.group(0).rstrip(" -")), value


def same_amount(written: float, value: float) -> bool:
    """Equal, or ``value`` rounded to whole units (up or down) when it has cents."""
    if abs(written - value) < 1e-9:
        return True
    return not float(value).is_integer() and written.is_integer() and abs(written - value) < 1


# -- dates -----------------------------------------------------------------------------------

MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december"]
_MONTH = r"(?P<mon>" + "|".join(m[:3] + f"(?:{m[3:]})?" for m in MONTHS) + r")\.?"
_ORDINAL_WORDS = {w: i for i, w in enumerate(
    "_ first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
    "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth".split()) if w != "_"}
_ORDINAL_WORDS.update({"twenty-" + w: 20 + i for w, i in list(_ORDINAL_WORDS.items()) if i < 10})
_ORDINAL_WORDS.update({"twenty " + w: 20 + i for w, i in list(_ORDINAL_WORDS.items()) if 0 < i < 10})
_ORDINAL_WORDS.update({"thirtieth": 30, "thirty-first": 31, "thirty first": 31})
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_DAY_WORD = r"(?P<dayw>" + "|".join(sorted(map(re.escape, _ORDINAL_WORDS), key=len, reverse=True)) + r")"
_BARE_DAY_WORD = r"(?P<dayw>" + "|".join(sorted((re.escape(w) for w, d in _ORDINAL_WORDS.items() if d > 3),
                                                 key=len, reverse=True)) + r")"
"""'the first/second/third' alone are ordinary words; 'the fifteenth' alone is a date."""
_YEAR = r"(?:,?\s+(?P<year>\d{4}))?"
_DATE_PATTERNS = [
    re.compile(r"\b(?P<year>\d{4})[-/.](?P<a>\d{1,2})[-/.](?P<b>\d{1,2})(?:[T ]\d{1,2}:\d{2}(?::\d{2})?)?\b"),
    re.compile(r"\b(?P<a>\d{1,2})[-/.](?P<b>\d{1,2})(?:[-/.](?P<year>\d{4}|\d{2}))?\b(?![-/.]\d)"),
    re.compile(r"\b" + _MONTH + r"\s+(?:the\s+)?(?:" + _DAY + r"|" + _DAY_WORD + r")\b" + _YEAR, re.I),
    re.compile(r"\b(?:the\s+)?(?:" + _DAY + r"|" + _DAY_WORD + r")\s+(?:of\s+)?" + _MONTH + r"\b" + _YEAR, re.I),
    re.compile(r"\bthe\s+(?:(?P<day>\d{1,2})(?:st|nd|rd|th)|" + _BARE_DAY_WORD + r")\b", re.I),
]
DateKey = tuple[int | None, int | None, int]


def parse_iso_date(value: str) -> DateKey | None:
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})(?:[T ][\d:.]+.*)?", value.strip())
    if not m:
        return None
    year, month, day = (int(g) for g in m.groups())
    return (year, month, day) if 1 <= month <= 12 and 1 <= day <= 31 else None


def date_spans(text: str) -> Iterator[tuple[int, int, list[DateKey]]]:
    """Dates in ``text`` with every reading they allow (``05/06`` is May 6 or June 5); a bare
    ordinal (``the fifteenth``) has month ``None``."""
    for i, pattern in enumerate(_DATE_PATTERNS):
        for m in pattern.finditer(text):
            g = m.groupdict()
            year = int(g["year"]) if g.get("year") else None
            if year is not None and year < 100:
                year += 2000
            if i in (0, 1):
                a, b = int(g["a"]), int(g["b"])
                readings = [(a, b)] if i == 0 else [(a, b), (b, a)]
                keys = [(year, mo, d) for mo, d in readings if 1 <= mo <= 12 and 1 <= d <= 31]
            else:
                day = int(g["day"]) if g.get("day") else _ORDINAL_WORDS[g["dayw"].lower().replace("  ", " ")]
                month = None
                if g.get("mon"):
                    month = next(k for k, name in enumerate(MONTHS, 1) if name.startswith(g["mon"].lower()[:3]))
                keys = [(year, month, day)] if 1 <= day <= 31 else []
            if keys:
                yield m.start(), m.end(), keys


def same_date(written: DateKey, value: DateKey) -> bool:
    """A written date matches when every part it gives agrees with the value."""
    year, month, day = written
    return day == value[2] and (month is None or month == value[1]) and (year is None or year == value[0])


# -- tool names ------------------------------------------------------------------------------

def tool_words(name: str) -> tuple[str, ...]:
    """``get_user_details`` / ``getUserDetails`` / ``Get user details`` → ('get','user','details')."""
    return tuple(w.lower() for w in _CAMEL.findall(name))


def word_stream(text: str) -> list[tuple[int, int, str, bool]]:
    """Lower-case words with spans; camelCase and snake_case split. The flag says whether the
    word was joined to the previous one inside one identifier (no space between)."""
    out = []
    for m in re.finditer(r"[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)*", text):
        first = True
        for part in re.finditer(r"[A-Za-z0-9]+", m.group(0)):
            for w in _CAMEL.finditer(part.group(0)):
                start = m.start() + part.start() + w.start()
                out.append((start, start + len(w.group(0)), w.group(0).lower(), not first))
                first = False
    return out


def tool_mentions(text: str, names: dict[tuple[str, ...], str]) -> list[tuple[int, int, str]]:
    """Mentions of the given tools (canonical words → name) in any spelling, in text order."""
    stream = word_stream(text)
    words = [w for _, _, w, _ in stream]
    found = []
    longest = sorted((k for k in names if len(k) > 1), key=len, reverse=True)
    i = 0
    while i < len(words):
        for key in longest:
            if tuple(words[i:i + len(key)]) == key:
                found.append((stream[i][0], stream[i + len(key) - 1][1], names[key]))
                i += len(key) - 1
                break
        i += 1
    single = []
    for key in (k for k in names if len(k) == 1):
        # a one-word tool name ('calculate') counts when written as code, as a numbered step,
        # or next to another tool's name — not as an ordinary word in a sentence
        for m in re.finditer(r"\b" + key[0] + r"\b", text, re.I):
            code = text[m.end():m.end() + 1] == "(" or text[max(0, m.start() - 1):m.start()] == "`"
            near = any(abs(m.start() - e) < 30 or abs(s - m.end()) < 30 for s, e, _ in found)
            if code or near or step_number(text, m.start()) is not None:
                single.append((m.start(), m.end(), names[key]))
    return sorted(found + single)


def step_number(text: str, start: int) -> int | None:
    """The step number written just before ``start``: ``2.``, ``2)``, ``step 2:``, ``(2)``."""
    m = re.search(r"(?:\b(?:step|call)\s+(\d{1,2})\W{0,3}|(?<!\d)(\d{1,2})[.)]\s*|\((\d{1,2})\)\s*)[`'\"]?$",
                  text[max(0, start - 12):start], re.I)
    if not m:
        return None
    return int(next(g for g in m.groups() if g))
