"""The leak guard: the critic's rationale must not carry what only the supervision knows.

The critic sees the hidden reference, so its rationale is checked for supervision-only content
before the reviser (the tested model) reads it. Guarded is everything the supervision holds
that the view does not: reference-action arguments, expected outputs and outcome checks, the
simulated user's hidden instructions (their IDs, numbers, dates, names and distinctive words)
and ToolSandbox milestone values. Public is what the ``TaskView`` or the tested model's own
``p0`` already says, compared in canonical form (``critique.leak_forms``), never as a raw
substring. Findings:

* ``value`` — a guarded value in any spelling (ID separators and case, amounts in words or
  rounded, dates in any format); ``partial`` — a distinctive prefix/suffix of a guarded ID;
* ``sequence`` — two consecutive reference calls named in reference order (any spelling, or
  numbered) that ``p0`` does not already contain in that order;
* ``hidden`` — a sentence that repeats two or more distinctive words of the user's hidden
  instructions.

What it finds is reported; the critic retries, and what still leaks after that is redacted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, Field
from wordfreq import zipf_frequency

from critique import leak_forms as forms
from envs.base import Supervision, TaskView
from evrcore.plan import Plan

REDACTED = "[redacted]"


class LeakFinding(BaseModel):
    kind: Literal["value", "partial", "sequence", "hidden", "auditor"]
    text: str = Field(description="The supervision-only value, the leaked call sequence, or "
                      "what the auditor named.")
    written: str = Field(default="", description="How the rationale wrote it.")


class GuardOutcome(BaseModel):
    """What the guard did to one critique; stored in every guarded Refine record."""

    fired: bool = False
    action: Literal["passed", "retried", "redacted"] = "passed"
    findings: list[LeakFinding] = Field(default_factory=list, description="Rules and auditor together.")
    rule_findings: list[LeakFinding] = Field(default_factory=list)
    auditor_findings: list[LeakFinding] = Field(default_factory=list)
    residual: list[LeakFinding] = Field(
        default_factory=list, description="What the auditor still found in the redacted rationale.")
    audited: bool = Field(default=False, description="Whether a leak auditor read the rationale.")
    removed: list[str] = Field(default_factory=list, description="Spans cut by redaction.")


@dataclass(frozen=True)
class Guarded:
    kind: Literal["id", "number", "date", "text"]
    value: str
    key: object


_STOP = set("""a about above after again all also an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from further
had has have having he her here hers him his how i if in into is it its itself just me more most my
no nor not now of off on once only or other our out over own same she should so some such than that
the their them then there these they this those through to too under until up very was we were what
when where which while who whom why will with would you your yours yourself""".split())
_TEMPLATE = {"instructions", "domain", "reason", "call", "known", "info", "task", "persona",
             "unknown", "user", "agent", "customer", "service", "representative", "want", "wants"}
_CODE = re.compile(r"\b(?=[\w#-]*\d)[\w#][\w#.-]{3,}\b")
NAME_ZIPF = 4.0
"""A capitalised word from the hidden instructions counts as a name only if rarer than this."""
COMMON_ZIPF = 5.0
"""A hidden-instruction word more common than this (Zipf) is ordinary diagnosis vocabulary."""
RARE_ZIPF = 3.8
"""One hidden-instruction word rarer than this in a sentence is enough to tell (``insistent``)."""
_CUE = re.compile(r"(?:end(?:s|ing)?|start(?:s|ing)?|begin(?:s|ning)?)\s+(?:in|with)\W*$|last\s+(?:digits|characters)\W*$", re.I)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_HIDDEN_TERM = re.compile(r"[A-Za-z][a-z]{4,}")
_NAME = re.compile(r"\b[A-Z][a-z]{2,}(?:\s+[A-Z][a-z]{2,})*")


def stem(word: str) -> str:
    """A crude English stem, enough to match 'refunded' with 'refund' and 'flights' with 'flight'."""
    w = word.lower()
    for suffix in ("ations", "ation", "ings", "ing", "edly", "ed", "ies", "es", "s", "ly"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            return w[: -len(suffix)]
    return w


@dataclass(frozen=True)
class PublicFacts:
    """What a public text states, in canonical forms."""

    words: frozenset[str]
    numbers: frozenset[float]
    dates: list
    keys: frozenset[str]


@lru_cache(maxsize=256)
def public_facts(text: str) -> PublicFacts:
    """Parsed once per text: a policy is shared by every task of its domain."""
    return PublicFacts(
        words=frozenset(stem(w) for w in re.findall(r"[A-Za-z]+", text)),
        numbers=frozenset(v for _, _, v in forms.number_spans(text)),
        dates=[k for _, _, keys in forms.date_spans(text) for k in keys if k[1] is not None],
        keys=frozenset(forms.joined_keys(text)),
    )


def plan_text(plan: Plan | None) -> str:
    return "" if plan is None else json.dumps(plan.to_apb())


class LeakGuard:
    def __init__(self, view: TaskView, supervision: Supervision, plan: Plan | None = None,
                 min_sequence: int = 2):
        facts, p0_facts = public_facts(view.text()), public_facts(plan_text(plan))
        self._public_words = facts.words | p0_facts.words
        self._public_numbers = facts.numbers | p0_facts.numbers
        self._public_dates = facts.dates + p0_facts.dates
        self._public_keys = facts.keys | p0_facts.keys
        self.values = self._guarded_values(supervision)
        self._hidden_terms = self._distinctive_terms(supervision.hidden_user_instructions)
        names: list[str] = []
        for action in supervision.reference_actions:
            if not names or names[-1] != action.name:
                names.append(action.name)
        self.sequence = names
        self.min_sequence = max(2, min_sequence)
        self._tool_keys = {forms.tool_words(n): n for n in set(names) | set(view.tool_names)}
        self._offered = list(view.tool_names)
        p0_names = [s.name for s in plan.tool_chain] if plan else []
        self._p0_pairs = {(a, b) for i, a in enumerate(p0_names) for b in p0_names[i + 1:]}

    # -- what is guarded -----------------------------------------------------------------
    def _guarded_values(self, supervision: Supervision) -> list[Guarded]:
        typed: list[tuple[str, bool]] = []  # (value, written as a string); reference actions first
        for action in supervision.reference_actions:
            typed += _typed_scalars(action.arguments)
        hidden = supervision.hidden_user_instructions
        for text in [*supervision.expected_outcomes, hidden]:
            typed += [(m.group(0).rstrip("."), True) for m in _CODE.finditer(text)]
            typed += [(m.group(0), False) for m in re.finditer(r"(?<![\w.])\$?\d[\d,]*(?:\.\d+)?", text)]
        typed += [(m.group(0), True) for m in _NAME.finditer(hidden)]
        out: dict[tuple, Guarded] = {}
        for value, is_string in typed:
            g = self._classify(value.strip(), is_string)
            if g is not None and (g.kind, str(g.key)) not in out and not self._is_public(g):
                out[(g.kind, str(g.key))] = g
        for _, _, keys in forms.date_spans(hidden):
            for key in keys:
                if key[1] is not None and not self._date_public(key):
                    out[("date", str(key))] = Guarded("date", str(key), key)
        return sorted(out.values(), key=lambda g: (-len(g.value), g.value))

    def _classify(self, value: str, is_string: bool = False) -> Guarded | None:
        date = forms.parse_iso_date(value)
        if date:
            return Guarded("date", value, date)
        if is_string and re.fullmatch(r"#?\d{5,}", value):
            return Guarded("id", value, forms.id_key(value))  # a code made of digits: 1656367028
        number = forms.parse_number(value)
        if number is not None:
            return None if abs(number) < 10 else Guarded("number", value, number)
        if forms.looks_like_id(value):
            key = forms.id_key(value)
            return Guarded("id", value, key) if len(key) >= 3 else None
        words = [w.lower() for w in re.findall(r"[A-Za-z0-9]+", value)]
        if not words or len(value) < 4 or all(w in _STOP or w in _TEMPLATE for w in words):
            return None
        if not is_string or all(zipf_frequency(w, "en") >= NAME_ZIPF for w in words):
            return None  # ordinary words ('Never', 'Under no circumstances') name nothing
        return Guarded("text", value, tuple(words))

    def _is_public(self, g: Guarded) -> bool:
        if g.kind == "number":
            return any(abs(n - g.key) < 1e-9 for n in self._public_numbers)
        if g.kind == "date":
            return self._date_public(g.key)
        if g.kind == "id":
            return g.key in self._public_keys
        return all(stem(w) in self._public_words for w in g.key)

    def _date_public(self, key: forms.DateKey) -> bool:
        return any(k[1:] == key[1:] and (k[0] is None or key[0] is None or k[0] == key[0])
                   for k in self._public_dates)

    def _distinctive_terms(self, hidden: str) -> dict[str, float]:
        """Words of the hidden instructions the view does not use, with how common they are in
        English (wordfreq's Zipf scale: 3 is once per million words, 6 is 'the')."""
        return {stem(w): zipf_frequency(w.lower(), "en") for w in _HIDDEN_TERM.findall(hidden)
                if w.lower() not in _STOP and w.lower() not in _TEMPLATE
                and stem(w) not in self._public_words and zipf_frequency(w.lower(), "en") < COMMON_ZIPF}

    # -- detection -----------------------------------------------------------------------
    def scan(self, text: str) -> list[LeakFinding]:
        """Every leak in ``text`` (empty when it is clean)."""
        return [f for f, _ in self._findings(text)]

    def _findings(self, text: str) -> list[tuple[LeakFinding, list[forms.Span]]]:
        out = []
        numbers = list(forms.number_spans(text))
        dates = list(forms.date_spans(text))
        for g in self.values:
            spans = self._value_spans(g, text, numbers, dates)
            if spans:
                out.append((LeakFinding(kind="value", text=g.value, written=text[slice(*spans[0])]), spans))
        for g in self.values:
            if g.kind == "id":
                spans = self._partial_spans(g, text)
                if spans:
                    out.append((LeakFinding(kind="partial", text=g.value, written=text[slice(*spans[0])]), spans))
        found = self._sequence(text)
        if found:
            pair, spans = found
            out.append((LeakFinding(kind="sequence", text=" → ".join(pair)), spans))
        for a, b in self._hidden_sentences(text):
            out.append((LeakFinding(kind="hidden", text=text[a:b].strip(), written=text[a:b].strip()), [(a, b)]))
        return out

    def _value_spans(self, g: Guarded, text: str, numbers, dates) -> list[forms.Span]:
        if g.kind == "number":
            return [(a, b) for a, b, v in numbers if forms.same_amount(v, g.key)]
        if g.kind == "date":
            return [(a, b) for a, b, keys in dates if any(forms.same_date(k, g.key) for k in keys)]
        if g.kind == "id":
            spans = list(forms.joined_spans(text, g.key))
            tail = re.search(r"\d{4,}$", g.key)
            if tail and tail.start() > 0 and float(tail.group(0)) not in self._public_numbers:
                spans += [(a, b) for a, b, v in numbers if v == float(tail.group(0))]
            return spans
        pattern = r"(?<![A-Za-z0-9])" + r"[\s_-]+".join(map(re.escape, g.key)) + r"(?![A-Za-z0-9])"
        return [m.span() for m in re.finditer(pattern, text, re.I)]

    def _partial_spans(self, g: Guarded, text: str) -> list[forms.Span]:
        """A token that is a distinctive prefix or suffix of a guarded ID (three characters or
        more, and written as a code: it has a digit or is in capitals)."""
        key = g.key
        if len(key) < 5:
            return []
        spans = []
        for a, b, tok in forms.tokens(text):
            t = tok.lower()
            if len(t) < 3 or t == key or not (key.startswith(t) or key.endswith(t)):
                continue
            cued = _CUE.search(text[max(0, a - 24):a]) is not None
            if not (re.search(r"\d", t) or (tok.isupper() and len(tok) >= 3) or cued):
                continue
            if re.fullmatch(r"\d+", t) and len(t) < 4 and not cued:
                continue
            if not cued and (stem(t) in self._public_words or t in self._public_keys):
                continue
            spans.append((a, b))
        return spans

    def _sequence(self, text: str) -> tuple[tuple[str, ...], list[forms.Span]] | None:
        mentions = self._not_listings(forms.tool_mentions(text, self._tool_keys))
        if len(self.sequence) < 2 or len(mentions) < 2:
            return None
        orders = [mentions]
        numbered = [(n, m) for m in mentions if (n := forms.step_number(text, m[0])) is not None]
        if len(numbered) >= 2:
            orders.append([m for _, m in sorted(numbered, key=lambda x: x[0])])
        best: tuple[tuple[str, ...], list[forms.Span]] | None = None
        for order in orders:
            found = self._run_in(order)
            if found and (best is None or len(found[0]) > len(best[0])):
                best = found
        return best

    def _run_in(self, order: list[tuple[int, int, str]]) -> tuple[tuple[str, ...], list[forms.Span]] | None:
        """The first run of two or more consecutive reference calls that ``order`` names in
        reference order and ``p0`` does not already contain in that order."""
        names = [name for _, _, name in order]
        for i, (a, b) in enumerate(zip(self.sequence, self.sequence[1:])):
            if (a, b) in self._p0_pairs or a not in names:
                continue
            at = names.index(a)
            if b not in names[at + 1:]:
                continue
            run, at = [a, b], names.index(b, at + 1)
            for c in self.sequence[i + 2:]:  # the longest run told in order
                if c not in names[at + 1:]:
                    break
                run.append(c)
                at = names.index(c, at + 1)
            later = set(run[1:])
            return tuple(run), [(s, e) for s, e, n in order if n in later]
        return None

    def _not_listings(self, mentions: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
        """Mentions outside a listing of the offered tools (four or more named in the view's own
        order, separated by commas or 'and'): naming what the task offers tells nothing."""
        groups: list[list[tuple[int, int, str]]] = []
        for m in mentions:
            if groups and groups[-1][-1][1] >= m[0] - 8:
                groups[-1].append(m)
            else:
                groups.append([m])
        keep = []
        for group in groups:
            idx = [self._offered.index(n) if n in self._offered else -1 for _, _, n in group]
            listing = len(group) >= 4 and -1 not in idx and idx == sorted(idx)
            if not listing:
                keep += group
        return keep

    def _hidden_sentences(self, text: str) -> list[forms.Span]:
        if not self._hidden_terms:
            return []
        spans = []
        for m in _SENTENCE.finditer(text):
            terms = {stem(w) for w in _HIDDEN_TERM.findall(m.group(0))} & set(self._hidden_terms)
            if len(terms) >= 2 or any(self._hidden_terms[t] < RARE_ZIPF for t in terms):
                spans.append(m.span())
        return spans

    # -- redaction -----------------------------------------------------------------------
    def redact(self, text: str, extra: list[str] | None = None) -> tuple[str, list[str]]:
        """The text with every leaked span (and every ``extra`` span an auditor named) replaced
        by ``[redacted]``, and the spans removed. A sequence loses its later calls' names, so
        the order is no longer told; a hidden-instruction sentence goes whole."""
        removed: list[str] = []
        for _ in range(4):
            spans = [s for _, found in self._findings(text) for s in found]
            for phrase in extra or []:
                phrase = phrase.strip()
                if len(phrase) >= 3:
                    spans += [m.span() for m in re.finditer(re.escape(phrase), text, re.I)]
            spans = _merge(spans)
            if not spans:
                break
            removed += [text[a:b] for a, b in spans]
            for a, b in reversed(spans):
                text = text[:a] + REDACTED + text[b:]
        return text, removed


def _typed_scalars(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _typed_scalars(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _typed_scalars(v)
    elif isinstance(obj, str):
        yield obj, True
        if " " in obj:  # an expression or sentence: its numbers count on their own ('135.24 - 153.23')
            yield from ((m.group(0), False) for m in re.finditer(r"(?<![\w.])\d[\d,]*(?:\.\d+)?", obj))
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield (str(int(obj)) if float(obj).is_integer() else repr(float(obj))), False


def _merge(spans: list[forms.Span]) -> list[forms.Span]:
    merged: list[forms.Span] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged
