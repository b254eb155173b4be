"""Dates, times of day and Chinese numerals in a text, as readings of ``critique.guard.values``.

Month names come from CLDR (``critique.guard.number_words.month_names``); a day is digits, an ordinal
(``15th``, ``15.``) or a number word of any language read; a year may follow. Numeric dates are
read every way they allow (``05/06`` is May 6 or June 5). Times are ``10:30``, ``10:30 pm``,
``10am``, ``14h30``, ``9 o'clock``; keys are minutes after midnight.
"""

from __future__ import annotations

import re

from critique.guard import number_words as nw
from critique.guard.value_types import ORDINAL_SUFFIX, TIME_TOKEN, DateKey, Reading, TextValues, Token, gap

_AMBIGUOUS_MONTHS = {"may", "mar", "mai", "jun", "jan", "dec", "sep", "oct", "nov", "aug", "ago", "set"}
_DAY_FILLER = {"the", "of", "de", "del", "le", "am", "den", "der", "el", "il", "lo", "on", "du", "van"}


def _day_value(tok: Token) -> float | None:
    t = tok.text
    if t.isdigit() and 1 <= int(t) <= 31 and len(t) <= 2:
        return float(t)
    m = ORDINAL_SUFFIX.match(t)
    if m and 1 <= int(m.group("n")) <= 31:
        return float(m.group("n"))
    if t.isalpha():
        for lang in nw.number_word_languages(t):
            v = nw.word_value(t, lang)
            if v is not None and 1 <= v <= 31:
                return v
    return None


def date_time_readings(tv: TextValues) -> None:
    toks = tv.tokens
    s = tv.canon.text
    for k, tok in enumerate(toks):
        month = nw.month_of(tok.text) if tok.text.isalpha() and len(tok.text) >= 3 else None
        # 'may', 'mar', 'mai' are words too: a month only when capitalised
        if month is not None and (tok.text[0].isupper() or tok.lower not in _AMBIGUOUS_MONTHS):
            _month_date(tv, k, month)
    for first, last in tv.runs:
        parts = toks[first:last + 1]
        for i in range(len(parts)):
            for n in (3, 2):
                chunk = parts[i:i + n]
                if len(chunk) < n or not all(p.text.isdigit() for p in chunk):
                    continue
                seps = {gap(s, a, b) for a, b in zip(chunk, chunk[1:])}
                if len(seps) != 1 or next(iter(seps)) not in {"-", "/", "."}:
                    continue
                for key in _numeric_dates([int(p.text) for p in chunk], [len(p.text) for p in chunk]):
                    tv.readings.append(Reading(chunk[0].index, chunk[-1].index, "date", key))
            _times(tv, parts, i)
    _bare_days(tv)
    for m in nw.CJK_DATE.finditer(s):
        y = m.group("y")
        year = int(y) if y and y.isdigit() else (int(nw.cjk_value(y)) if y else None)
        month, day = nw.cjk_value(m.group("m")) if not m.group("m").isdigit() else int(m.group("m")), \
            nw.cjk_value(m.group("d")) if not m.group("d").isdigit() else int(m.group("d"))
        first = next((t.index for t in toks if t.end > m.start()), None)
        last = next((t.index for t in reversed(toks) if t.start < m.end()), None)
        if first is not None and last is not None and month and day:
            tv.readings.append(Reading(first, last, "date", (year, int(month), int(day))))
            tv.value_like.update(range(first, last + 1))


_FIRST_DAYS = {"first": 1.0, "second": 2.0, "third": 3.0}
"""English ordinals that text2num leaves as words ('second' is also a unit of time)."""


def _bare_days(tv: TextValues) -> None:
    """'the ninth', 'on the 9th': a day of the month without its month."""
    toks = tv.tokens
    for k in range(1, len(toks)):
        if toks[k - 1].lower != "the" or any(r.kind == "date" and r.covers(k) for r in tv.readings):
            continue
        t = toks[k].text
        ordinal = ORDINAL_SUFFIX.match(t) is not None or (
            t.isalpha() and nw.alpha_ordinal(t))
        day = _day_value(toks[k]) if ordinal else _FIRST_DAYS.get(toks[k].lower)
        dated = re.search(r"\b(?:date|day|due|deadline)\b[^.;\n]{0,20}$", tv.canon.text[max(0, toks[k].start - 30):toks[k].start], re.I)
        if day is not None and (day >= 4 or dated):  # 'the first' is a word; 'the date is the first' is a day
            tv.readings.append(Reading(k, k, "date", (None, 0, int(day))))
            tv.value_like.add(k)


def _month_date(tv: TextValues, k: int, month: int) -> None:
    toks = tv.tokens
    window = range(max(0, k - 3), min(len(toks), k + 4))
    for d in window:
        if d == k:
            continue
        between = toks[min(d, k) + 1:max(d, k)]
        if any(t.lower not in _DAY_FILLER for t in between):
            continue
        day = _day_value(toks[d])
        if day is None:
            continue
        first, last = min(d, k), max(d, k)
        year = None
        for y in range(last + 1, min(len(toks), last + 3)):
            if toks[y].text.isdigit() and len(toks[y].text) == 4:
                year, last = int(toks[y].text), y
                break
            if toks[y].lower not in _DAY_FILLER:
                break
        tv.readings.append(Reading(first, last, "date", (year, month, int(day))))
        tv.readings.append(Reading(first, last, "date", (None, month, int(day))))
        tv.value_like.update(range(first, last + 1))


def _numeric_dates(values: list[int], widths: list[int]) -> list[DateKey]:
    out: list[DateKey] = []
    if len(values) == 3:
        if widths[0] == 4:
            y, m, d = values
            if 1 <= m <= 12 and 1 <= d <= 31:
                out.append((y, m, d))
        elif widths[2] in (2, 4):
            y = values[2] + (2000 if widths[2] == 2 else 0)
            for m, d in ((values[0], values[1]), (values[1], values[0])):
                if 1 <= m <= 12 and 1 <= d <= 31:
                    out.append((y, m, d))
    elif len(values) == 2 and max(widths) <= 2:
        for m, d in ((values[0], values[1]), (values[1], values[0])):
            if 1 <= m <= 12 and 1 <= d <= 31:
                out.append((None, m, d))
    return out


def _times(tv: TextValues, parts: list[Token], i: int) -> None:
    s = tv.canon.text
    tok = parts[i]
    nxt = tv.tokens[tok.index + 1] if tok.index + 1 < len(tv.tokens) else None
    after = nxt.lower.replace(".", "") if nxt else ""
    minutes = None
    last = tok.index
    if i + 1 < len(parts) and gap(s, tok, parts[i + 1]) == ":" and tok.text.isdigit() and parts[i + 1].text[:2].isdigit():
        h, mm = int(tok.text), int(parts[i + 1].text[:2])
        last = parts[i + 1].index
        tail = parts[i + 1].text[2:].lower() or (tv.tokens[last + 1].lower if last + 1 < len(tv.tokens) else "")
        if tail in ("pm", "p") and h < 12:
            h += 12
        if h <= 24 and mm < 60:
            minutes = h * 60 + mm
    else:
        m = TIME_TOKEN.match(tok.text)
        if m:
            h = int(m.group("h"))
            if (m.group("ampm") or "").lower().startswith("p") and h < 12:
                h += 12
            minutes = h * 60 + int(m.group("m") or 0) if h <= 24 else None
        elif tok.text.isdigit() and int(tok.text) <= 12 and after in ("am", "pm", "a", "p", "oclock", "o"):
            h = int(tok.text) + (12 if after.startswith("p") and int(tok.text) < 12 else 0)
            minutes = h * 60
    if minutes is not None:
        tv.readings.append(Reading(tok.index, last, "time", minutes))


def hour_word_times(tv: TextValues) -> None:
    """'six o'clock', 'à six heures', 'om één uur', '7 Uhr': a time told with an hour word."""
    toks = tv.tokens
    for k in range(1, len(toks)):
        if toks[k].lower not in nw.HOUR_WORDS or any(r.kind == "time" and r.covers(k - 1) for r in tv.readings):
            continue
        prev = toks[k - 1]
        hour = float(prev.text) if prev.text.isdigit() else nw.any_word_value(prev.text) if prev.text.isalpha() else None
        if hour is not None and hour.is_integer() and 0 <= hour <= 24:
            tv.readings.append(Reading(k - 1, k, "time", int(hour) * 60))
            tv.value_like.update((k - 1, k))
            tv.groups[k - 1] = tv.groups[k] = (k - 1, k)


def cjk_readings(tv: TextValues) -> None:
    s = tv.canon.text
    dates = [d.span() for d in nw.CJK_DATE.finditer(s)]
    for m in nw.CJK_NUMERAL.finditer(s):
        if any(a <= m.start() < b for a, b in dates):
            continue  # the 五 of 五月二十四日 is a month, read with its date
        value = nw.cjk_value(m.group(0))
        if value is None or (value < 10 and len(m.group(0)) == 1):
            continue
        first = next((t.index for t in tv.tokens if t.end > m.start()), None)
        last = next((t.index for t in reversed(tv.tokens) if t.start < m.end()), None)
        if first is None or last is None:
            continue
        tv.readings.append(Reading(first, last, "number", value))
        tv.value_like.update(range(first, last + 1))
