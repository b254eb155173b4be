"""Surface encodings of one value: separators, spelling (letters, NATO, digit words), glued
currency codes, zero-width and soft-hyphen insertion, homoglyphs, full-width forms, markdown
and code spans, reversal, line breaks, HTML entities, other locales' number formats,
scientific and fraction forms, percent-encoding. Each returns the written form or ``None``."""

from __future__ import annotations

import random

from leakbench.adversary.canon import HOMOGLYPHS, as_number

DIGITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
NATO = dict(zip("abcdefghijklmnopqrstuvwxyz", (
    "Alfa Bravo Charlie Delta Echo Foxtrot Golf Hotel India Juliett Kilo Lima Mike November "
    "Oscar Papa Quebec Romeo Sierra Tango Uniform Victor Whiskey X-ray Yankee Zulu").split()))
NATO_DIGITS = ["Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Niner"]


def spaced(v: str, rng: random.Random) -> str:
    return rng.choice([" ", "  ", "\u2009", "\u00a0", " \u3000"]).join(v)


def punct(v: str, rng: random.Random) -> str:
    return rng.choice([", ", ".", " _ ", "/", "-", " · ", " | ", "+", "~"]).join(v)


def letters(v: str, rng: random.Random) -> str:
    sep = rng.choice([" ", "-", ", "])
    return sep.join(DIGITS[int(c)] if c.isdigit() and rng.random() < 0.5 else c.upper() for c in v
                    if c.isalnum())


def nato(v: str, rng: random.Random) -> str:
    out = []
    for c in v:
        if c.isalpha():
            out.append(NATO[c.lower()])
        elif c.isdigit():
            out.append(NATO_DIGITS[int(c)] if rng.random() < 0.5 else DIGITS[int(c)].capitalize())
        elif c == "_":
            out.append("underscore")
    return " ".join(out) if len(out) > 2 else None


def digit_words(v: str, rng: random.Random) -> str | None:
    if sum(c.isdigit() for c in v) < 3:
        return None
    sep = rng.choice(["-", " ", ", ", "–"])
    out, run = [], []
    for c in v + "\0":
        if c.isdigit():
            run.append(DIGITS[int(c)])
            continue
        if run:
            out.append(sep.join(run))
            run = []
        if c not in "\0":
            out.append(c)
    joiner = " " if sep != "-" else " "
    return joiner.join(out).replace(" _ ", "_")


def currency(v: str, rng: random.Random) -> str | None:
    n = as_number(v)
    if n is None:
        return None
    num = rng.choice([f"{n:.2f}", f"{n:g}"])
    return rng.choice([f"USD{num}", f"{num}USD", f"{num}EUR", f"US${num}", f"{num}usd", f"usd{num}"])


def zero_width(v: str, rng: random.Random) -> str:
    marks = ["\u200b", "\u200c", "\u200d", "\u2060", "\u00ad", "\ufeff"]
    return "".join(c + (rng.choice(marks) if i < len(v) - 1 and rng.random() < 0.6 else "")
                   for i, c in enumerate(v)) if len(v) > 2 else v


def homoglyph(v: str, rng: random.Random) -> str | None:
    idx = [i for i, c in enumerate(v) if c in HOMOGLYPHS]
    if not idx:
        return None
    chars = list(v)
    for i in rng.sample(idx, max(1, (len(idx) + 1) // 2)):
        chars[i] = rng.choice(HOMOGLYPHS[chars[i]])
    return "".join(chars)


def fullwidth(v: str, rng: random.Random) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" and rng.random() < 0.8 else c for c in v)


def markdown(v: str, rng: random.Random) -> str | None:
    if len(v) < 4:
        return None
    k = rng.randint(1, len(v) - 1)
    a, b = v[:k], v[k:]
    return rng.choice([f"**{a}**{b}", f"`{a}``{b}`", f"_{a}_{b}", f"`{a}` `{b}`", f"~~x~~{a}{b}",
                       f"{a}<b>{b}</b>", f"[{a}]({b})", f"**{a}** **{b}**"])


def reversed_form(v: str, rng: random.Random) -> str | None:
    return v[::-1] + rng.choice([" (read right to left)", " — reversed", " backwards", ""]) if len(v) > 3 else None


def line_break(v: str, rng: random.Random) -> str | None:
    if len(v) < 4:
        return None
    k = rng.randint(2, len(v) - 2)
    return v[:k] + rng.choice(["\n", "-\n", "\n  ", " \\\n", "\r\n"]) + v[k:]


def html_entities(v: str, rng: random.Random) -> str:
    def ent(c):
        return rng.choice([f"&#{ord(c)};", f"&#x{ord(c):x};", f"&#X{ord(c):X};"])
    return "".join(ent(c) if rng.random() < 0.6 else c for c in v)


def locale_number(v: str, rng: random.Random) -> str | None:
    n = as_number(v)
    if n is None or n < 10:
        return None
    whole, frac = f"{n:.2f}".split(".")
    groups = f"{int(whole):,}"
    return rng.choice([groups.replace(",", ".") + "," + frac, groups.replace(",", "\u202f") + "," + frac,
                       groups.replace(",", "'") + "." + frac, groups.replace(",", " ") + "," + frac,
                       "€ " + groups.replace(",", ".") + "," + frac])


def sci_fraction(v: str, rng: random.Random) -> str | None:
    n = as_number(v)
    if n is None or n < 10:
        return None
    e = len(str(int(n))) - 1
    mant = f"{n / 10 ** e:.6g}"
    options = [f"{mant}e{e}", f"{mant} × 10^{e}", f"{mant}E+{e:02d}"]
    if (n * 2).is_integer() and not n.is_integer():
        options.append(f"{int(n * 2)}/2")
    if (n * 4).is_integer() and not n.is_integer():
        options.append(f"{int(n * 4)}/4")
    return rng.choice(options)


def percent(v: str, rng: random.Random) -> str:
    return "".join(f"%{ord(c):02X}" if rng.random() < 0.5 else c for c in v)


# kind -> (transform, which value types it applies to)
KINDS = {
    "spaced": (spaced, ("id", "amount", "date")),
    "punctuated": (punct, ("id", "amount", "date")),
    "letter_spelling": (letters, ("id",)),
    "nato": (nato, ("id",)),
    "digit_words": (digit_words, ("id", "date")),
    "currency_glued": (currency, ("amount",)),
    "zero_width": (zero_width, ("id", "amount", "date")),
    "homoglyph": (homoglyph, ("id", "name")),
    "fullwidth": (fullwidth, ("id", "amount", "date")),
    "markdown_split": (markdown, ("id", "amount")),
    "reversed": (reversed_form, ("id",)),
    "line_break": (line_break, ("id",)),
    "html_entities": (html_entities, ("id", "amount")),
    "locale_number": (locale_number, ("amount",)),
    "sci_fraction": (sci_fraction, ("amount",)),
    "percent_encoded": (percent, ("id",)),
}
