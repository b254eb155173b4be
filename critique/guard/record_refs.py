"""References that only the database resolves, resolved against the records the supervision
carries (``Supervision.records``: the records the reference acts on and those around them).

A critic can name the reference's record without its identifier: by position ("the second
reservation on the profile", "the most recent order"), by rank ("the cheapest variant", "the
gift card with the smallest balance", "the line that used the most data") or by attribute ("the
cancelled reservation", "the blue, size M one"), or tell an attribute of it ("the cabin is
business", "it has no insurance", "the order is already delivered"). Such a phrase is found by
what it resolves to, not by its words: a pointer counts when the records pick out a record the
reference acts on by an identifier the tested model has not seen (a pointer that resolves to
another record tells nothing about the reference); an attribute counts when a clause asserts a
value an acted-on record holds and the tested model has not been told, or writes an option of
the item the reference chooses. Questions, conditions and rules in general ("if the order is
delivered …", "check whether it has insurance") are no claim about the record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from critique.guard import clauses, directives, person
from critique.guard.pointers import DOUBT

_KIND_OF_TABLE = {"reservations": "reservation", "orders": "order", "lines": "line",
                  "users.payment_methods": "payment", "products.variants": "item"}
_ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]
_POSITION = {**{w: i for i, w in enumerate(_ORDINALS)}, **{f"{i + 1}{s}": i for i, s in
             enumerate(["st", "nd", "rd"] + ["th"] * 7)},
             "last": -1, "latest": -1, "most recent": -1, "newest": -1, "final": -1, "most recently": -1,
             "last-placed": -1, "oldest": 0, "earliest": 0, "penultimate": -2,
             "second to last": -2, "second-to-last": -2, "next to last": -2, "one before last": -2}
_POSITION_ML = {0: "primer[ao]?|erste[nrs]?|premi[eè]re?|premier|prima|primeira", 1: "segund[ao]|zweite[nrs]?|deuxième|seconde?|seconda",
                2: "tercer[ao]?|dritte[nrs]?|troisième|terza|terceira", 3: "cuart[ao]|vierte[nrs]?|quatrième|quarta",
                -1: "últim[ao]|letzte[nrs]?|derni[eè]re?|dernier|ultima"}
"""Positions in Spanish, German, French, Italian and Portuguese (written before the noun)."""
_NOUNS_ML = {"reservations": "reserva|buchung|réservation|prenotazione", "orders": "orden|pedido|bestellung|commande|ordine|encomenda",
             "lines": "línea|leitung|linie|ligne|linea|linha", "flights": "vuelo|flug|vol|volo|voo"}
_LOW = r"cheapest|least\s+expensive|lowest[-\s]priced|cheaper|smallest|lowest|least|fewest|smaller|lower"
_HIGH = r"most\s+expensive|priciest|pricier|dearest|highest[-\s]priced|largest|biggest|highest|greatest|most|larger|bigger|higher"
_PRICE_WORDS = re.compile(r"cheap|expensive|pric|dear", re.I)
_NOUNS = {"reservations": "reservation|booking|trip|itinerary", "orders": "order|purchase",
          "flights": "flight|leg", "lines": "line|phone line|number", "customers": "customer|account",
          "users": "user|account|profile", "bills": "bill|invoice", "devices": "device|phone|handset",
          "plans": "plan", "users.payment_methods": "payment method|payment|card|gift card|certificate|voucher|balance",
          "products.variants": "variant|item|version|model|replacement", "products": "product"}
"""A record kind's nouns: its table's name and the words a person uses for one of it."""
_ID_FIELDS = re.compile(r"(?:^|_)(?:id|ids|email|dob|phone|address\d?|zip|imei|name|first_name|last_name|"
                        r"number|date|at|time)$|date|_time|address", re.I)
_DET = r"(?:the|this|that|their|his|her|its|the\s+user's|the\s+customer's|your)"
_GENERAL = re.compile(r"\b(?:only|cannot|can't|can\s+be|must\s+be|policy|policies|rules?|general(?:ly)?|any|all)\b", re.I)
"""A rule in general ('only pending orders can be cancelled'): no claim about this record."""
_CLAIM = re.compile(r"(?:[^.;:!?\n—–(,]|:(?=\S)|-(?! )|,(?!\s+(?:so|which|and|but|because|since|as)\b))+")
"""A clause: a sentence or a part after a colon, cut where a consequence or a reason begins ('…, so the fee rules differ')."""
_YES_NO = ("yes", "no", "true", "false")
_HAVING = re.compile(r"\b(?:with|without|has|have|had|no|not|isn't|wasn't|bought|purchased|includes?|included|added|"
                     r"declined|insured|uninsured|skipped)\b|n't\b", re.I)
"""A yes/no attribute (insurance) told: it is had or not had ('without insurance', 'it is insured')."""
_KIND_FIELDS = {"source", "brand", "device_type", "name"}
"""Fields that name what kind of record it is (a gift card, a visa card): nouns, not states."""


@dataclass
class Record:
    table: str
    id: str
    acted_on: bool
    data: dict
    owner: tuple[str, str, str] | None = None
    siblings: list["Record"] = field(default_factory=list)
    """The records of its owner's list, in the list's order (itself among them)."""


def _nouns(table: str, records: list[Record]) -> list[str]:
    words = [w for w in _NOUNS.get(table, table.split(".")[-1].rstrip("s").replace("_", " ")).split("|")]
    for r in records:
        for key in ("name", "source", "device_type", "brand"):
            v = r.data.get(key)
            if isinstance(v, str) and 2 < len(v) < 25 and not re.search(r"\d", v):
                words.append(v.lower().replace("_", " "))
    return sorted(set(words), key=len, reverse=True)


def _owner_names(records: list[Record], by_key: dict) -> None:
    """Products are the owners of their variants: the variant's nouns include its product's name."""
    for r in records:
        if r.owner and r.owner[0] == "products":
            product = by_key.get(("products", r.owner[1]))
            if product is not None and isinstance(product.data.get("name"), str):
                r.data = dict(r.data, name=product.data["name"])


def _attributes(data: dict, prefix: str = "") -> list[tuple[str, str]]:
    """(field, value) of a record's short text attributes: status, cabin, insurance, options …
    (identifiers, dates, names, addresses and numbers are the value rules' business)."""
    out = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and key == "options":
            out += _attributes(value, "option:")
        elif isinstance(value, str) and not _ID_FIELDS.search(key) and key not in _KIND_FIELDS and 0 < len(value) <= 30 \
                and len(value.split()) <= 3 and (prefix or not re.search(r"\d", value)):
            out.append((name, value.lower().replace("_", " ")))
    return out


def _of_kind(group: list[Record], phrase: str) -> list[Record]:
    """The records of the group whose own kind word the phrase uses ('the second gift card':
    the gift cards among the payment methods), or the whole group when it uses none."""
    low = phrase.lower()
    kinds = [r for r in group if any(isinstance(r.data.get(k), str) and r.data[k].lower().replace("_", " ") in low
                                     for k in _KIND_FIELDS)]
    return kinds or group


def _words(value: str) -> str:
    return r"\b" + r"[\s_-]*".join(map(re.escape, re.split(r"[\s_-]+", value))) + r"\b"


class RecordReferences:
    """The records of one task, ready to resolve a critique's phrases against."""

    def __init__(self, records: list[dict], public_codes: frozenset[str], public_text: str,
                 tool_names: list[str] = (), view_text: str = "", opening: str = ""):
        parsed = [Record(r["table"], str(r["id"]), bool(r.get("acted_on")), dict(r.get("record") or {}),
                         (r["owner"]["table"], str(r["owner"]["id"]), r["owner"].get("field", ""))
                         if r.get("owner") else None) for r in records]
        by_key = {(r.table, r.id): r for r in parsed}
        _owner_names(parsed, by_key)
        for r in parsed:
            if r.owner:
                owner = by_key.get(r.owner[:2])
                listed = owner.data.get(r.owner[2]) if owner else None
                ids = [str(x) for x in listed] if isinstance(listed, (list, dict)) else []
                r.siblings = [by_key[(r.table, i)] for i in ids if (r.table, i) in by_key] or \
                    [s for s in parsed if s.table == r.table and s.owner == r.owner]
        self.public = public_text.lower()
        self.opening = opening.lower()
        """The user's own words: a value they say of a kind of record is theirs ('my pending order')."""
        self.view = " " + re.sub(r"\W+", " ", view_text.lower()) + " "
        """The policy and the tool schemas: a clause they say word for word is theirs, not a claim."""
        self.codes = public_codes
        self.acted_all = [r for r in parsed if r.acted_on and r.table != "initial_state"]
        """Every record the reference names: its attributes are news even when its identifier is not."""
        self.acted = [r for r in self.acted_all if re.sub(r"\W", "", r.id.lower()) not in public_codes]
        """Those named by an identifier the tested model has not seen: what a pointer could stand for."""
        self.tables: dict[str, list[Record]] = {}
        for r in parsed:
            self.tables.setdefault(r.table, []).append(r)
        self.nouns = {t: _nouns(t, rs) for t, rs in self.tables.items() if any(r in self.acted_all for r in rs)}
        self._pointer = {t: self._pointer_pattern(ns, t) for t, ns in self.nouns.items()
                         if any(r.owner for r in self.acted if r.table == t)}
        """Only a record of a list can be pointed at ('the latest message from the user' is no user)."""
        self._facts = self._claimable()
        names = sorted({n for n in tool_names if n}, key=len, reverse=True)
        self._tools = re.compile("|".join(r"[\s_-]+".join(map(re.escape, n.split("_"))) for n in names), re.I) \
            if names else None
        """A tool's name written out ('modify pending order items') names no state of the order."""

    def __bool__(self) -> bool:
        return bool(self.acted_all)

    # -- pointers ------------------------------------------------------------------------------
    @staticmethod
    def _pointer_pattern(nouns: list[str], table: str = "") -> re.Pattern:
        noun = "|".join(re.escape(n).replace(r"\ ", r"[\s-]+") for n in nouns)
        if table in _NOUNS_ML:
            noun += "|" + _NOUNS_ML[table]
        pos = "|".join(sorted((re.escape(p).replace(r"\ ", r"[\s-]+") for p in _POSITION), key=len, reverse=True))
        pos += "|" + "|".join(_POSITION_ML.values())
        mod = rf"(?:{pos})[\s-]+(?:{_LOW}|{_HIGH})|{pos}|{_LOW}|{_HIGH}"
        return re.compile(
            rf"\b(?P<mod>{mod})[\s-]+(?P<rest>(?:[\w'-]+\s+){{0,3}}?)(?P<noun>{noun})(?:e?s)?\b(?P<tail>[^.;:!?\n]{{0,40}})"
            rf"|\b(?P<noun2>{noun})(?:e?s)?\s+(?P<rest2>(?:that|which|with|whose|booked|placed|made|on|in|of|listed)\b"
            rf"[^.;:!?\n]{{0,40}}?)\b(?P<mod2>{mod})\b(?P<tail2>[^.;:!?\n]{{0,30}})", re.I)

    def pointers(self, text: str) -> list[tuple[int, int]]:
        """Spans of phrases that pick out a record the reference acts on."""
        out = []
        for (a, b), (table, pattern) in ((c, tp) for c in clauses.spans(text) for tp in self._pointer.items()):
            for m in pattern.finditer(text, a, b):
                mod = (m.group("mod") or m.group("mod2")).lower()
                words = " ".join(filter(None, [m.group("rest"), m.group("rest2"), m.group("tail"), m.group("tail2")]))
                if m.group("mod") and re.match(r"(?:one|each|every|any|all|both|two|three)\b", words.strip(), re.I):
                    continue
                span = (m.start(), m.end() - len(m.group("tail") or m.group("tail2") or ""))
                if person.said(text[span[0]:span[1]], self.public):
                    continue
                hits = self._resolve(table, mod, words, text[m.start():m.end()])
                if hits:
                    out.append(span)
        return out

    def _resolve(self, table: str, mod: str, words: str, phrase: str) -> bool:
        """Whether the phrase picks out a record of ``table`` the reference acts on (True also
        when the records cannot tell which one it picks but the reference acts on that kind)."""
        mod = re.sub(r"[\s-]+", " ", mod)
        rank = re.search(rf"(?P<low>{_LOW})|(?P<high>{_HIGH})", mod)
        position = next((i for p, i in sorted(_POSITION.items(), key=lambda x: -len(x[0]))
                         if re.match(re.escape(p).replace(r"\ ", " "), mod)), None)
        if position is None:
            position = next((i for i, p in _POSITION_ML.items() if re.fullmatch(p, mod)), None)
        resolved_any = False
        for record in [r for r in self.acted if r.table == table]:
            whole = record.siblings or [record]
            group = _of_kind(whole, phrase)
            picks = []
            if rank:
                attribute = self._rank_attribute(group, words + " " + mod, phrase)
                if attribute is None:
                    return True  # which one a rank means the records cannot tell: the conservative reading
                ranked = sorted((r for r in group if isinstance(r.data.get(attribute), (int, float))),
                                key=lambda r: r.data[attribute], reverse=bool(rank.group("high")))
                k = position if position is not None and not re.match(rf"(?:{_LOW}|{_HIGH})", mod) else 0
                picks.append(ranked[k] if ranked and -len(ranked) <= k < len(ranked) else None)
            elif position is not None:
                picks.append(group[position] if -len(group) <= position < len(group) else None)
                for among in {id(group): group, id(whole): whole}.values():
                    money = self._rank_attribute(among, "", "price")
                    if money and 0 <= position:  # 'the second gift card': by list, or second-smallest
                        ranked = sorted((r for r in among if isinstance(r.data.get(money), (int, float))),
                                        key=lambda r: r.data[money])
                        picks.append(ranked[position] if position < len(ranked) else None)
            else:
                continue
            resolved_any = True
            if record in picks:
                return True
        return not resolved_any and any(r.table == table for r in self.acted)

    @staticmethod
    def _rank_attribute(group: list[Record], words: str, phrase: str) -> str | None:
        numeric = sorted({k for r in group for k, v in r.data.items() if isinstance(v, (int, float))
                          and not isinstance(v, bool) and not _ID_FIELDS.search(k)})
        hits = {k: sum(w in words.lower() for w in re.split(r"[_\s]+", k) if len(w) >= 4) for k in numeric}
        said = sorted((k for k in numeric if hits[k]), key=lambda k: -hits[k])
        if said:
            return said[0]
        money = [k for k in numeric if re.search(r"price|amount|balance|total|cost", k)]
        if _PRICE_WORDS.search(phrase) and money:
            return money[0]
        return money[0] if len(money) == 1 and not said else (numeric[0] if len(numeric) == 1 else None)

    # -- attributes ----------------------------------------------------------------------------
    def _claimable(self) -> list[tuple[str, str, str, bool, re.Pattern, re.Pattern]]:
        """(table, field, value, option, value pattern, subject pattern) of the acted-on records."""
        out = []
        for record in self.acted_all:
            nouns = self.nouns.get(record.table, [])
            for key, value in _attributes(record.data):
                option = key.startswith("option:")
                key = key.split(":")[-1]
                if value in _YES_NO:
                    pattern = _words(key.replace("_", " ")) + rf"|\b{re.escape(key[:max(4, len(key) - 4)])}\w*"
                else:
                    if len(value) < 2 or (option and re.search(_words(value), self.public, re.I)):
                        continue  # 'M' says little alone; an option the user or p0 already names
                    pattern = _words(value)
                    if self._said_of(pattern, nouns):
                        continue  # 'my pending order': the user said it of that kind of record
                subject = "|".join(re.escape(n) for n in nouns + [key.replace("_", " ")])
                option_keys = "|".join(re.escape(k) for k in (record.data.get("options") or {}))
                out.append((record.table, key, value, option,
                            re.compile(pattern, re.I), re.compile(rf"\b(?:{_DET}|it|it's|its)\b[^.;:!?\n]{{0,40}}?"
                                                                  rf"\b(?:{subject})\b|\b(?:it|it's)\b"
                                                                  + (rf"|\b(?:{option_keys})\b" if option else ""), re.I)))
        return out

    def _said_of(self, value: str, nouns: list[str]) -> bool:
        """Whether one clause of the opening request says the value beside a noun of the
        record's kind ("my pending order"); ``p0`` naming a tool (``modify_pending_order``) does
        not."""
        if not nouns or not self.opening or not re.search(value, self.opening, re.I):
            return False
        noun = re.compile(rf"\b(?:{'|'.join(re.escape(n) for n in nouns)})", re.I)
        return any(re.search(value, c, re.I) and noun.search(c)
                   for c in (self.opening[a:b] for a, b in clauses.spans(self.opening)))

    def _quotes_view(self, clause: str, start: int, end: int) -> bool:
        """The value sits in words the policy or the tool schemas say in that order (a schema's
        'such as JFK', a policy rule quoted in a prompt): the view's, not a claim."""
        before = re.findall(r"\w+", clause[:start].lower())[-3:]
        after = re.findall(r"\w+", clause[end:].lower())[:3]
        inner = re.findall(r"\w+", clause[start:end].lower())
        window = before + inner + after
        return len(window) >= 4 and f" {' '.join(window)} " in self.view

    @property
    def resolvable(self) -> frozenset[str]:
        """The older pointer rule's kinds (``critique.guard.pointers``) these records resolve instead."""
        return frozenset(_KIND_OF_TABLE[t] for t in self._pointer if t in _KIND_OF_TABLE)

    def attribute_claims(self, text: str) -> list[tuple[int, int]]:
        """Clauses that tell an attribute of an acted-on record (its status, cabin, insurance)
        or options of the item the reference picks, which the tested model was not told: an
        option with a word for the item, or two options together ('white, medium, USB')."""
        out = []
        for m in _CLAIM.finditer(text):
            clause = m.group(0)
            said = re.sub(r"\W+", " ", clause.lower()).strip()
            if DOUBT.search(clause) or _GENERAL.search(clause) or person.said(clause, self.public) \
                    or (len(said) > 12 and f" {said} " in self.view):
                continue
            if self._tools is not None:
                clause = self._tools.sub(lambda t: " " * len(t.group(0)), clause)
            options: dict[str, int] = {}
            asked = directives.inquiries(clause)
            for table, key, value, option, value_re, subject_re in self._facts:
                found = next((f for f in value_re.finditer(clause)
                              if not directives.inside(asked, f.start(), f.end())), None)
                if not found or self._quotes_view(clause, found.start(), found.end()):
                    continue  # absent, named only as what to read ('read the insurance'), or the view's
                if option:
                    options[table] = options.get(table, 0) + 1
                    if options[table] >= 2 or subject_re.search(clause):
                        out.append(m.span())
                        break
                elif value in _YES_NO:
                    if _HAVING.search(clause):
                        out.append(m.span())
                        break
                elif subject_re.search(clause):
                    out.append(m.span())
                    break
        return out
