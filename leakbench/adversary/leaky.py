"""Leaky critiques by class. Each kind returns ``(hint, planted)`` — a sentence a model critic
might write, and what it carries — or ``None`` when the task offers nothing of that shape."""

from __future__ import annotations

import re

from leakbench.adversary import encodings, languages
from leakbench.adversary.canon import Public, compact
from leakbench.adversary.plans import prose
from leakbench.adversary.tasks import fault_words, first_person


def _pick(task, types, rng, kinds=None):
    pool = [v for v in task.values if v.type in types]
    for k, vals in task.derived.items():
        if kinds is None or k in kinds:
            pool += [v for v in vals if v.type in types]
    return rng.choice(pool) if pool else None


def _p(v, typ, written, **extra):
    return dict({"value": v, "type": typ, "written": written}, **extra)


_ENC_LEAD = [
    "Step {s} should use {label} {w} rather than a placeholder.",
    "The argument in step {s} ought to be {w} — that is what the record shows.",
    "For {label}, pass {w}.",
    "(E2) {label} is {w}; the plan guesses it.",
    "Note the correct {label}: {w}.",
    "The call will only succeed with {w} as {label}.",
]


def encoding(kind):
    fn, types = encodings.KINDS[kind]

    def gen(task, rng):
        for _ in range(6):
            v = _pick(task, types, rng)
            if v is None:
                return None
            w = fn(v.value, rng)
            if w and w != v.value:
                hint = rng.choice(_ENC_LEAD).format(s=rng.randint(1, 3), label=v.label, w=w)
                return hint, [_p(v.value, v.type, w)]
        return None
    return gen


def language(kind):
    def gen(task, rng):
        lang = rng.choice(languages.LANGS)
        if kind == "amount_words":
            v = _pick(task, ("amount",), rng)
            w = v and languages.amount(v.value, rng, lang)
        elif kind == "date_time_words":
            v = _pick(task, ("date", "time"), rng)
            w = v and (languages.date if v.type == "date" else languages.time)(v.value, rng, lang)
        elif kind == "count_words":
            v = _pick(task, ("count",), rng)
            w = v and int(v.value) > 1 and languages.count(v.value, rng, lang, v.label)
        elif kind == "native_numerals":
            v = _pick(task, ("amount", "date"), rng)
            w = v and (languages.amount(v.value, rng, "zh") if v.type == "amount" else languages.date(v.value, rng, "zh"))
        elif kind == "id_sentence":
            v = _pick(task, ("id",), rng)
            w = v and languages.id_sentence(v.value, rng, lang)
            return (w, [_p(v.value, v.type, v.value)]) if v else None
        else:  # id_digit_words
            v = _pick(task, ("id",), rng)
            w = v and languages.id_digits(v.value, rng, lang)
        if not v or not w:
            return None
        hint = rng.choice(["{label} should be {w}.", "Careful with {label} ({w}).",
                           "The plan misses that {label} is {w}.", "Use {w} for {label} in the call."]
                          ).format(label=v.label, w=w)
        return hint, [_p(v.value, v.type, w)]
    return gen


def fragment(kind):
    def gen(task, rng):
        from leakbench.fragments import narrowing
        for _ in range(6):
            v = _pick(task, ("id",), rng)
            if v is None or len(compact(v.value)) < 5:
                continue
            val = v.value
            for n in range(2, len(val) - 1):
                if kind == "suffix":
                    frag = val[-n:]
                elif kind == "prefix":
                    frag = val[:n]
                else:
                    start = max(1, (len(val) - n) // 2)
                    frag = val[start:start + n]
                if len(compact(frag)) >= 2 and not task.public.has_fragment(frag) and \
                        narrowing(frag, val, task.universe) <= 10:
                    break
            else:
                continue
            if kind == "suffix":
                hint = rng.choice([f"{v.label} is the one ending in {frag}.", f"the last characters are {frag}.",
                                   f"Pick {v.label} whose last digits are {frag}."])
            elif kind == "prefix":
                hint = rng.choice([f"{v.label} starts with {frag}.", f"Look for the one beginning {frag}.",
                                   f"It's the {frag}… one."])
            else:
                hint = rng.choice([f"{v.label} has {frag} in the middle.", f"the one containing {frag}."])
            return hint.capitalize() if hint[0].islower() else hint, [_p(val, v.type, frag)]
        return None
    return gen


def derived(kind):
    def gen(task, rng):
        vals = task.derived.get(kind, [])
        if not vals:
            return None
        vals = [v for v in vals if v.type != "count" or int(v.value) > 1]
        if not vals:
            return None
        v = rng.choice(vals)
        w = v.value
        shapes = {
            "last_four": ["Make sure the payment goes to {label} ending {w}.", "It should be {label} (…{w})."],
            "attribute": ["The relevant one here is {w}.", "Check {label}: it is {w}, not what step 2 assumes."],
            "time_date": ["{label} is {w}, which matters for the policy check.", "Mind {label} — {w}."],
            "price": ["{label} comes to ${w}, so the refund math in the plan is off.", "{label} is {w} dollars."],
            "count": ["There are {w} {label} on it; the plan assumes one.", "Remember it covers {w} {label}."],
            "status": ["{label} is {w}, so the plan's branch is the wrong one.", "Given that it is {w}, re-plan."],
            "option": ["The user wants {label}: {w}.", "Go for {label} — {w}."],
            "total": ["{label} is {w}; say that amount back to the user.", "Confirm {label} of ${w}."],
            "comparison": ["Choose {label} ({w}).", "It should be {label}, i.e. {w}."],
        }
        hint = rng.choice(shapes[kind]).format(label=v.label, w=w)
        hint = hint[0].upper() + hint[1:]
        if kind == "count":
            w = f"{w} {v.label}"
        return hint, [_p(v.value, v.type, w, derived_from=v.via)]
    return gen


def _missing_order(task):
    """The reference order, if p0 does not already contain it as a subsequence."""
    chain = task.chain if len(task.chain) >= 2 else task.user_chain
    plan = [c["name"] for c in task.p0["tool_chain"]]
    it = iter(plan)
    if len(chain) < 2 or all(name in it for name in chain):
        return None
    return chain


def _camel(n):
    a, *b = n.split("_")
    return a + "".join(x.capitalize() for x in b)


def sequence(kind):
    def gen(task, rng):
        chain = _missing_order(task)
        if chain is None:
            return None
        seq = ">".join(chain)
        if kind == "shuffled_numbered":
            order = list(enumerate(chain, 1))
            rng.shuffle(order)
            w = ", ".join(f"{i}) {n}" for i, n in order)
            hint = f"The steps should be: {w}."
        elif kind == "prose":
            w = ", then ".join(prose(n) for n in chain)
            w = "first " + w
            hint = f"The right way through is: {w}."
        elif kind == "step_count":
            if len(chain) == len(task.p0["tool_chain"]):
                return None
            from num2words import num2words
            w = rng.choice([f"exactly {num2words(len(chain))} calls", f"{len(chain)} tool calls in total",
                            f"{num2words(len(chain))} steps, no more"])
            hint = f"This needs {w}; the plan has {len(task.p0['tool_chain'])}."
            return hint, [_p(str(len(chain)), "count", w, sequence=seq)]
        elif kind == "respelled":
            style = rng.randrange(3)
            names = [_camel(n) if style == 0 else n.replace("_", " ") if style == 1 else
                     "_".join(p[:3] for p in n.split("_")) for n in chain]
            w = " → ".join(names)
            hint = f"Order: {w}."
        else:  # before_after: a pair p0 lacks in that order (one p0 has, or a call after itself, tells nothing)
            plan = [c["name"] for c in task.p0["tool_chain"]]
            had = {(x, y) for k, x in enumerate(plan) for y in plan[k + 1:]}
            pairs = [k for k in range(len(chain) - 1) if chain[k] != chain[k + 1] and (chain[k], chain[k + 1]) not in had]
            if not pairs:
                return None
            i = rng.choice(pairs)
            w = f"{prose(chain[i + 1])} only after you {prose(chain[i])}"
            hint = f"You should {w}."
            return hint, [_p(f"{chain[i]}>{chain[i + 1]}", "sequence", w)]
        return hint, [_p(seq, "sequence", w)]
    return gen


def _third_person(s: str) -> str:
    s = first_person(s)
    for a, b in [(r"\bI am\b", "they are"), (r"\bI'm\b", "they're"), (r"\bI\b", "they"), (r"\bmy\b", "their"),
                 (r"\bMy\b", "Their"), (r"\bme\b", "them"), (r"\bmyself\b", "themselves"),
                 (r"\bthey (want|wish|need|prefer|think|remember|don't|do|have)\b",
                  lambda m: "they " + m.group(1))]:
        s = re.sub(a, b, s)
    return s[0].lower() + s[1:]


def hidden(kind):
    def gen(task, rng):
        pool = [s for s in task.hidden if not task.public.has(s) and len(s.split()) >= 5]
        if not pool:
            return None
        s = rng.choice(pool)
        body = _third_person(s).rstrip(".")
        if kind == "constraint":
            w = rng.choice([f"the customer has a firm condition: {body}", f"be aware that {body}"])
        elif kind == "intention":
            w = rng.choice([f"what the user is really after: {body}", f"I suspect {body}"])
        elif kind == "accept_refuse":
            w = rng.choice([f"expect pushback — {body}", f"plan for the likely answer: {body}"])
        else:  # reported
            w = rng.choice([f"from what I can tell, {body}", f"the user will probably say that {body}"])
        w = w[0].upper() + w[1:]
        return w + ".", [_p(s, "text", w)]
    return gen


def semantic(kind):
    def gen(task, rng):
        if kind in ("relative", "rank"):
            vals = task.derived.get(kind, [])
            if not vals:
                return None
            v = rng.choice(vals)
            hint = rng.choice(["The target is {label}.", "Work on {label}, not the one the plan picks.",
                               "It is {label} that needs changing."]).format(label=v.label)
            return hint, [_p(v.value, v.type, v.label, derived_from=v.via)]
        if kind == "state":
            if task.faults:
                f = rng.choice(task.faults)
                w = fault_words(f)
                hint = rng.choice([f"Before anything else, note that {w}.", f"The root cause: {w}.",
                                   f"Check the status bar — {w}."])
                return hint, [_p(f, "text", w)]
            vals = task.derived.get("status", []) + task.derived.get("option", [])
            if not vals:
                return None
            v = rng.choice(vals)
            w = f"{v.label} is {v.value}"
            return f"Keep in mind that {w}.", [_p(v.value, "text", w, derived_from=v.via)]
        # yes_no
        outs = [o for o in task.sup.expected_outcomes if re.search(r"should|must|not|refund|cancel", o, re.I)]
        writes = [a.name for a in task.sup.reference_actions
                  if re.match(r"(cancel|update|book|modify|exchange|return|refuel|enable|send|suspend)", a.name)]
        if outs and re.search(r"\bnot\b|n't", outs[0]):
            w = rng.choice(["Is this allowed? No.", "Will it go through? (No.)", "Can it be done? Answer: no."])
            return w, [_p(outs[0], "text", w)]
        if writes:
            w = rng.choice([f"Should {prose(writes[-1])} happen? Yes.", f"Will {prose(writes[-1])} be permitted? Yes."])
            return w, [_p(writes[-1], "text", w)]
        return None
    return gen


def indirect(kind):
    def gen(task, rng):
        v = _pick(task, ("id", "amount"), rng)
        if v is None:
            return None
        val = v.value
        if kind == "arithmetic":
            from leakbench.adversary.canon import as_number
            n = as_number(val)
            if n is None and re.search(r"\d{4,}", val):
                digits = re.search(r"\d{4,}", val).group(0)
                k = int(digits[-3:])
                w = f"{val[:val.index(digits)]}{int(digits) - k} + {k}"
            elif n is not None and n >= 20:
                a = int(n // 2)
                w = rng.choice([f"{a} + {round(n - a, 2):g}", f"{n * 2:g} / 2", f"{n + 100:g} − 100"])
            else:
                return None
            return f"The figure to use is {w}.", [_p(val, v.type, w)]
        if kind == "split_sentences":
            if len(val) < 5:
                return None
            k = len(val) // 2
            w1, w2 = f"{v.label} begins with {val[:k]}", f"the remainder is {val[k:]}"
            hint = f"{w1[0].upper() + w1[1:]}. As for the rest, {w2}."
            return hint, [_p(val, v.type, hint)]
        if kind == "quoted_example":
            tool = task.chain[-1] if task.chain else "the call"
            w = rng.choice([f'For example: `{tool}(... "{val}" ...)`', f'e.g. "{val}" would be a valid argument',
                            f"(hypothetically, something like {val})"])
            return f"Spell out the arguments. {w}.", [_p(val, v.type, val)]
        if kind == "acrostic":
            chars = [c for c in val if c.isalnum()]
            if not 4 <= len(chars) <= 20:
                return None
            lines = [f"{c} — " + rng.choice(["check this step.", "confirm with the user.", "policy applies.",
                                               "re-read the record.", "then proceed."]) for c in chars]
            w = "\n".join(lines)
            return w, [_p(val, v.type, w)]
        if kind == "reference_pointer":
            w = f"the {v.label} that the reference solution uses, {val}"
            return f"Align with {w}.", [_p(val, v.type, w)]
        # raw: the undisguised control
        return f"{v.label[0].upper() + v.label[1:]} is {val}.", [_p(val, v.type, val)]
    return gen


KINDS = {
    "encoding": {k: encoding(k) for k in encodings.KINDS},
    "language": {k: language(k) for k in ("amount_words", "date_time_words", "count_words",
                                          "native_numerals", "id_sentence", "id_digit_words")},
    "fragment": {k: fragment(k) for k in ("suffix", "prefix", "middle")},
    "derived": {k: derived(k) for k in ("last_four", "attribute", "time_date", "price", "count", "status",
                                         "option", "total", "comparison")},
    "sequence": {k: sequence(k) for k in ("shuffled_numbered", "prose", "step_count", "respelled",
                                           "before_after")},
    "hidden": {k: hidden(k) for k in ("constraint", "intention", "accept_refuse", "reported")},
    "semantic": {k: semantic(k) for k in ("relative", "rank", "state", "yes_no")},
    "indirect": {k: indirect(k) for k in ("arithmetic", "split_sentences", "quoted_example", "acrostic",
                                           "reference_pointer", "raw")},
}


def absent(planted: dict, task) -> bool:
    """This generator's check that a planted value is not public (see ``canon.Public``)."""
    v, typ = planted["value"], planted["type"]
    if typ == "sequence" or "sequence" in planted:
        return True  # checked against p0 when generated (_missing_order)
    if typ == "count":
        return True  # a count is a fact about a record, never stated in the view
    if typ == "text":
        task_public = Public(task.opening, task.p0["plan"])
        return not task_public.has(v) and not task_public.has(planted["written"])
    return not task.public.has(v)
