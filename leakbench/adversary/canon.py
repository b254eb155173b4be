"""This generator's own canonical forms and its own test of what the tested model has seen.

Independent of the guard on purpose: a value is *public* when it appears in the view text, the
opening request or ``p0`` in any spelling decoded here (NFKC, format characters dropped,
look-alike letters folded, case and separators ignored, numbers compared as numbers, dates as
dates). Leaky cases plant only values that are not public; clean cases use only public ones.
"""

from __future__ import annotations

import datetime as _dt
import re
import unicodedata

# Cyrillic and Greek letters that render like Latin ones (and back, for folding).
HOMOGLYPHS = {
    "A": "АΑ", "B": "ВΒ", "C": "С", "E": "ЕΕ", "H": "НΗ", "I": "ІΙ", "J": "Ј", "K": "КΚ",
    "M": "МΜ", "N": "Ν", "O": "ОΟ", "P": "РΡ", "S": "Ѕ", "T": "ТΤ", "X": "ХΧ", "Y": "ΥҮ",
    "Z": "Ζ", "a": "а", "c": "с", "e": "е", "i": "і", "j": "ј", "o": "οо", "p": "р",
    "s": "ѕ", "x": "х", "y": "у",
}
_FOLD = {g: latin for latin, gs in HOMOGLYPHS.items() for g in gs}

MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december"]


def fold(text: str) -> str:
    """NFKC, format characters (zero-width, soft hyphen) removed, look-alikes folded, lowercase."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(_FOLD.get(ch, ch) for ch in text if unicodedata.category(ch) != "Cf")
    return text.lower()


def words(text: str) -> str:
    """Folded text with every run of non-alphanumerics turned into one space."""
    return " " + re.sub(r"[^0-9a-z\u00c0-\u024f\u4e00-\u9fff]+", " ", fold(text)).strip() + " "


def compact(text: str) -> str:
    """Only the letters and digits, folded: 'Q69-X3R' and 'q 6 9 x 3 r' are both 'q69x3r'."""
    return re.sub(r"[^0-9a-z]", "", fold(text))


_NUM = re.compile(r"(?<![\w.])[-+]?\$?\d[\d,]*(?:\.\d+)?(?![\w])|(?<![\w.])\$?\d+(?:\.\d+)?")


def numbers(text: str) -> set[float]:
    """Every number written in digits ('$1,270.50', '2.0', '24')."""
    out = set()
    for m in _NUM.finditer(fold(text)):
        raw = m.group(0).replace("$", "").replace(",", "").lstrip("+")
        try:
            out.add(round(float(raw), 4))
        except ValueError:
            continue
    return out


def as_number(value: str) -> float | None:
    v = str(value).strip().replace("$", "").replace(",", "")
    if re.fullmatch(r"-?\d+(\.\d+)?", v):
        return round(float(v), 4)
    return None


def dates(text: str) -> set[_dt.date]:
    """ISO dates and 'May 15, 2024' / '15 May 2024' / 'May 15' (year 2024 assumed) forms."""
    t = fold(text)
    out = set()
    for y, m, d in re.findall(r"\b(\d{4})-(\d{2})-(\d{2})\b", t):
        try:
            out.add(_dt.date(int(y), int(m), int(d)))
        except ValueError:
            pass
    month = "|".join(MONTHS)
    for mo, d, y in re.findall(rf"\b({month})\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?", t):
        _add_date(out, y or "2024", MONTHS.index(mo) + 1, d)
    for d, mo, y in re.findall(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({month})(?:,?\s+(\d{{4}}))?", t):
        _add_date(out, y or "2024", MONTHS.index(mo) + 1, d)
    return out


def _add_date(out: set, y: str, m: int, d: str) -> None:
    try:
        out.add(_dt.date(int(y), m, int(d)))
    except ValueError:
        pass


class Public:
    """Everything the tested model has seen, in the canonical forms above."""

    def __init__(self, *texts: str, joined: bool = False) -> None:
        """``joined``: also match a value spread over several tokens ('0 8 : 0 0'); stricter,
        for checking that a short text (a clean rationale) carries no value at all."""
        raw = "\n".join(texts)
        self.joined = compact(raw) if joined else ""
        self.words = words(raw)
        self.compact_tokens = {compact(tok) for tok in re.split(r"\s+", fold(raw))} - {""}
        self.numbers = numbers(raw)
        self.dates = dates(raw)

    def has(self, value: str) -> bool:
        """Is ``value`` (an id, amount, date, name, phrase) already public in some spelling?"""
        value = str(value)
        w = words(value)
        if w.strip() and w in self.words:
            return True
        c = compact(value)
        if len(c) >= 3 and c in self.compact_tokens:
            return True
        if self.joined and len(c) >= 4 and re.search(r"\d", c) and c in self.joined:
            return True
        n = as_number(value)
        if n is not None and n in self.numbers:
            return True
        for d in dates(value):
            if d in self.dates:
                return True
        return False

    def has_fragment(self, fragment: str) -> bool:
        """Does the fragment (letters and digits) occur inside any public token?"""
        c = compact(fragment)
        return any(c in tok for tok in self.compact_tokens)
