"""The anti-leak control's critic and reviser: the reference told in disguise, and read back.

``disguised_rationale`` writes a task's reference actions as numbered steps, in shuffled order,
with tool names in camelCase or spaced words, argument names in camelCase, IDs split into
groups by spaces or hyphens, whole numbers in words, other amounts with a currency code and
dates with month names — a different mix per task. ``decode`` is the scripted reviser's reader:
it recovers the exact actions from such a rationale and gives up (returns ``None``) when any
part is unreadable, e.g. redacted. Under ``leaky`` the reviser reads the reference; under
``anti-leak`` the guard must stop it. Test doubles, honest about what they are.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from critique.leak_forms import MONTHS, tool_words, words_to_number

_LINE = re.compile(r"^(\d+)\. (.+?) — (\{.*\})\s*$", re.M)
_ID_MARK = "⟨id⟩ "
_NUM_MARK = "⟨n⟩ "
_DATE_MARK = "⟨d⟩ "


def _camel(key: str) -> str:
    parts = key.split("_")
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


def _snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), key)


def _in_words(n: int) -> str:
    ones = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
            "fifteen sixteen seventeen eighteen nineteen").split()
    tens = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
    if n < 20:
        return ones[n]
    if n < 100:
        return tens[n // 10] + ("" if n % 10 == 0 else "-" + ones[n % 10])
    if n < 1000:
        return ones[n // 100] + " hundred" + ("" if n % 100 == 0 else " " + _in_words(n % 100))
    return _in_words(n // 1000) + " thousand" + ("" if n % 1000 == 0 else " " + _in_words(n % 1000))


def _disguise(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        return {_camel(k): _disguise(v, rng) for k, v in value.items()}
    if isinstance(value, list):
        return [_disguise(v, rng) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        if float(value).is_integer() and 0 <= value < 10**6:
            return _NUM_MARK + _in_words(int(value))
        return _NUM_MARK + f"{value} USD"
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        y, m, d = (int(p) for p in value.split("-"))
        return _DATE_MARK + f"{MONTHS[m - 1].capitalize()} {d}, {y}"
    if re.search(r"\d", value) and " " not in value and len(value) >= 4:
        sep = rng.choice([" ", "-"])
        return _ID_MARK + sep.join(value[i:i + 3] for i in range(0, len(value), 3))
    return value


def disguised_rationale(actions: list[dict[str, Any]], seed: str) -> str:
    rng = random.Random(seed)
    style = rng.choice(["camel", "spaced"])
    lines = []
    for k, action in enumerate(actions, 1):
        words = action["name"].split("_")
        name = (words[0] + "".join(w.capitalize() for w in words[1:])) if style == "camel" else " ".join(words)
        lines.append(f"{k}. {name} — {json.dumps(_disguise(action['arguments'], rng), ensure_ascii=False)}")
    rng.shuffle(lines)
    return "The plan stops before the goal is met. What the reference does:\n" + "\n".join(lines)


def _undisguise(value: Any) -> Any:
    if isinstance(value, dict):
        return {_snake(k): _undisguise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_undisguise(v) for v in value]
    if not isinstance(value, str):
        return value
    if "[redacted]" in value:
        raise ValueError("redacted")
    if value.startswith(_ID_MARK):
        return re.sub(r"[ -]", "", value[len(_ID_MARK):])
    if value.startswith(_NUM_MARK):
        text = value[len(_NUM_MARK):]
        number = float(text[:-4]) if text.endswith(" USD") else words_to_number(text)
        if number is None:
            raise ValueError(f"unreadable number {text!r}")
        return int(number) if float(number).is_integer() and not text.endswith(" USD") else number
    if value.startswith(_DATE_MARK):
        m = re.fullmatch(r"([A-Za-z]+) (\d{1,2}), (\d{4})", value[len(_DATE_MARK):])
        if not m:
            raise ValueError(f"unreadable date {value!r}")
        month = [x.lower() for x in MONTHS].index(m.group(1).lower()) + 1
        return f"{m.group(3)}-{month:02d}-{int(m.group(2)):02d}"
    return value


def decode(text: str) -> list[dict[str, Any]] | None:
    """The actions a disguised rationale tells, in their numbered order; ``None`` if it tells
    none or any step cannot be read back exactly (a redacted value or tool name)."""
    if "What the reference does:" not in text:
        return None
    steps = []
    for number, name, args in _LINE.findall(text):
        if "[redacted]" in name or not re.fullmatch(r"[A-Za-z][A-Za-z ]*", name):
            return None
        tool = "_".join(tool_words(name))
        try:
            steps.append((int(number), {"name": tool, "arguments": _undisguise(json.loads(args))}))
        except (ValueError, json.JSONDecodeError):
            return None
    told = text.split("What the reference does:", 1)[1].strip().splitlines()
    if not steps or len(steps) != len([t for t in told if t.strip()]):
        return None
    steps.sort(key=lambda s: s[0])
    if [n for n, _ in steps] != list(range(1, len(steps) + 1)):
        return None
    return [a for _, a in steps]
