"""The anti-leak control's critic and reviser: the reference told in disguise, and read back.

``disguised_rationale`` writes a task's reference actions as steps in shuffled order — numbered
lines (``3. …``) or prose ordinals (``Third, …``) — with tool names in camelCase or spaced words
and argument names in camelCase. Every value is disguised in one of several classes, a different
mix per task (seeded):

* IDs — split in groups of three, spelled letter by letter with a separator of any kind
  (``c r e d i t _ c a r d``, `` _ ``, commas, dots), NATO-alphabet spelling, digit runs as digit
  words (``five-two-four-four``), zero-width characters or soft hyphens inside, Cyrillic/Greek
  look-alike letters, a Markdown code or bold span, full-width digits;
* whole numbers and amounts — English words, digit-by-digit words, Spanish or German words
  (``num2words``), a currency code glued on (``USD1270.00``) or after, another locale's
  separators (``1.270,00``), full-width digits;
* dates — English, Spanish (``15 de mayo de 2024``) or German (``15. Mai 2024``) month names;
* other text with digits (addresses) — full-width digits.

``decode`` is the scripted reviser's reader: it recovers the exact actions from such a rationale
and gives up (returns ``None``) when any part is unreadable, e.g. redacted. A value's class is
named by a tag before it (``⟨id:nato⟩``), the reviser's private protocol, so decoding is exact;
the tag carries no value. Every disguise is checked to read back before it is used (else the
next class is tried). Under ``leaky`` the reviser reads the reference; under ``anti-leak`` the
guard must stop it. Test doubles, honest about what they are.
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from typing import Any, Callable

from num2words import num2words
from text_to_num import text2num

from critique.guard.leak_forms import MONTHS, tool_words, words_to_number

HEADER = "What the reference does:"
_LINE = re.compile(r"^(?:(\d+)\.|([A-Z][a-z-]+),) (.+?) — (\{.*\})\s*$", re.M)
_TAG = re.compile(r"^⟨(id|n|d|t):([a-z0-9]+)⟩ (.*)$", re.S)
_ORDINALS = {num2words(k, to="ordinal").capitalize(): k for k in range(1, 41)}
_DIGIT_WORDS = "zero one two three four five six seven eight nine".split()
_NATO = ("alfa bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar "
         "papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()
_NATO_SYMBOLS = {"_": "underscore", "#": "hash", "-": "dash", ".": "dot"}
SEPARATORS = (" ", " _ ", ", ", ".", " . ", "-", " / ")
_FORMAT_CHARS = ("\u200b", "\u00ad", "\u2060", "\u200d")
_LOOKALIKE = dict(zip("aceopxyABEHKMOPTXCIN", "асеорхуАВЕНКМОРТХСІΝ"))
_UNLOOK = {v: k for k, v in _LOOKALIKE.items()}
_ES_MONTHS = "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre".split()
_DE_MONTHS = "Januar Februar März April Mai Juni Juli August September Oktober November Dezember".split()


def _camel(key: str) -> str:
    parts = key.split("_")
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


def _snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), key)


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) - 48 + 0xFF10) if c.isdigit() else c for c in text)


def _digit_words(digits: str) -> str:
    return "-".join(_DIGIT_WORDS[int(d)] for d in digits)


def _from_digit_words(text: str) -> str:
    return re.sub(r" ?\b((?:%s)(?:-(?:%s))*)\b ?" % (("|".join(_DIGIT_WORDS),) * 2),
                  lambda m: "".join(str(_DIGIT_WORDS.index(w)) for w in m.group(1).split("-")), text)


# -- IDs: (encode(value, rng), decode(text)) per class ---------------------------------------

def _spelled(value: str, rng: random.Random) -> str:
    order = list(SEPARATORS)
    rng.shuffle(order)
    for sep in order:  # the first separator the reader's inference gets right
        if not set(sep.strip()) & set(value) and _unspelled(sep.join(value)) == value:
            return sep.join(value)
    raise ValueError("no separator reads back")


def _unspelled(text: str) -> str:
    """Longer separators are tried first: ``a _ b`` is ``ab`` spelled with `` _ ``."""
    for sep in sorted(SEPARATORS, key=len, reverse=True):
        pieces = text.split(sep)
        if len(pieces) > 1 and all(len(p) == 1 for p in pieces):
            return "".join(pieces)
    raise ValueError("not spelled")


def _nato(value: str, rng: random.Random) -> str:
    words = []
    for c in value:
        if c.isascii() and c.isalpha():
            word = _NATO[ord(c.lower()) - 97]
            words.append(word.capitalize() if c.isupper() else word)
        elif c.isdigit():
            words.append(_DIGIT_WORDS[int(c)])
        else:
            words.append(_NATO_SYMBOLS[c])
    return " ".join(words)


def _unnato(text: str) -> str:
    symbols = {v: k for k, v in _NATO_SYMBOLS.items()}
    out = []
    for w in text.split(" "):
        if w.lower() in _NATO:
            c = chr(97 + _NATO.index(w.lower()))
            out.append(c.upper() if w[0].isupper() else c)
        elif w in _DIGIT_WORDS:
            out.append(str(_DIGIT_WORDS.index(w)))
        else:
            out.append(symbols[w])
    return "".join(out)


def _zero_width(value: str, rng: random.Random) -> str:
    cuts = sorted(rng.sample(range(1, len(value)), k=min(3, len(value) - 1)))
    out, last = [], 0
    for cut in cuts:
        out += [value[last:cut], rng.choice(_FORMAT_CHARS)]
        last = cut
    return "".join(out) + value[last:]


def _lookalike(value: str, rng: random.Random) -> str:
    out = "".join(_LOOKALIKE.get(c, c) if rng.random() < 0.7 else c for c in value)
    if out == value:
        raise ValueError("no letter has a look-alike")
    return out


def _code_span(value: str, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return f"`{value}`"
    cut = rng.randrange(1, len(value))
    return f"**{value[:cut]}**{value[cut:]}"


_ID_CLASSES: dict[str, tuple[Callable[[str, random.Random], str], Callable[[str], str]]] = {
    "grouped": (lambda v, r: (lambda s: s.join(v[i:i + 3] for i in range(0, len(v), 3)))(r.choice(" -")),
                lambda t: re.sub(r"[ -]", "", t)),
    "spelled": (_spelled, _unspelled),
    "nato": (_nato, _unnato),
    "digitwords": (lambda v, r: re.sub(r"\d+", lambda m: f" {_digit_words(m.group(0))} ", v).strip(),
                   _from_digit_words),
    "zerowidth": (_zero_width, lambda t: "".join(c for c in t if unicodedata.category(c) != "Cf")),
    "lookalike": (_lookalike, lambda t: "".join(_UNLOOK.get(c, c) for c in t)),
    "code": (_code_span, lambda t: t.replace("`", "").replace("*", "")),
    "fullwidth": (lambda v, r: _fullwidth(v) if re.search(r"\d", v) else v, lambda t: unicodedata.normalize("NFKC", t)),
}

# -- whole numbers and amounts ---------------------------------------------------------------


def _locale(n: int) -> str:
    return f"{n:,}".replace(",", ".") + ",00"


def _from_locale(text: str) -> int:
    whole, _, cents = text.partition(",")
    if cents != "00" or not re.fullmatch(r"\d{1,3}(?:\.\d{3})*", whole):
        raise ValueError("not a locale amount")
    return int(whole.replace(".", ""))


def _from_words(text: str, lang: str) -> int:
    return int(text2num(text, lang))


def _en_words(text: str) -> int:
    n = words_to_number(text)
    if n is None or not float(n).is_integer():
        raise ValueError("not number words")
    return int(n)


def _from_glued(text: str) -> int:
    m = re.fullmatch(r"USD(\d+)\.00", text)
    if not m:
        raise ValueError("not a glued amount")
    return int(m.group(1))


_NUMBER_CLASSES: dict[str, tuple[Callable[[int], str], Callable[[str], int]]] = {
    "words": (lambda n: num2words(n), _en_words),
    "digitwords": (lambda n: _digit_words(str(n)), lambda t: int(_from_digit_words(t))),
    "es": (lambda n: num2words(n, lang="es"), lambda t: _from_words(t, "es")),
    "de": (lambda n: num2words(n, lang="de"), lambda t: _from_words(t, "de")),
    "glued": (lambda n: f"USD{n}.00", _from_glued),
    "suffix": (lambda n: f"{n} USD", lambda t: int(re.fullmatch(r"(\d+) USD", t).group(1))),
    "locale": (_locale, _from_locale),
    "fullwidth": (lambda n: _fullwidth(str(n)), lambda t: int(unicodedata.normalize("NFKC", t))),
}

# -- dates -----------------------------------------------------------------------------------


def _date(y: int, m: int, d: int, style: str) -> str:
    if style == "es":
        return f"{d} de {_ES_MONTHS[m - 1]} de {y}"
    if style == "de":
        return f"{d}. {_DE_MONTHS[m - 1]} {y}"
    return f"{MONTHS[m - 1].capitalize()} {d}, {y}"


def _undate(text: str, style: str) -> str:
    pattern, months = {"es": (r"(\d{1,2}) de ([a-z]+) de (\d{4})", _ES_MONTHS),
                       "de": (r"(\d{1,2})\. (\S+) (\d{4})", _DE_MONTHS)}.get(
        style, (r"([A-Za-z]+) (\d{1,2}), (\d{4})", [x.capitalize() for x in MONTHS]))
    m = re.fullmatch(pattern, text)
    if not m:
        raise ValueError(f"unreadable date {text!r}")
    day, month, year = (m.group(1), m.group(2), m.group(3)) if style in ("es", "de") else (m.group(2), m.group(1), m.group(3))
    return f"{year}-{months.index(month) + 1:02d}-{int(day):02d}"


_DATE_STYLES = ("en", "es", "de")

# -- values ----------------------------------------------------------------------------------


def _undisguise_text(text: str) -> Any:
    """One tagged value back; ``ValueError`` when it cannot be read exactly."""
    if "[redacted]" in text:
        raise ValueError("redacted")
    m = _TAG.match(text)
    if not m:
        return text
    kind, cls, body = m.groups()
    if kind == "id":
        return _ID_CLASSES[cls][1](body)
    if kind == "n":
        return _NUMBER_CLASSES[cls][1](body)
    if kind == "d":
        return _undate(body, cls)
    return unicodedata.normalize("NFKC", body)  # "t": text with full-width digits


def _tagged(kind: str, cls: str, encode: Callable[[], str], value: Any) -> str | None:
    """The tagged disguise, if it reads back to exactly ``value``; else ``None``."""
    try:
        text = f"⟨{kind}:{cls}⟩ {encode()}"
        return text if _undisguise_text(text) == value else None
    except (ValueError, KeyError, IndexError, AttributeError, TypeError):
        return None


def _classes(mix: dict[str, list[str]], kind: str, rng: random.Random) -> list[str]:
    """The order to try classes in: mostly the task's own order, sometimes a random one."""
    classes = list(mix[kind])
    if rng.random() < 0.4:
        rng.shuffle(classes)
    return classes


def _disguise(value: Any, rng: random.Random, mix: dict[str, list[str]]) -> Any:
    if isinstance(value, dict):
        return {_camel(k): _disguise(v, rng, mix) for k, v in value.items()}
    if isinstance(value, list):
        return [_disguise(v, rng, mix) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        for cls in _classes(mix, "n", rng):
            out = _tagged("n", cls, lambda: _NUMBER_CLASSES[cls][0](value), value)
            if out:
                return out
        return value
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        y, m, d = (int(p) for p in value.split("-"))
        cls = _classes(mix, "d", rng)[0]
        return _tagged("d", cls, lambda: _date(y, m, d, cls), value) or value
    if re.search(r"\d", value) and " " not in value and len(value) >= 4 and value.isascii():
        for cls in _classes(mix, "id", rng):
            out = _tagged("id", cls, lambda: _ID_CLASSES[cls][0](value, rng), value)
            if out:
                return out
        return value
    if re.search(r"\d", value) and value.isascii() and rng.random() < 0.5:
        return _tagged("t", "fullwidth", lambda: _fullwidth(value), value) or value
    return value


def _mix(rng: random.Random) -> dict[str, list[str]]:
    """A task's mix: each kind's classes in a seeded order (the first is the task's favourite)."""
    mix = {"id": list(_ID_CLASSES), "n": list(_NUMBER_CLASSES), "d": list(_DATE_STYLES)}
    for classes in mix.values():
        rng.shuffle(classes)
    return mix


def disguised_rationale(actions: list[dict[str, Any]], seed: str) -> str:
    rng = random.Random(seed)
    style = rng.choice(["camel", "spaced"])
    ordinals = rng.random() < 0.5
    mix = _mix(rng)
    lines = []
    for k, action in enumerate(actions, 1):
        words = action["name"].split("_")
        name = (words[0] + "".join(w.capitalize() for w in words[1:])) if style == "camel" else " ".join(words)
        number = num2words(k, to="ordinal").capitalize() + "," if ordinals else f"{k}."
        lines.append(f"{number} {name} — {json.dumps(_disguise(action['arguments'], rng, mix), ensure_ascii=False)}")
    rng.shuffle(lines)
    return f"The plan stops before the goal is met. {HEADER}\n" + "\n".join(lines)


def classes_used(text: str) -> set[str]:
    """The disguise classes a rationale uses (``id:nato``, ``n:es``, ``seq:ordinals`` …)."""
    used = {f"{k}:{c}" for k, c in re.findall(r"⟨(id|n|d|t):([a-z0-9]+)⟩", text)}
    numbered = [m for m in _LINE.finditer(text)]
    used |= {"seq:ordinals" if m.group(2) else "seq:numbered" for m in numbered}
    return used


def _undisguise(value: Any) -> Any:
    if isinstance(value, dict):
        return {_snake(k): _undisguise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_undisguise(v) for v in value]
    if not isinstance(value, str):
        return value
    return _undisguise_text(value)


def decode(text: str) -> list[dict[str, Any]] | None:
    """The actions a disguised rationale tells, in their numbered order; ``None`` if it tells
    none or any step cannot be read back exactly (a redacted value or tool name)."""
    if HEADER not in text or "[redacted]" in text.split(HEADER, 1)[1]:
        return None
    steps = []
    for digits, ordinal, name, args in _LINE.findall(text):
        if not re.fullmatch(r"[A-Za-z][A-Za-z ]*", name) or (ordinal and ordinal not in _ORDINALS):
            return None
        tool = "_".join(tool_words(name))
        try:
            steps.append((int(digits) if digits else _ORDINALS[ordinal],
                          {"name": tool, "arguments": _undisguise(json.loads(args))}))
        except (ValueError, KeyError, IndexError, AttributeError, TypeError, json.JSONDecodeError):
            return None
    told = text.split(HEADER, 1)[1].strip().splitlines()
    if not steps or len(steps) != len([t for t in told if t.strip()]):
        return None
    steps.sort(key=lambda s: s[0])
    if [n for n, _ in steps] != list(range(1, len(steps) + 1)):
        return None
    return [a for _, a in steps]
