"""Numbers, months and spelled characters written in words, in several languages.

The leak guard must read ``mil doscientos setenta``, ``zwölfhundertsiebzig``, ``一千二百七十``,
``seven eight one five``, ``Echo Hotel Golf`` and ``el quince de mayo`` as the values they are.
The number grammar of each language comes from maintained libraries, not from lists of ours:
``text2num`` (English, Spanish, German, French, Italian, Portuguese, Dutch, Danish: words to
numbers, ordinals included) and ``cn2an`` (Chinese numerals); month names in every language
from ``babel``'s CLDR data. What is ours is small and closed: the NATO spelling alphabet, the
few words that join number words (``and``, ``y``, ``und``) or mark a decimal point.
"""

from __future__ import annotations

import re
from functools import lru_cache

from wordfreq import zipf_frequency

from critique.guard.canonical import fold_accents

LANGUAGES = ("en", "es", "de", "fr", "it", "pt", "nl")
"""Languages whose number words and month names are read (text2num's set, Danish aside)."""

JOINERS = {"and", "y", "und", "et", "e", "en", "a"}
"""Words that sit inside one written number: 'a hundred and five', 'veinte y dos'."""

DECIMAL_MARKS = {"point", "dot", "comma", "coma", "punto", "komma", "virgule", "virgola", "virgula"}

NATO = {w: w[0] for w in (
    "alpha alfa bravo charlie delta echo foxtrot golf hotel india juliet juliett kilo lima mike "
    "november oscar papa quebec romeo sierra tango uniform victor whiskey whisky xray x-ray "
    "yankee zulu").split()}
"""The ICAO/NATO spelling alphabet (a closed, standard table)."""

CJK_NUMERAL = re.compile(r"[零〇一二两三四五六七八九十百千万亿點点]+")
CJK_DATE = re.compile(r"(?:(?P<y>\d{4}|[零〇一二三四五六七八九]{4})年)?\s*(?P<m>\d{1,2}|[一二三四五六七八九十]{1,3})月"
                      r"\s*(?P<d>\d{1,2}|[一二三四五六七八九十]{1,3})[日号]")


@lru_cache(maxsize=20000)
def word_value(word: str, lang: str) -> float | None:
    """The number one word stands for in ``lang`` (``quinze`` → 15, ``fifteenth`` → 15)."""
    from text_to_num import alpha2digit, text2num

    w = word.lower()
    if not w.isalpha():
        return None
    try:
        return float(text2num(w, lang))
    except ValueError:
        pass
    converted = alpha2digit(w, lang)
    m = re.fullmatch(r"(\d+)(?:st|nd|rd|th|e|er|re|ème|eme|º|ª|o|a|°|ten|te|sten|ste|\.)?", converted)
    return float(m.group(1)) if m and converted != w else None


@lru_cache(maxsize=20000)
def alpha_ordinal(word: str) -> bool:
    """``fifth``, ``quinto``, ``fünfte``: an ordinal number word in some language."""
    from text_to_num import alpha2digit

    w = word.lower()
    return any(re.fullmatch(r"\d+\D+", alpha2digit(w, lang)) for lang in LANGUAGES if w.isalpha())


@lru_cache(maxsize=20000)
def number_word_languages(word: str) -> tuple[str, ...]:
    """Languages in which ``word`` is a number word."""
    return tuple(lang for lang in LANGUAGES if word_value(word, lang) is not None)


@lru_cache(maxsize=20000)
def english_lookalike(word: str) -> bool:
    """A foreign number word that is also ordinary English ('once', 'cent', 'mil', 'son'):
    read as a number only next to another number word of its language."""
    return zipf_frequency(word.lower(), "en") >= 3.0


@lru_cache(maxsize=20000)
def digit_word(word: str) -> str | None:
    """``nine`` / ``neun`` / ``nueve`` / ``девять`` → ``9``: a word for one digit, in any language
    read (English look-alikes such as 'un' or 'elf' excluded)."""
    if not word.isalpha():
        return None
    scripted = script_number_words().get(word.lower())
    if scripted is not None and scripted < 10:
        return str(int(scripted))
    for lang in number_word_languages(word):
        value = word_value(word, lang)
        if value is not None and value < 10 and value.is_integer() and (lang == "en" or not english_lookalike(word)):
            return str(int(value))
    return "0" if word.lower() in ("oh", "zero") else None


SPACED_SCRIPTS = ("ru", "uk", "ar")
"""Languages outside text2num's whose number words are written apart: read with num2words'
own words, added up ('одна тысяча двести семьдесят' → 1270)."""


@lru_cache(maxsize=1)
def script_number_words() -> dict[str, float]:
    """Word → value for :data:`SPACED_SCRIPTS`, from num2words (units, teens, tens, hundreds,
    thousand and its plural forms)."""
    from num2words import num2words

    out: dict[str, float] = {}
    numbers = list(range(0, 20)) + list(range(20, 100, 10)) + list(range(100, 1000, 100)) + [1000, 2000, 5000]
    for lang in SPACED_SCRIPTS:
        for n in numbers:
            words = num2words(n, lang=lang).split()
            if len(words) == 1:
                out.setdefault(words[0].lower(), float(n))
            elif n >= 1000:  # 'одна тысяча', 'две тысячи', 'пять тысяч': the thousand word
                out.setdefault(words[-1].lower(), 1000.0)
    return out


def script_phrase_value(words: list[str]) -> list[float] | None:
    """Words of :data:`SPACED_SCRIPTS` added up, a thousand multiplying what came before; digit
    by digit when every word is one digit."""
    table = script_number_words()
    values = [table.get(w.lower()) for w in words]
    if not values or any(v is None for v in values):
        return None
    if len(values) >= 2 and all(v < 10 for v in values):
        return values
    total = current = 0.0
    for v in values:
        if v == 1000:
            total += (current or 1) * 1000
            current = 0
        else:
            current += v
    return [total + current]


SPOKEN_SEPARATORS = {"underscore", "dash", "hyphen", "slash", "dot", "space"}
"""Separators said in words inside a spelled code: 'a-A-r-a-V-underscore-G-a-R-c-i-A'."""


@lru_cache(maxsize=20000)
def number_prefix(word: str) -> str | None:
    """``quatreG`` → ``4g``, ``fünfg`` → ``5g``: a number word glued to a one- or two-letter
    unit, as in network names written out; ``None`` for anything else."""
    w = word.lower()
    if not w.isalpha() or len(w) < 4:
        return None
    for cut in (len(w) - 1, len(w) - 2):
        head, tail = w[:cut], w[cut:]
        for lang in LANGUAGES:
            value = word_value(head, lang)
            if value is not None and value.is_integer() and (lang == "en" or not english_lookalike(head)):
                return f"{int(value)}{tail}"
        scripted = script_number_words().get(head)
        if scripted is not None:
            return f"{int(scripted)}{tail}"
    return None


HOUR_WORDS = {"o'clock", "oclock", "heure", "heures", "hora", "horas", "uhr", "uur", "ore", "ora", "h"}
"""Words that make a number a time of day: 'six o'clock', 'à six heures', 'om één uur'."""


def any_word_value(word: str) -> float | None:
    """The number ``word`` stands for in the first language that reads it."""
    for lang in number_word_languages(word):
        return word_value(word, lang)
    return None


def phrase_value(words: list[str], lang: str) -> list[float] | None:
    """The number(s) a run of number words says: one number (``twelve hundred seventy``) or,
    when the words do not make one, each number in turn (``seven eight one five``)."""
    from text_to_num import alpha2digit, text2num

    digits = [word_value(w, lang) for w in words if w.lower() not in JOINERS]
    if len(digits) >= 2 and all(d is not None and d < 10 for d in digits):
        return digits  # 'seven eight one five' says four digits, not 'seventy-eight fifteen'
    out: list[float] = []
    i = 0
    while i < len(words):  # the longest prefix that is one number, then the rest
        if words[i].lower() in JOINERS:
            i += 1
            continue
        for j in range(len(words), i, -1):
            try:
                out.append(float(text2num(" ".join(words[i:j]), lang)))
            except ValueError:
                continue
            i = j
            break
        else:
            value = word_value(words[i], lang)
            if value is None:
                converted = alpha2digit(" ".join(words[i:]), lang)
                return (out + [float(x) for x in re.findall(r"\d+(?:\.\d+)?", converted)]) or None
            out.append(value)
            i += 1
    return out or None


def cjk_value(text: str) -> float | None:
    """``一千二百七十`` → 1270; ``一二七〇`` (digit by digit) → 1270."""
    import cn2an

    if all(c in "零〇一二三四五六七八九" for c in text) and len(text) > 1:
        return float("".join(str("零一二三四五六七八九".index(c.replace("〇", "零"))) for c in text))
    try:
        return float(cn2an.cn2an(text.replace("點", "点"), "smart"))
    except (ValueError, KeyError, IndexError):
        return None


@lru_cache(maxsize=1)
def month_names() -> dict[str, int]:
    """Every month name and abbreviation of :data:`LANGUAGES` (CLDR via babel), accent-free and
    lower case → month number."""
    from babel.dates import get_month_names

    out: dict[str, int] = {}
    for lang in LANGUAGES:
        for width in ("wide", "abbreviated"):
            for context in ("format", "stand-alone"):
                for number, name in get_month_names(width, context, locale=lang).items():
                    key = fold_accents(name.lower()).rstrip(".")
                    if len(key) >= 3:
                        out.setdefault(key, number)
    return out


def month_of(word: str) -> int | None:
    return month_names().get(fold_accents(word.lower()).rstrip("."))
