"""Which tool a clause of prose describes, when it names none: "then change the order items".

A critic can tell the reference order without a tool name, by saying what each call does. A
tool's name says it in two parts: a verb (``modify``, ``get``, ``cancel``) and its objects
(``pending order items``). A clause describes a tool when it has a verb of the same class
(``change`` ≈ ``modify`` ≈ ``update``; ``look up`` ≈ ``get`` ≈ ``find``) and at least one of
its objects, and no other offered tool fits it as well (more objects matched, then a larger
share of them). Objects that only qualify (``pending``, ``delivered``, ``by``, ``id``,
``details``) count when said but are not needed. The tool's own description (the schema's
first sentence) adds its verbs: ``calculate`` "performs a calculation" and "work out" both
reach the class ``compute``.
"""

from __future__ import annotations

import re
from functools import lru_cache

VERB_CLASSES = {
    "lookup": "get find search look fetch retrieve check read list show view pull query locate identify see",
    "modify": "modify change update edit alter adjust amend correct fix switch move upgrade downgrade",
    "cancel": "cancel void drop annul terminate",
    "return": "return refund",
    "exchange": "exchange swap replace",
    "book": "book reserve create make purchase buy order",
    "compute": "calculate compute work figure add sum total",
    "transfer": "transfer escalate hand",
    "toggle": "toggle turn enable disable flip activate deactivate",
    "reset": "reset restart reboot reseat reinsert",
    "send": "send issue give grant credit",
    "set": "set configure select choose",
    "suspend": "suspend pause resume unsuspend",
    "refuel": "refuel top",
}
_VERB = {w: cls for cls, words in VERB_CLASSES.items() for w in words.split()}
_PHRASES = [(re.compile(r"\blook(?:s|ing|ed)?\s+(?:it\s+|them\s+)?up\b", re.I), "lookup"),
            (re.compile(r"\bwork(?:s|ing|ed)?\s+out\b", re.I), "compute"),
            (re.compile(r"\bhand(?:s|ing|ed)?\s+(?:it\s+)?over\b", re.I), "transfer"),
            (re.compile(r"\bsend(?:s|ing)?\s+(?:it\s+)?back\b", re.I), "return"),
            (re.compile(r"\btop(?:s|ping|ped)?\s+up\b", re.I), "refuel"),
            (re.compile(r"\bpull(?:s|ing|ed)?\s+up\b", re.I), "lookup")]
QUALIFIERS = {"pending", "delivered", "by", "id", "ids", "details", "detail", "info", "information",
              "all", "the", "of", "for", "to", "new", "current"}


def stem(word: str) -> str:
    w = word.lower()
    for suffix in ("ations", "ation", "ings", "ing", "ed", "ies", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)]
    return w


def _verb(word: str) -> str | None:
    w = word.lower()
    return _VERB.get(w) or _VERB.get(stem(w)) or _VERB.get(w.rstrip("s")) or _VERB.get(w[:-1] if w.endswith("d") else w)


@lru_cache(maxsize=4096)
def tool_parts(name: str, description: str = "") -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """A tool's verb classes, the objects it needs said (at least one), and its qualifiers."""
    words = [w for w in re.split(r"[_\W]+", name) if w]
    verbs = {v for v in (_verb(words[0]),) if v} if words else set()
    first = re.split(r"(?<=[.!?])\s", description.strip(), maxsplit=1)[0] if description else ""
    verbs |= {v for w in re.findall(r"[A-Za-z]+", first)[:3] if (v := _verb(w))}
    rest = words[1:] if verbs else words
    objects = {stem(w) for w in rest if w.lower() not in QUALIFIERS}
    qualifiers = {stem(w) for w in rest if w.lower() in QUALIFIERS - {"by", "the", "of", "for", "to"}}
    return frozenset(verbs), frozenset(objects), frozenset(qualifiers)


def clause_parts(clause: str) -> tuple[set[str], set[str]]:
    """A clause's verb classes and its stemmed words."""
    words = re.findall(r"[A-Za-z]+", clause)
    verbs = {v for w in words if (v := _verb(w))}
    verbs |= {cls for pattern, cls in _PHRASES if pattern.search(clause)}
    return verbs, {stem(w) for w in words}


def described(clause: str, tools: dict[str, str]) -> str | None:
    """The one tool of ``tools`` (name → description) the clause describes, or None."""
    verbs, words = clause_parts(clause)
    if not verbs:
        return None
    scored = []
    for name, description in tools.items():
        t_verbs, objects, qualifiers = tool_parts(name, description)
        if not t_verbs & verbs:
            continue
        said = objects & words
        if objects and not said:
            continue
        share = len(said) / len(objects) if objects else 1.0
        scored.append(((len(said), share, len(qualifiers & words)), name))
    if not scored:
        return None
    scored.sort(reverse=True)
    if len(scored) > 1 and scored[0][0] == scored[1][0]:
        return None  # two tools fit as well: the clause names neither
    return scored[0][1]
