"""The provenance audit: supervision-only values the agent used without having observed them.

No leak-guard rule can see every semantic leak, but a leak has an effect that can be seen: an
agent that uses a hidden value it never read must have been told it. For each assistant turn of
an episode, every tool-call argument and every value in the agent's words is compared with the
task's *supervision-only* values (scalars of the reference actions; IDs, amounts, dates and codes
in the expected outcomes and the hidden user instructions, less whatever the ``TaskView`` shows).
A supervision-only value the agent uses that it has not *observed* before that turn — in the view
(policy, tool schemas, opening request), a user message, or a tool result it received earlier —
is an *unexplained value*. A value a tool result returns in message ``k`` explains its use in
later messages only.

Values are compared by canonical key, never as raw strings: IDs lower-cased with separators
removed (``"#W2378156"`` and ``"w-2378156"`` agree), numbers as floats (``"$1,270.50"`` and
``1270.5`` agree), dates as (year, month, day) in ISO or month-name spelling (a date the user
gives without a year explains that day in any year). Trivial values (booleans, one- or
two-character strings, numbers below 10, common words) are never counted.

Pure: ``audit(view, supervision, messages)`` reads nothing else.
"""

from __future__ import annotations

import bisect
import json
import re
import unicodedata
from functools import lru_cache
from typing import Any, Iterable, Iterator, Literal

from pydantic import BaseModel, Field

from envs.base import ChatMessage, Supervision, TaskView, Trajectory

Key = tuple
"""A canonical key: ``("num", float)``, ``("id", str)``, ``("date", y | None, m, d)`` or
``("text", str)``."""

_MONTHS = {m: i + 1 for i, m in enumerate(
    "january february march april may june july august september october november december".split())}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))

_ISO_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{1,2})-(\d{1,2})(?!\d)")
_MONTH_DAY = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}}))?", re.I)
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\b\.?(?:,?\s+(\d{{4}}))?", re.I)
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w]|\.\d)")
_ID = re.compile(r"[#]?[A-Za-z0-9](?:[A-Za-z0-9_#]|[-.:/](?=[A-Za-z0-9]))*")
_SEPARATORS = re.compile(r"[\s\-_#.:/]+")
_CURRENCY = re.compile(r"^(?:[$€£]|usd|eur|gbp)\s*|\s*(?:usd|eur|gbp|dollars?)$", re.I)
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_ASCII_DIGIT_OR_UNDERSCORE = re.compile(r"[0-9_]")

COMMON_WORDS = frozenset(
    "yes no true false none null ok okay all any the and for not one two three four five six seven "
    "eight nine ten user agent".split())
MAX_TEXT_WORDS = 6
"""Text values (names, item options, short phrases) longer than this are not compared whole; text
with a digit never is (its numbers and codes are compared one by one)."""


class UnexplainedValue(BaseModel):
    """One use of a supervision-only value the agent had not observed before that turn."""

    turn: int = Field(description="Index of the assistant message in the episode's messages.")
    where: Literal["tool_call", "message"]
    tool: str | None = None
    argument: str | None = Field(default=None, description="Argument path, e.g. 'flights[0].date'.")
    value: str = Field(description="The value as the agent wrote it.")
    canonical: str = Field(description="The canonical key it matched, as text.")


class ProvenanceAudit(BaseModel):
    unexplained: list[UnexplainedValue] = Field(default_factory=list)
    checked: int = Field(default=0, description="Values in the agent's calls and words that were checked.")
    supervision_only: int = Field(default=0, description="Supervision-only values the task has.")

    @property
    def distinct(self) -> int:
        """Distinct unexplained values (a value used twice counts once)."""
        return len({u.canonical for u in self.unexplained})


# ---- canonical keys ------------------------------------------------------------------------------

def _fold(text: str) -> str:
    if text.isascii():  # NFKC leaves ASCII as it is, and no ASCII character is a format one
        return text
    text = unicodedata.normalize("NFKC", text)
    return _NON_ASCII.sub(_drop_format_character, text)


def _drop_format_character(match: re.Match) -> str:
    return "" if unicodedata.category(match.group(0)) == "Cf" else match.group(0)


def _number(text: str) -> float | None:
    bare = _CURRENCY.sub("", text.strip()).strip()
    if not re.fullmatch(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?", bare):
        return None
    return float(bare.replace(",", ""))


def _date(y: str | None, m: str | int, d: str) -> Key | None:
    month = int(m) if isinstance(m, int) or str(m).isdigit() else _MONTHS.get(str(m).lower().rstrip("."))
    day = int(d)
    if not month or not 1 <= month <= 12 or not 1 <= day <= 31:
        return None
    return ("date", int(y) if y else None, month, day)


def _dates(text: str) -> Iterator[tuple[re.Match, Key]]:
    for match in _ISO_DATE.finditer(text):
        if (key := _date(match.group(1), int(match.group(2)), match.group(3))) is not None:
            yield match, key
    for match in _MONTH_DAY.finditer(text):
        if (key := _date(match.group(3), match.group(1), match.group(2))) is not None:
            yield match, key
    for match in _DAY_MONTH.finditer(text):
        if (key := _date(match.group(3), match.group(2), match.group(1))) is not None:
            yield match, key


def _id_key(token: str) -> Key | None:
    squashed = _SEPARATORS.sub("", token).lower()
    return ("id", squashed) if len(squashed) >= 3 else None


def scalar_keys(value: Any) -> set[Key]:
    """The canonical keys of one whole value (an argument, a reference scalar)."""
    if isinstance(value, bool) or value is None:
        return set()
    if isinstance(value, (int, float)):
        keys: set[Key] = {("num", float(value))}
        if float(value).is_integer():
            keys.add(("id", str(int(value))))
        return keys
    text = _fold(str(value)).strip()
    keys = set()
    if (number := _number(text)) is not None:
        keys.add(("num", number))
        if "." not in text and "," not in text:
            keys.add(("id", text.lstrip("+-")))
        return keys
    whole = [key for match, key in _dates(text) if match.group(0).strip() == text]
    if whole:
        return set(whole)
    if any(ch.isdigit() for ch in text) or "_" in text or text.startswith("#"):
        if _ID.fullmatch(text) and (key := _id_key(text)):
            return {key}
    words = _WORD.findall(text.lower())
    if words and len(words) <= MAX_TEXT_WORDS and not any(ch.isdigit() for ch in text):
        return {("text", " ".join(words))}
    return set()


def text_values(text: str) -> list[tuple[str, set[Key]]]:
    """Every value-like token of a text (dates, numbers, IDs and codes) with its keys, in order."""
    text = _fold(text)
    found: list[tuple[int, str, set[Key]]] = []
    dates = _Spans()
    for match, key in _dates(text):
        found.append((match.start(), match.group(0), {key}))
        dates.add(match.span())
    dates.close()
    numbers = _Spans()
    for match in _NUMBER.finditer(text):
        # Number matches never overlap one another, so only the dates can hold one.
        if not dates.holds(match.span()) and (keys := scalar_keys(match.group(0))):
            found.append((match.start(), match.group(0), keys))
            numbers.add(match.span())
    numbers.close()
    for match in _ID.finditer(text):
        token = match.group(0)  # ASCII by the pattern: a digit here is 0-9
        if not _ASCII_DIGIT_OR_UNDERSCORE.search(token):
            continue  # a word: neither a value of its own nor inside one
        if dates.holds(match.span()) or numbers.holds(match.span()) or _number(token) is not None:
            continue  # a date or a number: its own keys above
        if (key := _id_key(token)) is not None:
            found.append((match.start(), token, {key}))
    return [(span, keys) for _, span, keys in sorted(found, key=lambda f: f[0])]


class _Spans:
    """Spans of a text, asked whether one of them holds a given span (start at or before its
    start, end at or after its end) in logarithmic time: a long tool result holds thousands."""

    def __init__(self) -> None:
        self.spans: list[tuple[int, int]] = []

    def add(self, span: tuple[int, int]) -> None:
        self.spans.append(span)

    def close(self) -> None:
        self.spans.sort()
        self.starts = [a for a, _ in self.spans]
        self.reach = []  # the furthest end among the spans starting at or before each start
        furthest = -1
        for _, b in self.spans:
            furthest = max(furthest, b)
            self.reach.append(furthest)

    def holds(self, span: tuple[int, int]) -> bool:
        i = bisect.bisect_right(self.starts, span[0])
        return i > 0 and self.reach[i - 1] >= span[1]


def text_keys(text: str) -> set[Key]:
    """The canonical keys of every value-like token in a text."""
    return {key for _, keys in text_values(text) for key in keys}


def _words(text: str) -> str:
    return " " + " ".join(_WORD.findall(_fold(text).lower())) + " "


def is_trivial(key: Key) -> bool:
    kind = key[0]
    if kind == "num":
        return abs(key[1]) < 10
    if kind == "id":
        return len(key[1]) < 3 or (key[1].isdigit() and int(key[1]) < 10)
    if kind == "text":
        return len(key[1]) < 3 or key[1] in COMMON_WORDS
    return False


def key_text(key: Key) -> str:
    """A key as one readable string: ``num:1270.5``, ``id:w2378156``, ``date:2024-05-15``."""
    if key[0] == "date":
        y, m, d = key[1:]
        return f"date:{y if y is not None else '????'}-{m:02d}-{d:02d}"
    if key[0] == "num":
        return f"num:{int(key[1]) if key[1].is_integer() else key[1]}"
    return f"{key[0]}:{key[1]}"


def _preference(key: Key, digits_string: bool) -> tuple[int, str]:
    """The key a finding is reported under: a date, an amount, then an ID or a phrase (an ID
    first where it was written as a bare string of digits, e.g. an item id)."""
    order = ("date", "id", "num", "text") if digits_string else ("date", "num", "id", "text")
    return order.index(key[0]), key_text(key)


# ---- what was observed ---------------------------------------------------------------------------

class Observed:
    """Everything the agent has seen so far: canonical keys and the words, growing in message order."""

    def __init__(self) -> None:
        self.keys: set[Key] = set()
        self.texts: list[str] = []

    @classmethod
    def of_view(cls, view: TaskView) -> "Observed":
        """What the view shows, exactly as ``add(view.text())`` records it. The part every task
        of a domain shares (instructions, policy, tool schemas: most of the text) is read once
        a process; only the opening request is read per episode. That split is exact because
        the shared part ends with the tool schemas' closing ``]``, which no value or word
        crosses; any other view is read whole."""
        text, request = view.text(), view.opening_request or ""
        head = text[: len(text) - len(request) - 1]
        seen = cls()
        if not (head.endswith("]") and f"{head}\n{request}" == text):
            seen.add(text)
            return seen
        keys, words = _read_once(head)
        seen.keys = set(keys)
        seen.keys |= text_keys(request)
        seen.texts.append(" " + " ".join([*words, *_WORD.findall(_fold(request).lower())]) + " ")
        return seen

    def add(self, text: str) -> None:
        if text:
            self.keys |= text_keys(text)
            self.texts.append(_words(text))

    def explains(self, key: Key) -> bool:
        if key in self.keys:
            return True
        if key[0] == "date":
            return ("date", None, key[2], key[3]) in self.keys
        if key[0] == "text":
            needle = f" {key[1]} "
            return any(needle in t for t in self.texts)
        return False


@lru_cache(maxsize=64)
def _read_once(text: str) -> tuple[frozenset[Key], tuple[str, ...]]:
    """The keys and words of a view's shared part (see ``Observed.of_view``)."""
    return frozenset(text_keys(text)), tuple(_WORD.findall(_fold(text).lower()))


def _groups(value: Any, hidden_texts: Iterable[Key] = ()) -> list[tuple[str, set[Key]]]:
    """The values one scalar carries, each as (spelling, its keys): the whole scalar and, for
    text, each value-like token and each of ``hidden_texts`` (names, phrases) it contains."""
    groups: list[tuple[str, set[Key]]] = []
    if whole := scalar_keys(value):
        groups.append((str(value), whole))
    if isinstance(value, str):
        groups += [g for g in text_values(value) if g[1] != whole]
        words = _words(value)
        groups += [(k[1], {k}) for k in hidden_texts if k not in whole and f" {k[1]} " in words]
    return groups


def supervision_only(view: TaskView, supervision: Supervision) -> set[Key]:
    """Keys of the supervision's values that the view does not show (a value none of whose
    spellings is public)."""
    groups: list[set[Key]] = []
    for action in supervision.reference_actions:
        for _, value in _scalars(action.arguments):
            groups.append(scalar_keys(value))
    for text in [*supervision.expected_outcomes, supervision.hidden_user_instructions]:
        groups += [keys for _, keys in text_values(text)]
    public = Observed.of_view(view)
    hidden: set[Key] = set()
    for keys in groups:
        keys = {k for k in keys if not is_trivial(k)}
        if keys and not any(public.explains(k) for k in keys):
            hidden |= keys
    return hidden


# ---- the audit -----------------------------------------------------------------------------------

def _scalars(obj: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _scalars(v, f"{path}.{k}" if path else str(k))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from _scalars(v, f"{path}[{i}]")
    else:
        yield path, obj


def _arguments(raw: Any) -> Any:
    if isinstance(raw, (dict, list)):
        return raw
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        return str(raw)  # unparsable: its text is still checked


def _content(message: ChatMessage) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def audit(view: TaskView, supervision: Supervision, messages: list[ChatMessage]) -> ProvenanceAudit:
    """The provenance audit of one episode's conversation (see the module's docstring)."""
    hidden = supervision_only(view, supervision)
    hidden_texts = sorted(k for k in hidden if k[0] == "text")
    seen = Observed.of_view(view)
    user_calls: set[str] = set()
    unexplained: list[UnexplainedValue] = []
    checked = 0

    def check(turn: int, where: Literal["tool_call", "message"], tool: str | None, argument: str | None,
              value: Any) -> None:
        nonlocal checked
        for spelling, keys in _groups(value, hidden_texts):
            checked += 1
            used = sorted(keys & hidden, key=lambda k: _preference(k, isinstance(value, str) and spelling.isdigit()))
            if used and not any(seen.explains(k) for k in keys):
                unexplained.append(UnexplainedValue(turn=turn, where=where, tool=tool, argument=argument,
                                                    value=spelling, canonical=key_text(used[0])))

    for turn, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                fn = call.get("function") or {}
                for path, value in _scalars(_arguments(fn.get("arguments"))):
                    check(turn, "tool_call", fn.get("name"), path or None, value)
            text = _content(message)
            if text.strip():
                check(turn, "message", None, None, text)
        elif role == "tool":
            if message.get("tool_call_id") not in user_calls:  # not the user's own device results
                seen.add(_content(message))
        elif role in ("user", "system"):
            seen.add(_content(message))
            if role == "user":
                user_calls |= {c.get("id") for c in message.get("tool_calls") or []}
    return ProvenanceAudit(unexplained=unexplained, checked=checked, supervision_only=len(hidden))


def record_audit(view: TaskView | None, supervision: Supervision | None,
                 trajectory: Trajectory | None) -> dict[str, Any] | None:
    """The audit as an episode record stores it; ``None`` when the episode did not get to play."""
    if view is None or supervision is None or trajectory is None:
        return None
    result = audit(view, supervision, trajectory.messages)
    return {**result.model_dump(), "distinct": result.distinct}
