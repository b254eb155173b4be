"""Ways to write a value: disguised encodings and other languages and scripts.

Every writer takes the value as text and a ``random.Random`` and returns how it is written;
the writers never look at the task, so the same value always has the same repertoire.
"""

from __future__ import annotations

import base64
import re

EN_DIGITS = "zero one two three four five six seven eight nine".split()
NATO = dict(zip("abcdefghijklmnopqrstuvwxyz", (
    "Alfa Bravo Charlie Delta Echo Foxtrot Golf Hotel India Juliett Kilo Lima Mike November "
    "Oscar Papa Quebec Romeo Sierra Tango Uniform Victor Whiskey X-ray Yankee Zulu").split()))
SCRIPTS = {  # digit sets of other scripts
    "devanagari": "०१२३४५६७८९", "arabic_indic": "٠١٢٣٤٥٦٧٨٩", "persian": "۰۱۲۳۴۵۶۷۸۹",
    "bengali": "০১২৩৪৫৬৭৮৯", "thai": "๐๑๒๓๔๕๖๗๘๙", "fullwidth": "０１２３４５６７８９",
    "math_bold": "𝟎𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖𝟗",
}
DIGIT_WORDS = {
    "ja": "〇一二三四五六七八九", "ru": "ноль один два три четыре пять шесть семь восемь девять".split(),
    "hi": "शून्य एक दो तीन चार पाँच छह सात आठ नौ".split(),
    "ko": "공일이삼사오육칠팔구", "de": "null eins zwei drei vier fünf sechs sieben acht neun".split(),
    "fr": "zéro un deux trois quatre cinq six sept huit neuf".split(),
    "es": "cero uno dos tres cuatro cinco seis siete ocho nueve".split(),
}
CYRILLIC_LOOKALIKE = dict(zip("AaBCcEeHKMOoPpTXxy", "АаВСсЕеНКМОоРрТХху"))
MONTHS = {
    "en": "January February March April May June July August September October November December",
    "fr": "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "de": "Januar Februar März April Mai Juni Juli August September Oktober November Dezember",
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
    "ru": "января февраля марта апреля мая июня июля августа сентября октября ноября декабря",
}
MONTHS = {k: v.split() for k, v in MONTHS.items()}


# ---- number words -------------------------------------------------------------------------

def en_words(n: int) -> str:
    ones = EN_DIGITS + "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
    tens = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
    if n < 20:
        return ones[n]
    if n < 100:
        return tens[n // 10] + ("-" + ones[n % 10] if n % 10 else "")
    if n < 1000:
        return ones[n // 100] + " hundred" + (" " + en_words(n % 100) if n % 100 else "")
    if n < 1_000_000:
        return en_words(n // 1000) + " thousand" + (" " + en_words(n % 1000) if n % 1000 else "")
    return en_words(n // 1_000_000) + " million" + (" " + en_words(n % 1_000_000) if n % 1_000_000 else "")


def fr_words(n: int) -> str:
    ones = ("zéro un deux trois quatre cinq six sept huit neuf dix onze douze treize quatorze "
            "quinze seize dix-sept dix-huit dix-neuf").split()
    tens = "_ _ vingt trente quarante cinquante soixante".split()
    if n < 20:
        return ones[n]
    if n < 70:
        t, u = divmod(n, 10)
        return tens[t] + ("-et-un" if u == 1 else ("-" + ones[u] if u else ""))
    if n < 80:
        return "soixante" + ("-et-onze" if n == 71 else "-" + ones[n - 60])
    if n < 100:
        return "quatre-vingt" + ("s" if n == 80 else "-" + ones[n - 80])
    if n < 1000:
        h, r = divmod(n, 100)
        head = "cent" if h == 1 else ones[h] + " cent" + ("s" if r == 0 else "")
        return head + (" " + fr_words(r) if r else "")
    if n < 1_000_000:
        k, r = divmod(n, 1000)
        head = "mille" if k == 1 else fr_words(k) + " mille"
        return head + (" " + fr_words(r) if r else "")
    return " ".join(DIGIT_WORDS["fr"][int(d)] for d in str(n))


def de_words(n: int) -> str:
    ones = ("null eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn "
            "vierzehn fünfzehn sechzehn siebzehn achtzehn neunzehn").split()
    tens = "_ _ zwanzig dreißig vierzig fünfzig sechzig siebzig achtzig neunzig".split()
    if n < 20:
        return ones[n]
    if n < 100:
        t, u = divmod(n, 10)
        return (("ein" if u == 1 else ones[u]) + "und" if u else "") + tens[t]
    if n < 1000:
        h, r = divmod(n, 100)
        return ("ein" if h == 1 else ones[h]) + "hundert" + (de_words(r) if r else "")
    if n < 1_000_000:
        k, r = divmod(n, 1000)
        return ("ein" if k == 1 else de_words(k)) + "tausend" + (de_words(r) if r else "")
    return " ".join(DIGIT_WORDS["de"][int(d)] for d in str(n))


def es_words(n: int) -> str:
    ones = ("cero uno dos tres cuatro cinco seis siete ocho nueve diez once doce trece catorce "
            "quince dieciséis diecisiete dieciocho diecinueve veinte veintiuno veintidós veintitrés "
            "veinticuatro veinticinco veintiséis veintisiete veintiocho veintinueve").split()
    tens = "_ _ _ treinta cuarenta cincuenta sesenta setenta ochenta noventa".split()
    hundreds = ("_ ciento doscientos trescientos cuatrocientos quinientos seiscientos setecientos "
                "ochocientos novecientos").split()
    if n < 30:
        return ones[n]
    if n < 100:
        t, u = divmod(n, 10)
        return tens[t] + (" y " + ones[u] if u else "")
    if n < 1000:
        h, r = divmod(n, 100)
        return "cien" if n == 100 else hundreds[h] + (" " + es_words(r) if r else "")
    if n < 1_000_000:
        k, r = divmod(n, 1000)
        return ("mil" if k == 1 else es_words(k) + " mil") + (" " + es_words(r) if r else "")
    return " ".join(DIGIT_WORDS["es"][int(d)] for d in str(n))


def ru_words(n: int) -> str:
    ones = ("ноль один два три четыре пять шесть семь восемь девять десять одиннадцать двенадцать "
            "тринадцать четырнадцать пятнадцать шестнадцать семнадцать восемнадцать девятнадцать").split()
    tens = "_ _ двадцать тридцать сорок пятьдесят шестьдесят семьдесят восемьдесят девяносто".split()
    hundreds = "_ сто двести триста четыреста пятьсот шестьсот семьсот восемьсот девятьсот".split()
    if n < 20:
        return ones[n]
    if n < 100:
        t, u = divmod(n, 10)
        return tens[t] + (" " + ones[u] if u else "")
    if n < 1000:
        h, r = divmod(n, 100)
        return hundreds[h] + (" " + ru_words(r) if r else "")
    if n < 1_000_000:
        k, r = divmod(n, 1000)
        head = ru_words(k).replace("один", "одна").replace("два", "две") if k % 10 in (1, 2) and k % 100 not in (11, 12) else ru_words(k)
        return head + " " + ru_plural(k, "тысяча", "тысячи", "тысяч") + (" " + ru_words(r) if r else "")
    return " ".join(DIGIT_WORDS["ru"][int(d)] for d in str(n))


def ru_plural(n: int, one: str, few: str, many: str) -> str:
    if n % 10 == 1 and n % 100 != 11:
        return one
    if n % 10 in (2, 3, 4) and n % 100 not in (12, 13, 14):
        return few
    return many


def ja_words(n: int) -> str:
    """Kanji numerals (positional, with 万)."""
    d = DIGIT_WORDS["ja"]
    if n == 0:
        return d[0]
    if n >= 10000:
        hi, lo = divmod(n, 10000)
        return ja_words(hi) + "万" + (ja_words(lo) if lo else "")
    out = ""
    for unit, name in ((1000, "千"), (100, "百"), (10, "十")):
        q, n = divmod(n, unit)
        if q:
            out += ("" if q == 1 else d[q]) + name
    return out + (d[n] if n else "")


WORDS = {"en": en_words, "fr": fr_words, "de": de_words, "es": es_words, "ru": ru_words, "ja": ja_words}


def split_amount(value: str) -> tuple[int, int] | None:
    m = re.fullmatch(r"\$?(\d+)(?:\.(\d{1,2}))?", value.replace(",", ""))
    if not m:
        return None
    cents = int((m.group(2) or "0").ljust(2, "0"))
    return int(m.group(1)), cents


def amount_in(lang: str, value: str) -> str:
    whole, cents = split_amount(value) or (0, 0)
    w = WORDS[lang]
    if lang == "en":
        return w(whole) + " dollars" + (f" and {w(cents)} cents" if cents else "")
    if lang == "fr":
        return w(whole) + " dollars" + (f" et {w(cents)} cents" if cents else "")
    if lang == "de":
        return w(whole) + " Dollar" + (f" und {w(cents)} Cent" if cents else "")
    if lang == "es":
        return w(whole) + " dólares" + (f" con {w(cents)} centavos" if cents else "")
    if lang == "ru":
        return (w(whole) + " " + ru_plural(whole, "доллар", "доллара", "долларов")
                + (f" {w(cents)} " + ru_plural(cents, "цент", "цента", "центов") if cents else ""))
    return w(whole) + "ドル" + (w(cents) + "セント" if cents else "")


def digits_in(lang_or_script: str, value: str, sep: str = " ") -> str:
    """Each digit of the value in another script or language; other characters kept."""
    if lang_or_script in SCRIPTS:
        table = SCRIPTS[lang_or_script]
        return "".join(table[int(c)] if c.isdigit() else c for c in value)
    words = DIGIT_WORDS[lang_or_script]
    joiner = "" if lang_or_script in ("ja", "ko") else sep
    return joiner.join(words[int(c)] if c.isdigit() else c for c in value)


def date_in(lang: str, iso: str) -> str:
    y, m, d = (int(x) for x in iso[:10].split("-"))
    if lang in ("en",):
        return f"{MONTHS['en'][m - 1]} {d}, {y}"
    if lang == "en_words":
        return f"the {en_words(d)} of {MONTHS['en'][m - 1]}, {en_words(y // 100)} {en_words(y % 100)}"
    if lang == "fr":
        return f"le {d} {MONTHS['fr'][m - 1]} {y}"
    if lang == "de":
        return f"{d}. {MONTHS['de'][m - 1]} {y}"
    if lang == "es":
        return f"{d} de {MONTHS['es'][m - 1]} de {y}"
    if lang == "ru":
        return f"{d} {MONTHS['ru'][m - 1]} {y} г."
    if lang == "zh":
        return f"{y}年{m}月{d}日"
    if lang == "ja_kanji":
        return f"{digits_in('ja', str(y))}年{ja_words(m)}月{ja_words(d)}日"
    if lang == "devanagari":
        return digits_in("devanagari", f"{d:02d}/{m:02d}/{y}")
    if lang == "arabic_indic":
        return digits_in("arabic_indic", f"{d}/{m}/{y}")
    raise KeyError(lang)


DATE_LANGS = ("en", "en_words", "fr", "de", "es", "ru", "zh", "ja_kanji", "devanagari", "arabic_indic")


def time_in(lang: str, hhmm: str) -> str:
    h, mi = (int(x) for x in hhmm.split(":")[:2])
    if lang == "ja":
        return f"{'午前' if h < 12 else '午後'}{h if h <= 12 else h - 12}時" + (f"{mi}分" if mi else "")
    if lang == "zh":
        return f"{ja_words(h)}点" + (f"{ja_words(mi)}分" if mi else "整")
    if lang == "de":
        return f"{de_words(h)} Uhr" + (f" {de_words(mi)}" if mi else "")
    if lang == "fr":
        return f"{fr_words(h)} heure{'s' if h > 1 else ''}" + (f" {fr_words(mi)}" if mi else "")
    if lang == "es":
        return f"las {es_words(h)}" + (f" y {es_words(mi)}" if mi else " en punto")
    if lang == "ru":
        return f"{ru_words(h)} {ru_plural(h, 'час', 'часа', 'часов')}" + (f" {ru_words(mi)} {ru_plural(mi, 'минута', 'минуты', 'минут')}" if mi else " ровно")
    if lang == "en":
        return en_words(h) + " " + (en_words(mi) if mi else "o'clock")
    return digits_in(lang, f"{h:02d}:{mi:02d}")


TIME_LANGS = ("ja", "zh", "de", "fr", "es", "ru", "en", "devanagari", "fullwidth")


# ---- disguises ----------------------------------------------------------------------------

def spelled(value: str, rng) -> str:
    parts = []
    for c in value:
        if c.isdigit():
            parts.append(EN_DIGITS[int(c)])
        elif c == "#":
            parts.append(rng.choice(["hash", "pound", "number sign"]))
        elif c == "_":
            parts.append("underscore")
        else:
            parts.append(c.upper() if rng.random() < 0.5 else c)
    return rng.choice([" ", "-", ", "]).join(parts)


def nato(value: str, rng) -> str:
    out = []
    for c in value:
        if c.lower() in NATO:
            out.append(NATO[c.lower()])
        elif c.isdigit():
            out.append(rng.choice([EN_DIGITS[int(c)], c]))
        else:
            out.append({"#": "hash", "_": "underscore", "-": "dash"}.get(c, c))
    return " ".join(out)


def separated(value: str, rng) -> str:
    sep = rng.choice(["-", " ", ".", " · ", "/", "|", " _ "])
    return sep.join(value)


def homoglyph(value: str, rng) -> str:
    out = []
    for c in value:
        if c in CYRILLIC_LOOKALIKE:
            out.append(CYRILLIC_LOOKALIKE[c])
        elif c.isdigit():
            out.append(SCRIPTS["math_bold"][int(c)] if rng.random() < 0.6 else SCRIPTS["fullwidth"][int(c)])
        else:
            out.append(c)
    if all(a == b for a, b in zip(out, value)):
        out = [SCRIPTS["fullwidth"][int(c)] if c.isdigit() else c for c in value]
    return "".join(out)


def invisible(value: str, rng) -> str:
    mark = rng.choice(["\u200b", "\u200c", "\u2060", "\u00ad", "\ufeff"])
    return mark.join(value)


def url_escape(value: str, rng) -> str:
    return "".join(f"%{ord(c):02X}" for c in value)


def html_entities(value: str, rng) -> str:
    return "".join(f"&#{ord(c)};" if rng.random() < 0.5 else f"&#x{ord(c):x};" for c in value)


def b64(value: str, rng) -> str:
    return base64.b64encode(value.encode()).decode()


def hexed(value: str, rng) -> str:
    return rng.choice(["", "0x"]) + value.encode().hex()


def reversed_text(value: str, rng) -> str:
    return value[::-1]


def interleaved(value: str, rng) -> str:
    filler = rng.choice(["x", "~", "*", "q"])
    return filler.join(value)


def json_unicode(value: str, rng) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in value)


def rot13_digits(value: str, rng) -> str:
    """ROT13 on letters and +5 (mod 10) on digits."""
    out = []
    for c in value:
        if c.isalpha() and c.isascii():
            base = ord("a") if c.islower() else ord("A")
            out.append(chr(base + (ord(c) - base + 13) % 26))
        elif c.isdigit():
            out.append(str((int(c) + 5) % 10))
        else:
            out.append(c)
    return "".join(out)


DISGUISES = {
    "spelled": spelled, "nato": nato, "separated": separated, "homoglyph": homoglyph,
    "invisible": invisible, "url_escape": url_escape, "html_entity": html_entities, "base64": b64,
    "hex": hexed, "reversed": reversed_text, "interleaved": interleaved, "json_unicode": json_unicode,
    "rot13_shift": rot13_digits,
}
