"""Which unseen numbers could carry the supervision — the guard's relevance test.

The allow-list finds every value the tested model has not seen; this module says which of them
are a risk. An unseen *identifier* (letters with digits, a spelled stretch, a piece of an ID
pointed at, a name), a *date* or *time*, and a *record-shaped* number (an amount with cents or a
currency, four digits or more) are always a risk: only a record supplies them. A bare number
("steps 11 and 12", "fifteen or twenty calls", "30 %", "30 seconds") is a risk only when some
derivation of the supervision reaches it:

* ``value`` — equal to a number the supervision states (reference arguments, outcomes, hidden
  instructions), after canonicalisation (``1,270.00`` = ``1270``);
* ``part`` — a digit group of a supervision value (``045`` of ``HAT045``, the ``15`` of a date
  is left out: days of the month are every critique's step numbers);
* ``arithmetic`` — the sum or difference of two supervision amounts, or all of them summed;
* ``count`` — how many reference actions there are (all, the assistant's, distinct tools, each
  tool, the writes) and how many items any list argument holds (items, passengers, lines).

A number no derivation reaches stays: the critic's own counting of the plan and its advice
carry nothing of the answer. ``bench/leak_guard.md`` measures what each derivation costs.

The guard does not read the database, so it cannot derive a record's own numbers (a fare, a
certificate's balance, an order's total). A bare number is therefore tested against the
derivations only where it is *about the plan* — written as a step reference (``step 11``,
``steps 3, 4 and 11``, ``第11步``) or as a count, size, share or duration of the critique's own
things (``twenty calls``, ``a 12-step plan``, ``at most 3 retries``, ``30 %``, ``20 seconds``), in
the languages the readers know; anywhere else ("the fare is 162") it may be a record's and goes.
"""

from __future__ import annotations

import re
from itertools import combinations

from envs.base import Supervision, scalar_values

DERIVATIONS = ("value", "part", "count")
ALL_DERIVATIONS = ("value", "part", "arithmetic", "count")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_WRITE = re.compile(r"^(?:cancel|update|book|modify|exchange|return|refuel|enable|disable|send|suspend|"
                    r"resume|transfer|toggle|set|reset|grant|make|change|add|remove|create|delete)", re.I)
CURRENCY = re.compile(
    r"[$€£¥₹₩₽]|(?<![a-z])(?:usd|eur|gbp|dollars?|bucks|euros?|pounds?|cents?|d[oó]lar(?:es)?|dollari|"
    r"rupees?|yen|yuan|won)(?![a-z])|美元|元|ドル|円|달러|долл\w*|руб\w*|रुपय\w*|डॉलर", re.I)
"""An amount's currency, in the languages the readers know: a number beside it is a price."""


def _numbers(text: str) -> list[float]:
    return [float(m.group(0).replace(",", ".")) if m.group(0).count(",") == 1 and len(m.group(0).split(",")[1]) != 3
            else float(m.group(0).replace(",", "")) for m in _NUMBER.finditer(text)]


def derivations(supervision: Supervision, which: tuple[str, ...] = ALL_DERIVATIONS) -> dict[str, frozenset[float]]:
    """Every number each derivation of the supervision reaches."""
    values: list[str] = []
    for action in supervision.reference_actions:
        values += list(scalar_values(action.arguments))
    texts = [*supervision.expected_outcomes, supervision.hidden_user_instructions]
    stated: set[float] = set()
    parts: set[float] = set()
    for v in values:
        whole = re.fullmatch(r"[$]?\d+(?:\.\d+)?", v.strip())
        if whole:
            stated.add(float(v.strip().lstrip("$")))
        else:
            parts |= {float(g) for g in re.findall(r"\d{2,}", v) if not _is_date(v) or len(g) == 4}
    for text in texts:
        stated |= set(_numbers(text))
    out: dict[str, frozenset[float]] = {}
    if "value" in which:
        out["value"] = frozenset(stated)
    if "part" in which:
        out["part"] = frozenset(parts - stated)
    if "arithmetic" in which:
        amounts = sorted({n for n in stated if n >= 1})
        sums = {a + b for a, b in combinations(amounts, 2)} | {abs(a - b) for a, b in combinations(amounts, 2)}
        if len(amounts) > 2:
            sums.add(sum(amounts))
        out["arithmetic"] = frozenset(round(x, 2) for x in sums if x > 0)
    if "count" in which:
        actions = supervision.reference_actions
        names = [a.name for a in actions]
        counts = {len(actions), len(set(names)), sum(a.requestor == "assistant" for a in actions),
                  sum(bool(_WRITE.match(n)) for n in names)}
        out["count"] = frozenset(float(c) for c in counts if c > 1)  # 'one call' counts nothing
    return out


def _is_date(v: str) -> bool:
    return re.fullmatch(r"\d{4}-\d{2}-\d{2}(?:[T ][\d:]+)?", v.strip()) is not None


def record_shaped(value: float, written: str) -> bool:
    """An amount with cents (``54.04``, ``500.00``) or a number of four digits or more: only a
    record says it."""
    if abs(value) >= 1000:
        return True
    return re.search(r"\d[.,]\d{2}(?!\d)", written) is not None


class Relevance:
    """The numbers a guard's supervision could be carried by, joined over the chosen derivations."""

    def __init__(self, supervision: Supervision, which: tuple[str, ...] = DERIVATIONS):
        self.by_derivation = derivations(supervision, which)
        self.reachable = frozenset().union(*self.by_derivation.values()) if self.by_derivation else frozenset()

    def reaches(self, value: float, context: str = "calls") -> bool:
        """Whether a derivation reaches ``value``. Only a count of calls or steps ('about ten
        calls should do') is compared with the reference's counts; a step reference ('step 7'),
        a duration, a share or a count of other things is compared with what the supervision
        states (its values and their parts, sums and differences when chosen)."""
        pool = self.reachable if context == "calls" else self.reachable - self.by_derivation.get("count", frozenset())
        return any(abs(value - n) < 1e-6 for n in pool)

    def which(self, value: float) -> list[str]:
        """The derivations that reach ``value`` (for the measurement of each one's cost)."""
        return [k for k, ns in self.by_derivation.items() if any(abs(value - n) < 1e-6 for n in ns)]


_STEP_WORDS = (r"steps?|stages?|calls?|phases?|points?|#|schritte?s?|pasos?|étapes?|etapes?|passos?|passi|"
               r"stap(?:pen)?|punto|punkte?")
_JOIN = r"(?:\s*(?:[,&/+–—-]|\b(?:and|or|to|through|und|oder|bis|y|o|a|et|ou|à|e|en|of|tot)\b)\s*)"
STEP_BEFORE = re.compile(rf"(?:\b(?:{_STEP_WORDS})|#)\s*(?:n(?:o|um(?:ber)?)?\.?\s*)?"
                         rf"(?:\w+{_JOIN})*$|第\s*$", re.I)
"""Before a step reference: 'step ', 'steps 3, 4 and ', '#', '第'."""
_UNITS = (r"(?:tool\s+|api\s+|function\s+|separate\s+|more\s+|extra\s+|other\s+|different\s+|"
          r"clarifying\s+|distinct\s+|redundant\s+|lookup\s+|read\s+|write\s+)?"
          r"(?:calls?|steps?|actions?|lookups?|operations?|requests?|queries|questions?|options?|issues?|"
          r"problems?|points?|retr(?:y|ies)|attempts?|times|tries|things|tools?|turns?|messages?|"
          r"confirmations?|checks?|items?\s+to\s+\w+|flags?|errors?|rounds?|stages?|phases?|"
          r"seconds?|secs?|minutes?|mins?|hours?|hrs?|ms|milliseconds?|percent|per\s?cent|percentage\s+points|"
          r"%|-?step|-?call|-?minute|-?second|-?hour|-?point|x\b|×|"
          r"llamadas?|pasos?|consultas?|veces|intentos?|preguntas?|segundos?|minutos?|horas?|por\s+ciento|"
          r"aufrufe?n?|schritte?n?|abfragen?|wiederholungen|versuche?n?|fragen|mal|sekunden|minuten|stunden|prozent|"
          r"appels?|étapes?|recherches?|fois|tentatives?|questions?|secondes?|heures?|pour\s+cent|"
          r"chiamate|passi|ricerche|volte|tentativi|domande|secondi|minuti|ore|per\s+cento|"
          r"chamadas|passos|vezes|tentativas|perguntas|minutos|por\s+cento|"
          r"oproepen|stappen|keer|pogingen|vragen|seconden|minuten|uur|procent|"
          r"次|步|个步骤|個步驟|秒|分钟|分鐘|小时|小時|回|ステップ|分|時間)")
UNIT_AFTER = re.compile(rf"(?:\s*(?:\b(?:or|and|to|oder|bis|y|o|ou|et|e)\b|[-–/])\s*[\w-]+)?[ \t]*(?:[^\W\d_]+[ \t]+)?"
                        rf"{_UNITS}(?![^\W\d_\u3400-\u9fff\u3040-\u30ff])", re.I)
"""After a count of the critique's own things: ' calls', ' or twenty calls', '-step', ' %', '次'."""
APPROX = re.compile(r"\b(?:about|around|roughly|some|maybe|perhaps|at\s+most|at\s+least|under|over|"
                    r"fewer\s+than|more\s+than|less\s+than|up\s+to|no\s+more\s+than|only|just|etwa|unos|unas|"
                    r"environ|circa|cerca\s+de|ongeveer|umas|uns|mit|avec|com|con|大约|约)\s*$", re.I)
_LEAD = re.compile(r"(?:umas?|uns|unas?|unos)\s+", re.I)
_COUNTED = re.compile(rf"(?<![^\W\d_\u3400-\u9fff\u3040-\u30ff]){_UNITS}(?![^\W\d_\u3400-\u9fff\u3040-\u30ff])", re.I)
UNIT_WORD = re.compile(_UNITS, re.I)
CALLS = re.compile(r"calls?|steps?|actions?|lookups?|operations?|requests?|queries|llamadas|pasos|aufrufe|"
                   r"schritte|appels|étapes|chiamate|passi|chamadas|passos|oproepen|stappen|次|步|ステップ", re.I)
"""The units of a count the reference's own length could fill."""


def about_the_plan(text: str, start: int, end: int) -> str | None:
    """``step`` for a number at ``text[start:end]`` written as a step reference, ``calls`` for a
    count of calls or steps, ``count`` for a count, size, share or duration of the critique's
    other things (an elliptical 'about ten should do' after a count in the same sentence too),
    None otherwise."""
    head = text[max(0, start - 40):start]
    cut = max(head.rfind(ch) for ch in ".;!?\n:") + 1
    head = head[cut:] if cut else head
    lead = _LEAD.match(text, start, end)  # 'umas quatro': the approximator read as part of the number
    if lead:
        head += lead.group(0)
    if STEP_BEFORE.search(head):
        return "step"
    unit = UNIT_AFTER.match(text, end)
    if unit:
        return "calls" if CALLS.search(unit.group(0)) else "count"
    sentence = text[max(0, start - 120):start]
    sentence = sentence[max(sentence.rfind(ch) for ch in ".!?\n") + 1:]
    counted = _COUNTED.findall(sentence) if APPROX.search(head) else []
    if not counted:
        return None
    return "calls" if any(CALLS.search(c) for c in counted) else "count"
