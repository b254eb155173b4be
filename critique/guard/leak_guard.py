"""The leak guard: the critic's rationale may carry nothing the tested model has not seen.

The critic sees the hidden reference, so its rationale is checked before the reviser (the tested
model) reads it. Two rules, of two kinds:

* **Values: an allow-list.** Every value-like span of the rationale (``critique.guard.values``:
  anything with a digit, an ID-shaped code, a name, a number or date in words of several
  languages, characters spelled one by one) passes only if one of its readings is *public*:
  stated by the ``TaskView`` (policy, tool schemas, opening request) or by the tested model's
  own ``p0``, compared after canonicalisation (``critique.guard.canonical``). Every other value is a
  finding, whether or not the supervision holds it (``value`` when it does, ``unseen`` when it
  does not), and redaction removes the whole span it was written in, never a part of it.
* **What is not a value: a deny-list built from the supervision**, with a threshold so that
  one shared word never fires: ``sequence`` — two or more consecutive reference calls told in
  reference order (tool names in any spelling, numbered steps in any order, or prose that names
  what each call does) that ``p0`` does not already contain, or the reference's number of
  calls; ``hidden`` — a sentence that repeats two or more distinctive words of the user's hidden
  instructions; ``name`` — a name or rare word of the supervision's own text values.

What it finds is reported; the critic retries, and what still leaks after that is redacted. No
rule sees every semantic leak ("the last reservation on the profile"): the auditor reads for
meaning, and the provenance audit counts what the executor used without having seen it.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict

from wordfreq import zipf_frequency

from critique.guard import leak_forms as forms
from critique.guard import pointers, tool_prose
from critique.guard.device_states import DeviceStates
from critique.guard.order_words import CLAUSE_END, meant_order
from critique.guard.quotations import STOP as _STOP, Quotations, merge, stem
from critique.guard.record_refs import RecordReferences
from critique.guard import values as vs
from critique.guard.guard_outcome import GuardOutcome, LeakFinding  # noqa: F401 - GuardOutcome re-exported
from critique.guard.number_words import any_word_value
from critique.guard.relevance import DERIVATIONS, Relevance
from critique.guard.relevance_spans import could_carry
from envs.base import Supervision, TaskView, scalar_values
from evrcore.plan import Plan

REDACTED = "[redacted]"


_TEMPLATE = {"instructions", "domain", "reason", "call", "known", "info", "task", "persona",
             "unknown", "user", "agent", "customer", "service", "representative", "want", "wants"}
COMMON_ZIPF = 5.0
"""A hidden-instruction word more common than this (Zipf) is ordinary diagnosis vocabulary."""
RARE_NAME_ZIPF = 4.0
"""A word of a supervision text value rarer than this names something (``Kovacs``)."""
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_HIDDEN_TERM = re.compile(r"[A-Za-z][a-z]{4,}")
_GENERIC_VERBS = {"get", "list", "find", "search", "check", "fetch", "retrieve", "look", "show",
                  "view", "read", "details", "detail", "info", "information", "all", "by", "the", "id", "ids"}
_STEP_WORD = re.compile(r"\b(?:step|stage|#)\s*$", re.I)
_COUNT = re.compile(r"\b(?:(?:exactly|only|just|precisely|needs?|takes?|requires?|in|of)\s+)*(?P<n>[\w-]+)\s+"
                    r"(?:\w+\s+)?(?:tool\s+|api\s+|function\s+)?(?:calls?|steps?|actions?|operations?|requests?)\b", re.I)
_CUE = re.compile(r"\b(?:end(?:s|ing)?|contain(?:s|ing)?|start(?:s|ing)?|begin(?:s|ning)?|prefix(?:ed)?|suffix)\s+(?:in|with|of|by)?\W*$"
                  r"|\binside\b[^.\n]{0,30}$"
                  r"|\b(?:position|digit|character|place)\s+(?:no\.?\s*|number\s+)?\d{1,2}\s+(?:is|=|:)\W*$"
                  r"|\b(?:last|first|final|leading|trailing)\s+(?:\w+\s+)?(?:digits?|characters?|letters?)\W*(?:are|is|of)?\W*$", re.I)
_CUE_AFTER = re.compile(r"[\W_]{0,3}\s+(?:in the middle|somewhere inside|inside it)\b", re.I)
_LISTING_GAP = re.compile(r"[\s`'\",]*(?:(?:and|or)\s+)?[\s`'\"]*", re.I)
"""Between two names of a plain listing: commas, 'and', quotes — not 'then', arrows or numbers."""
_LIST_MARKER = re.compile(r"(?:^|\n)\s*[(\[]?$")


def plan_text(plan: Plan | None) -> str:
    return "" if plan is None else json.dumps(plan.to_apb(), ensure_ascii=False)


def _secret_readings(supervision: Supervision) -> dict[tuple[str, object], str]:
    """Each reading of each supervision value → the value as the supervision writes it, so a
    finding names what leaked (``Q69X3R``), not how it was read (``q69x3r``)."""
    out: dict[tuple[str, object], str] = {}
    values: list[str] = []
    for action in supervision.reference_actions:
        values += list(scalar_values(action.arguments))
    for text in [*supervision.expected_outcomes, supervision.hidden_user_instructions]:
        values += re.findall(r"[^\s,;:()\[\]\"']*\d[^\s,;:()\[\]\"']*", text)
    for value in values:
        value = value.rstrip(".")
        tv = vs.analyse(value)
        whole = [r for r in tv.readings if r.first == 0 and r.last == len(tv.tokens) - 1]
        for r in whole or tv.readings:
            out.setdefault((r.kind, r.key), value)
    return out


class LeakGuard:
    def __init__(self, view: TaskView, supervision: Supervision, plan: Plan | None = None,
                 min_sequence: int = 2, derivations: tuple[str, ...] | None = DERIVATIONS):
        self.view = view
        self.supervision = supervision
        self.relevance = None if derivations is None else Relevance(supervision, derivations)
        """None: every unseen value is removed (the guard before relevance)."""
        steps = len(plan.tool_chain) if plan else 0
        structure = vs.PublicValues(frozenset(), frozenset(float(n) for n in range(steps + 2)) | frozenset(vs.GRADES),
                                    frozenset(), frozenset(), frozenset())
        self.public = structure
        for part in (view.instructions, view.policy, json.dumps(view.tools, sort_keys=True, ensure_ascii=False),
                     view.opening_request or "", plan_text(plan), view.retrievable):
            self.public = self.public | vs.public_values(part)  # each part parsed once per process
        self._public_stems = {stem(w) for w in self.public.words}
        self._secret = _secret_readings(supervision)
        self._hidden_terms = self._distinctive_terms(supervision.hidden_user_instructions)
        self._quotations = Quotations(supervision, [view.policy, view.opening_request or "", plan_text(plan)])
        self._names = self._supervision_names(supervision)
        names: list[str] = []
        for action in supervision.reference_actions:
            if not names or names[-1] != action.name:
                names.append(action.name)
        self.sequence = names
        self.min_sequence = max(2, min_sequence)
        self._tool_keys = {forms.tool_words(n): n for n in set(names) | set(view.tool_names)}
        self._offered = list(view.tool_names)
        self._descriptions = {n: "" for n in names} | _descriptions(view.tools)
        self._public_text = " ".join([view.opening_request or "", plan_text(plan)])
        self._states = DeviceStates(view, supervision, self._public_text)
        self._records = RecordReferences(supervision.records, self.public.codes, self._public_text,
                                         list(view.tool_names) + [a.name for a in supervision.reference_actions],
                                         "\n".join([view.instructions, view.policy, view.retrievable,
                                                    json.dumps(view.tools, sort_keys=True, ensure_ascii=False),
                                                    json.dumps(view.tools, ensure_ascii=False)]),
                                         view.opening_request or "")
        p0_names = [s.name for s in plan.tool_chain] if plan else []
        self._p0_pairs = {(a, b) for i, a in enumerate(p0_names) for b in p0_names[i + 1:]}
        self._p0_names = p0_names
        actions = supervision.reference_actions
        chains = ([a.name for a in actions], [a.name for a in actions if a.requestor == "assistant"],
                  [a.name for a in actions if a.requestor != "assistant"])
        self._chains = [c for k, c in enumerate(chains) if len(c) >= 2 and c not in chains[:k]]
        """The whole reference, the assistant's calls and the user's actions: each an order."""
        self._p0_steps = steps
        self._p0_counts = Counter(p0_names)
        self._p0_distinct = len(set(p0_names))

    # -- what the supervision says that is not a value ------------------------------------------
    def _distinctive_terms(self, hidden: str) -> set[str]:
        """Words of the hidden instructions the view and ``p0`` do not use and that are not
        ordinary diagnosis vocabulary (wordfreq's Zipf scale: 3 is once per million words)."""
        return {stem(w) for w in _HIDDEN_TERM.findall(hidden)
                if w.lower() not in _STOP and w.lower() not in _TEMPLATE
                and stem(w) not in self._public_stems and zipf_frequency(w.lower(), "en") < COMMON_ZIPF}

    def _supervision_names(self, supervision: Supervision) -> set[str]:
        """Words of the reference's string values and the hidden instructions' capitalised words
        that name something (rare, or a name) and that the tested model has not seen."""
        out: set[str] = set()
        texts: list[tuple[str, bool]] = []
        for action in supervision.reference_actions:
            texts += [(v, True) for v in scalar_values(action.arguments)]
        texts += [(m.group(0), False) for m in re.finditer(r"\b[A-Z][a-z]{2,}\b", supervision.hidden_user_instructions)]
        for text, is_value in texts:
            for w in re.findall(r"[A-Za-z]{3,}", text):
                lw = w.lower()
                if lw in _STOP or lw in _TEMPLATE or lw in self.public.words or stem(lw) in self._public_stems:
                    continue
                is_name = w[0].isupper() and (is_value or zipf_frequency(lw, "en") < RARE_NAME_ZIPF)
                if is_name or zipf_frequency(lw, "en") < RARE_NAME_ZIPF - 1.0:
                    out.add(lw)
        return out

    # -- detection -----------------------------------------------------------------------------
    def scan(self, text: str) -> list[LeakFinding]:
        """Every leak in ``text`` (empty when it is clean)."""
        return [f for f, _ in self._findings(text)]

    def _findings(self, text: str) -> list[tuple[LeakFinding, list[tuple[int, int]]]]:
        tv = vs.analyse(text)
        out = [self._value_finding(tv, span) for span in self._value_spans(tv)]
        out += self._name_findings(tv)
        found = self._sequence(tv.canon.text)
        if found:
            pair, spans = found
            out.append((LeakFinding(kind="sequence", text=" → ".join(pair)), spans))
        count = self._count(tv.canon.text)
        if count:
            out.append(count)
        found = pointers.record_pointers(tv.canon.text, self.supervision, self.public.codes, self._public_text,
                                         self._records.resolvable)
        for a, b in merge(found + self._records.pointers(tv.canon.text)):
            out.append((LeakFinding(kind="pointer", text=tv.canon.text[a:b], written=tv.canon.text[a:b]), [(a, b)]))
        for a, b in self._records.attribute_claims(tv.canon.text):
            claim = tv.canon.text[a:b].strip()
            out.append((LeakFinding(kind="record", text=claim, written=claim), [(a, b)]))
        for a, b in self._states.claims(tv.canon.text):
            claim = tv.canon.text[a:b].strip()
            out.append((LeakFinding(kind="state", text=claim, written=claim), [(a, b)]))
        for (a, b), quoted in self._quotations.find(tv):
            out.append((LeakFinding(kind="hidden", text=quoted, written=tv.canon.text[a:b]), [(a, b)]))
        for a, b in self._hidden_sentences(tv.canon.text):
            out.append((LeakFinding(kind="hidden", text=tv.canon.text[a:b].strip(),
                                    written=tv.canon.text[a:b].strip()), [(a, b)]))
        return [(f, [tv.canon.original_span(a, b) for a, b in spans]) for f, spans in out]

    def unexplained_tokens(self, tv: vs.TextValues) -> list[int]:
        """Value-like tokens no public reading explains."""
        by_token: dict[int, list[vs.Reading]] = defaultdict(list)
        for r in tv.readings:
            for k in range(r.first, r.last + 1):
                by_token[k].append(r)
        out = []
        cued = {t.index for t in tv.tokens if t.lower not in _STOP and self._cued_fragment(tv, t.index)
                and tv.canon.text[t.start - 1:t.end + 1] != REDACTED}
        for i in sorted(tv.value_like | cued):
            stretch = tv.whole(i)
            if i not in cued and i not in tv.spelled and self._structural(tv, i):
                continue
            readings = by_token[i]
            if stretch is not None:  # spelled out: only a reading of the whole stretch explains it
                readings = [r for r in readings if r.first <= stretch[0] and r.last >= stretch[1]]
            if i in cued:  # a piece of an ID: a public number (a $100 fee) does not explain it
                tok = tv.tokens[i]
                named = tok.text.isalpha() and (self._public_word(tok) or tok.lower in self.public.codes)
                if not named and not self._public_fragment(tok.lower):  # 'start with get_user_details'
                    out.append(i)
                continue
            if not any(self.public.has(r) for r in readings) and (stretch is not None or not self._public_word(tv.tokens[i])):
                out.append(i)
        return out

    @staticmethod
    def _cued_fragment(tv: vs.TextValues, i: int) -> bool:
        """'ending in 100', 'starts with EHG', 'last four digits 7815', 'position 3 is 0',
        ''ia' in the middle': a piece of an ID, so a number that happens to be public (a $100
        fee) does not explain it."""
        tok = tv.tokens[i]
        s = tv.canon.text
        return (_CUE.search(s[max(0, tok.start - 30):tok.start]) is not None
                or _CUE_AFTER.match(s, tok.end) is not None)

    def _public_fragment(self, key: str) -> bool:
        if len(key) < 3:
            return False  # two characters of an ID narrow it too much to be a public fragment
        return any(len(c) > len(key) and (c.startswith(key) or c.endswith(key)) for c in self.public.long_codes)

    def _public_word(self, tok: vs.Token) -> bool:
        """A word (no digit) the tested model has read, in any case: a name from the opening
        request, a tool's or the policy's own term."""
        return tok.text.isalpha() and vs.fold_accents(tok.lower) in self.public.words

    def _structural(self, tv: vs.TextValues, i: int) -> bool:
        """E1–E6, p0/p1, grades and scores, list numbering: the critique's own vocabulary."""
        tok = tv.tokens[i]
        if vs.STRUCTURAL.fullmatch(tok.text):
            return True
        s = tv.canon.text
        if vs.is_grade(tv, i):
            return True
        if tok.text.isdigit() and int(tok.text) <= 20:
            before = s[max(0, tok.start - 12):tok.start]
            after = s[tok.end:tok.end + 2]
            if _LIST_MARKER.search(before) and after[:1] in (".", ")", ":"):
                return True
            if re.search(r"\b(?:step|steps|stage|call|item|point|#)\s*$", before, re.I) and int(tok.text) <= self._p0_steps + 3:
                return True
        return False

    def _value_spans(self, tv: vs.TextValues) -> list[tuple[int, int]]:
        """The canonical spans to remove: each unexplained token's whole run, and every reading
        that covers it (a date, a number in words, a spelled stretch), merged."""
        spans, kept = [], []
        for i in self.unexplained_tokens(tv):
            first, last = tv.run_of(i)
            stretch = tv.whole(i)
            if stretch:
                first, last = min(first, stretch[0]), max(last, stretch[1])
            for r in tv.readings:
                if r.covers(i) and r.kind in ("date", "time", "number") and (r.last > r.first):
                    first, last = min(first, r.first), max(last, r.last)
            if self.relevance is not None and not could_carry(tv, i, first, last, self.relevance,
                                                              self._cued_fragment(tv, i)):
                kept.append(tv.span(first, last))
                continue
            spans.append(tv.span(first, last))
        if kept and spans:  # '… ending 7285. I am 85 % sure': a kept number may be a piece of a removed one
            removed = "".join(re.sub(r"\D", "", tv.canon.text[a:b]) for a, b in spans)
            spans += [(a, b) for a, b in kept if len(d := re.sub(r"\D", "", tv.canon.text[a:b])) >= 2 and d in removed]
        return merge(spans)

    def _value_finding(self, tv: vs.TextValues, span: tuple[int, int]):
        a, b = span
        written = tv.canon.text[a:b]
        inside = [r for r in tv.readings if tv.tokens[r.first].start >= a and tv.tokens[r.last].end <= b]
        known = [(r, self._secret[(r.kind, r.key)]) for r in inside if (r.kind, r.key) in self._secret]
        known = [(r, v) for r, v in known if not (r.kind == "number" and float(r.key) < 10)]
        if known:
            order = list(self._secret.values())
            _, value = max(known, key=lambda rv: (rv[0].last - rv[0].first, -order.index(rv[1])))
            return LeakFinding(kind="value", text=value, written=written), [span]
        return LeakFinding(kind="unseen", text=written, written=written), [span]

    def _name_findings(self, tv: vs.TextValues):
        out = []
        for tok in tv.tokens:
            if tok.text.isalpha() and tok.lower in self._names:
                run = tv.span(*tv.run_of(tok.index))
                out.append((LeakFinding(kind="name", text=tok.lower, written=tok.text), [run]))
        return out

    def _count(self, text: str):
        """'this needs exactly five calls': the reference's length, when ``p0``'s differs."""
        n_ref = len(self.supervision.reference_actions)
        if n_ref < 2:
            return None
        actions = self.supervision.reference_actions
        by_assistant = sum(a.requestor == "assistant" for a in actions)
        counts = {n_ref, len(self.sequence), by_assistant, n_ref - by_assistant} - {0, 1}
        for m in _COUNT.finditer(text):
            if _STEP_WORD.search(text, max(0, m.start("n") - 8), m.start("n")):
                continue  # 'step 4 calls the lookup': a step, not a count
            word = m.group("n").lower()
            value = float(word) if word.isdigit() else any_word_value(word)
            if value is not None and int(value) in counts \
                    and int(value) not in {self._p0_steps, self._p0_distinct}:
                return LeakFinding(kind="sequence", text=f"{n_ref} reference calls", written=m.group(0)), [m.span()]
        return None

    def _sequence(self, text: str):
        named = forms.tool_mentions(text, self._tool_keys)
        mentions = sorted(set(self._not_listings(text, named)) | set(self._prose_mentions(text, named)))
        if len(mentions) < 2:
            return None
        if len(self.sequence) < 2:
            return self._repeats(text, mentions)
        orders = [mentions, meant_order(text, mentions)]
        numbered = [(n, m) for m in mentions if (n := forms.step_number(text, m[0])) is not None]
        numbered = list({(n, m[2]): (n, m) for n, m in reversed(numbered)}.values())[::-1]  # a list told twice
        if len(numbered) >= 2:
            orders.append([m for _, m in sorted(numbered, key=lambda x: x[0])])
        best = self._repeats(text, mentions)
        for order in orders:
            found = self._run_in(order)
            if found and (best is None or len(found[0]) > len(best[0])):
                best = found
        return best

    def _repeats(self, text: str, mentions):
        """A tool named, within one line or sentence, exactly as many times (two or more) as
        the reference calls it, when ``p0`` calls it a different number of times:
        'get_reservation_details → … × 5' (a plan restated twice is two lines, not a count)."""
        reference = Counter(a.name for a in self.supervision.reference_actions)
        for line in re.finditer(r"[^\n.;]+", text):
            inside = [m for m in mentions if line.start() <= m[0] < line.end()]
            for name, k in Counter(n for _, _, n in inside).items():
                if k >= 2 and k == reference[name] and self._p0_counts[name] != k:
                    return (name,) * k, [(a, b) for a, b, n in inside if n == name][1:]
        return None

    def _prose_mentions(self, text: str, named: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
        """Clauses that describe one reference call without naming it (clauses that name a tool
        are left to the named rule): all of its name's content words in one clause
        (``cancel_reservation`` → ``cancel`` + ``reservation``; ``get_user_details`` → ``user``)."""
        out = []
        taken = [(a, b) for a, b, _ in named]
        content = {}
        for name in set(self.sequence):
            words = [stem(w) for w in forms.tool_words(name)]
            core = {w for w in words if w not in _GENERIC_VERBS}
            if len(core) >= 2:  # 'order' alone is an ordinary word; 'cancel' + 'reservation' is a call
                content[name] = core
            elif len(core) == 1 and set(words) & _GENERIC_VERBS:  # 'look up the user'
                content[name] = core | {LOOKUP}
        for m in _CLAUSE.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            clause = {stem(w) for w in re.findall(r"[A-Za-z]+", m.group(0))}
            if _LOOKUP_VERB.search(m.group(0)):
                clause.add(LOOKUP)
            hits = [n for n, words in content.items() if words <= clause]
            if not hits:  # 'then change the order items': what the tool does, in other words
                hits = [n] if (n := tool_prose.described(m.group(0), self._descriptions)) else []
                if hits and any(name == hits[0] and 0 <= m.start() - b <= 100 and "\n" not in text[b:m.start()]
                                for _, b, name in named):
                    hits = []  # "`get_order_details` (order_id: orders listed …)": the named call described
            if len(hits) == 1:
                out.append((m.start(), m.end(), hits[0]))
        return out

    def _run_in(self, order):
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
            if len(run) < self.min_sequence:
                continue
            later = set(run[1:])
            return tuple(run), [(s, e) for s, e, n in order if n in later]
        return self._run_with_repeats(order)

    def _run_with_repeats(self, order):
        """The longest run of consecutive reference calls, repeats counted ('search, search,
        update'), that ``order`` names in reference order and that is no subsequence of ``p0``:
        the order of a plan whose tools ``p0`` has, but not in that order or that often."""
        names = [name for _, _, name in order]
        k, size = 0, len(self._p0_names)
        while size >= 2 and k + size <= len(names):  # '… as I read it: step 1 …' — p0 restated is no order
            if names[k:k + size] == self._p0_names:
                names[k:k + size] = [""] * size
                k += size
            else:
                k += 1
        best: tuple[list[str], list[int]] | None = None
        for chain, i in ((chain, i) for chain in self._chains for i in range(len(chain) - 1)):
            run, at, told = [], -1, []
            for c in chain[i:]:
                if c not in names[at + 1:]:
                    break
                at = names.index(c, at + 1)
                run.append(c)
                told.append(at)
            if len(run) >= self.min_sequence and not _subsequence(run, self._p0_names) \
                    and (best is None or len(run) > len(best[0])):
                best = (run, told)
        if best is None:
            return None
        run, told = best
        return tuple(run), [order[k][:2] for k in told[1:]]

    def _not_listings(self, text: str, mentions):
        """Mentions outside a listing of the offered tools (four or more named in the view's own
        order, or three or more in alphabetical order, separated by commas or 'and'): naming
        what the task offers tells nothing."""
        groups: list[list[tuple[int, int, str]]] = []
        for m in mentions:
            if groups and groups[-1][-1][1] >= m[0] - 8:
                groups[-1].append(m)
            else:
                groups.append([m])
        keep = []
        for group in groups:
            idx = [self._offered.index(n) if n in self._offered else -1 for _, _, n in group]
            names = [n for _, _, n in group]
            plain = all(_LISTING_GAP.fullmatch(text[a[1]:b[0]]) for a, b in zip(group, group[1:])) and \
                not any(forms.step_number(text, m[0]) is not None for m in group)
            alphabetical = plain and len(group) >= 3 and names == sorted(names) and len(set(names)) == len(names)
            listing = (len(group) >= 4 and -1 not in idx and idx == sorted(idx)) or alphabetical
            if not listing:
                keep += group
        return keep

    def _hidden_sentences(self, text: str) -> list[tuple[int, int]]:
        if not self._hidden_terms:
            return []
        spans = []
        for m in _SENTENCE.finditer(text):
            terms = {stem(w) for w in _HIDDEN_TERM.findall(m.group(0))} & self._hidden_terms
            if len(terms) >= 2:
                spans.append(m.span())
        return spans

    # -- redaction -----------------------------------------------------------------------------
    def redact(self, text: str, extra: list[str] | None = None) -> tuple[str, list[str]]:
        """The text with every leaked span (and every ``extra`` span an auditor named) replaced
        by ``[redacted]``, and the spans removed. A value goes with the whole run it was written
        in; a sequence loses its later calls; a hidden-instruction sentence goes whole."""
        removed: list[str] = []
        for _ in range(4):
            spans = [s for _, found in self._findings(text) for s in found]
            for phrase in extra or []:
                phrase = phrase.strip()
                if len(phrase) >= 3:
                    spans += [m.span() for m in re.finditer(re.escape(phrase), text, re.I)]
            spans = merge(spans)
            if not spans:
                break
            removed += [text[a:b] for a, b in spans]
            for a, b in reversed(spans):
                text = text[:a] + REDACTED + text[b:]
        return text, removed


LOOKUP = "⟨lookup⟩"
_LOOKUP_VERB = re.compile(r"\b(?:look(?:s|ing|ed)?\s+up|get|fetch|retrieve|pull(?:s|ing)?\s+up|check|find|search|read|open|view)\b", re.I)
_CLAUSE = re.compile(rf"[^,.;:\n]+?(?=[,.;:\n]|{CLAUSE_END}|$)", re.I)


def _descriptions(tools: list) -> dict[str, str]:
    """Tool name → its schema's description, in either schema shape."""
    out = {}
    for tool in tools or []:
        spec = tool.get("function", tool) if isinstance(tool, dict) else {}
        if isinstance(spec, dict) and spec.get("name"):
            out[spec["name"]] = spec.get("description") or ""
    return out


def _subsequence(run: list[str], names: list[str]) -> bool:
    it = iter(names)
    return all(name in it for name in run)
