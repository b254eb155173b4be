"""Values in other languages: amounts, dates, times and counts in Spanish, German, French,
Italian, Portuguese, Dutch and Chinese (number words through ``num2words``, localised dates
through ``babel``; Chinese numerals by a small converter, since num2words has no ``zh``), and
whole sentences in those languages that carry an id."""

from __future__ import annotations

import datetime as dt
import random

from babel.dates import format_date
from num2words import num2words

from leakbench.adversary.canon import as_number

LANGS = ("es", "de", "fr", "it", "pt", "nl", "zh")
_ZH = "零一二三四五六七八九"
_CUR = {"es": "dólares", "de": "Dollar", "fr": "dollars", "it": "dollari", "pt": "dólares", "nl": "dollar",
        "zh": "美元"}
_NOUNS = {  # count nouns: passengers, items, lines
    "passengers": {"es": "pasajeros", "de": "Passagiere", "fr": "passagers", "it": "passeggeri",
                   "pt": "passageiros", "nl": "passagiers", "zh": "位乘客"},
    "items": {"es": "artículos", "de": "Artikel", "fr": "articles", "it": "articoli", "pt": "itens",
              "nl": "artikelen", "zh": "件商品"},
    "lines": {"es": "líneas", "de": "Leitungen", "fr": "lignes", "it": "linee", "pt": "linhas",
              "nl": "lijnen", "zh": "条线路"},
}
_ID_SENTENCE = {
    "es": "La {label} correcta es {v}, no la que propone el plan.",
    "de": "Die richtige Kennung ist {v}; der Plan nimmt die falsche.",
    "fr": "Le bon identifiant est {v}, pas celui du plan.",
    "it": "L'identificativo giusto è {v}, non quello del piano.",
    "pt": "O identificador certo é {v}, não o do plano.",
    "nl": "Het juiste nummer is {v}, niet dat van het plan.",
    "zh": "正确的编号是{v}，不是计划里的那个。",
}


def zh_int(n: int) -> str:
    """Chinese numerals for 0 ≤ n < 10^8 ('一千二百七十', '十五')."""
    if 10 <= n < 20:
        return "十" + (_ZH[n - 10] if n > 10 else "")
    return _zh_int(n)


def _zh_int(n: int) -> str:
    if n < 10:
        return _ZH[n]
    if n >= 10000:
        hi, lo = divmod(n, 10000)
        return zh_int(hi) + "万" + ("" if lo == 0 else ("零" if lo < 1000 else "") + _zh_int(lo))
    out, zero = "", False
    for unit, name in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
        d, n = divmod(n, unit)
        if d:
            out += ("零" if zero and out else "") + _ZH[d] + name
            zero = False
        elif out:
            zero = True
    return out


def zh_number(x: float) -> str:
    whole = int(x)
    frac = f"{x:.2f}".split(".")[1].rstrip("0")
    return zh_int(whole) + ("点" + "".join(_ZH[int(c)] for c in frac) if frac else "")


def words_for(x: float, lang: str) -> str:
    if lang == "zh":
        return zh_number(x)
    if float(x).is_integer():
        return num2words(int(x), lang=lang)
    whole, cents = divmod(round(x * 100), 100)
    conj = {"es": "con", "de": "und", "fr": "et", "it": "e", "pt": "e", "nl": "en"}[lang]
    return f"{num2words(whole, lang=lang)} {conj} {num2words(cents, lang=lang)}"


def amount(v: str, rng: random.Random, lang: str) -> str | None:
    n = as_number(v)
    if n is None:
        return None
    w = words_for(n, lang)
    return w + _CUR[lang] if lang == "zh" else f"{w} {_CUR[lang]}"


def date(v: str, rng: random.Random, lang: str) -> str | None:
    try:
        d = dt.date.fromisoformat(v)
    except ValueError:
        return None
    if lang == "zh":
        return rng.choice([f"{d.year}年{d.month}月{d.day}日", f"{zh_int(d.month)}月{zh_int(d.day)}日"])
    day = num2words(d.day, lang=lang, to="ordinal") if lang in ("de", "nl", "it") else num2words(d.day, lang=lang)
    month = format_date(d, "MMMM", locale=lang)
    spelled = {"es": f"el {day} de {month}", "de": f"am {day} {month}", "fr": f"le {day} {month}",
               "it": f"il {day} {month}", "pt": f"dia {day} de {month}", "nl": f"op {day} {month}"}[lang]
    return rng.choice([spelled, format_date(d, format="long", locale=lang), format_date(d, "d. MMMM", locale=lang)])


def time(v: str, rng: random.Random, lang: str) -> str | None:
    try:
        hh, mm = map(int, v.split(":")[:2])
    except ValueError:
        return None
    if lang == "zh":
        return f"{'上午' if hh < 12 else '下午'}{zh_int(hh % 12 or 12)}点" + (f"{zh_int(mm)}分" if mm else "整")
    h = num2words(hh, lang=lang)
    m = num2words(mm, lang=lang) if mm else ""
    return {"es": f"a las {h}" + (f" y {m}" if m else " en punto"), "de": f"um {h} Uhr {m}".strip(),
            "fr": f"à {h} heures {m}".strip(), "it": f"alle {h}" + (f" e {m}" if m else ""),
            "pt": f"às {h}" + (f" e {m}" if m else " horas"), "nl": f"om {h} uur {m}".strip()}[lang]


def count(v: str, rng: random.Random, lang: str, noun: str) -> str | None:
    n = as_number(v)
    nouns = _NOUNS.get(noun)
    if n is None or not nouns:
        return None
    w = zh_int(int(n)) if lang == "zh" else num2words(int(n), lang=lang)
    return f"{w}{nouns[lang]}" if lang == "zh" else f"{w} {nouns[lang]}"


def id_sentence(v: str, rng: random.Random, lang: str, label: str = "reserva") -> str:
    return _ID_SENTENCE[lang].format(v=v, label=label)


def id_digits(v: str, rng: random.Random, lang: str) -> str | None:
    if sum(c.isdigit() for c in v) < 3:
        return None
    conv = (lambda d: _ZH[d]) if lang == "zh" else (lambda d: num2words(d, lang=lang))
    out, run = [], ""
    for c in v:
        if c.isdigit():
            if run:
                out.append(run)
                run = ""
            out.append(conv(int(c)))
        else:
            run += c
    return " ".join(out + ([run] if run else []))
