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
from typing import Literal

from pydantic import BaseModel, Field

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


def plan_text(plan: Plan | None) -> str:
    return "" if plan is None else json.dumps(plan.to_apb())


class LeakGuard:
    def __init__(self, view: TaskView, supervision: Supervision, plan: Plan | None = None,
                 min_sequence: int = 2):
        public = view.text() + "\n" + plan_text(plan)
        self._public_text = public
        self._public_words = {stem(w) for w in re.findall(r"[A-Za-z]+", public)}
        self._public_numbers = {v for _, _, v in forms.number_spans(public)}
        self._public_dates = [k for _, _, keys in forms.date_spans(public) for k in keys if k[1] is not None]
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
        raw = set(supervision.reference_values())
        hidden = supervision.hidden_user_instructions
        raw |= {m.group(0).rstrip(".") for m in re.finditer(r"\b(?=[\w#-]*\d)[\w#][\w#.-]{3,}\b", hidden)}
        raw |= {m.group(0) for m in re.finditer(r"(?<![\w.])\$?\d[\d,]*(?:\.\d+)?", hidden)}
        raw |= {m.group(0) for m in _NAME.finditer(hidden)}
        out: dict[tuple, Guarded] = {}
        for value in raw:
            g = self._classify(value.strip())
            if g is not None and not self._is_public(g):
                out[(g.kind, str(g.key))] = g
        for _, _, keys in forms.date_spans(hidden):
            for key in keys:
                if key[1] is not None and not self._date_public(key):
                    out[("date", str(key))] = Guarded("date", str(key), key)
        return sorted(out.values(), key=lambda g: (-len(g.value), g.value))

    def _classify(self, value: str) -> Guarded | None:
        date = forms.parse_iso_date(value)
        if date:
            return Guarded("date", value, date)
        number = forms.parse_number(value)
        if number is not None:
            return None if abs(number) < 10 else Guarded("number", value, number)
        if forms.looks_like_id(value):
            key = forms.id_key(value)
            return Guarded("id", value, key) if len(key) >= 3 else None
        words = [w.lower() for w in re.findall(r"[A-Za-z0-9]+", value)]
        if not words or len(value) < 4 or all(w in _STOP or w in _TEMPLATE for w in words):
            return None
        if len(words) == 1 and value[:1].isupper() and value.lower() in _STOP | _TEMPLATE:
            return None
        return Guarded("text", value, tuple(words))

    def _is_public(self, g: Guarded) -> bool:
        if g.kind == "number":
            return any(abs(n - g.key) < 1e-9 for n in self._public_numbers)
        if g.kind == "date":
            return self._date_public(g.key)
        if g.kind == "id":
            return any(True for _ in forms.joined_spans(self._public_text, g.key))
        return all(stem(w) in self._public_words for w in g.key)

    def _date_public(self, key: forms.DateKey) -> bool:
        return any(k[1:] == key[1:] and (k[0] is None or key[0] is None or k[0] == key[0])
                   for k in self._public_dates)

    def _distinctive_terms(self, hidden: str) -> set[str]:
        return {stem(w) for w in _HIDDEN_TERM.findall(hidden)
                if w.lower() not in _STOP and w.lower() not in _TEMPLATE
                and stem(w) not in self._public_words}

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
            if not (re.search(r"\d", t) or (tok.isupper() and len(tok) >= 3)):
                continue
            if re.fullmatch(r"\d+", t) and len(t) < 4:
                continue
            if stem(t) in self._public_words or any(True for _ in forms.joined_spans(self._public_text, t)):
                continue
            spans.append((a, b))
        return spans

    def _sequence(self, text: str) -> tuple[tuple[str, ...], list[forms.Span]] | None:
        mentions = self._not_listings(forms.tool_mentions(text, self._tool_keys))
        if len(self.sequence) < 2 or len(mentions) < 2:
            return None
        orders = [mentions]
        numbered = [(n, m) for m in mentions if (n := _marker(text, m[0])) is not None]
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
            terms = {stem(w) for w in _HIDDEN_TERM.findall(m.group(0))} & self._hidden_terms
            if len(terms) >= 2:
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
                    spans += [m.span() for m in re.finditer(re.escape(phrase), text)]
            spans = _merge(spans)
            if not spans:
                break
            removed += [text[a:b] for a, b in spans]
            for a, b in reversed(spans):
                text = text[:a] + REDACTED + text[b:]
        return text, removed


def _marker(text: str, start: int) -> int | None:
    """The step number written just before a mention: ``2.``, ``2)``, ``step 2:``, ``(2)``."""
    m = re.search(r"(?:\b(?:step|call)\s+(\d{1,2})\W{0,3}|(?<!\d)(\d{1,2})[.)]\s*|\((\d{1,2})\)\s*)[`'\"]?$",
                  text[max(0, start - 12):start], re.I)
    if not m:
        return None
    return int(next(g for g in m.groups() if g))


def _merge(spans: list[forms.Span]) -> list[forms.Span]:
    merged: list[forms.Span] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged
