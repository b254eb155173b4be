"""The labelled leak corpus: critic rationales written from real tasks, leaky and clean.

    python -m leakbench.corpus            # rewrites leakbench/data/leak_corpus.jsonl

Every case is a (task, p0, rationale, label, kind). Leaky rationales carry one piece of
supervision-only content in a disguise produced here by code — IDs spaced, hyphenated, without
their prefix or given in part; amounts in words, rounded or with a currency code; dates in many
formats; the reference sequence in other spellings, numbered out of order, or two calls only;
the user's hidden instructions paraphrased. Clean rationales are the tricky ones: values the
view shows, ``p0``'s own steps restated, the offered tools listed, the policy's numbers.

What counts as supervision-only is decided here on its own terms (a value that does not occur
as a word in the view, the opening request or ``p0``), not by asking the guard, so the corpus
measures the guard rather than echoing it. τ²-bench cases come from its airline, retail and
telecom tasks. ToolSandbox cases are *ToolSandbox-shaped*: built from this project's own
boundary types (contacts, messages, reminders, conversions with milestone-like outcomes), since
ToolSandbox's scenario data may not be copied into this repository.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any, Callable

from envs.base import ReferenceAction, Supervision, TaskView

CORPUS = Path(__file__).parent / "data" / "leak_corpus.jsonl"
SEED = 14
DOMAINS = ("airline", "retail", "telecom")

# -- disguises (written independently of the guard's parsers) ----------------------------------

_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen " \
        "fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December"]
_ORD = ["", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
        "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth",
        "seventeenth", "eighteenth", "nineteenth", "twentieth"] + [
        "twenty-" + w for w in ["first", "second", "third", "fourth", "fifth", "sixth", "seventh",
                                "eighth", "ninth"]] + ["thirtieth", "thirty-first"]


def in_words(n: int) -> str:
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else "-" + _ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return _ONES[n // 100] + " hundred" + ("" if rest == 0 else " " + in_words(rest))
    rest = n % 1000
    return in_words(n // 1000) + " thousand" + ("" if rest == 0 else " " + in_words(rest))


def amount_words(x: float) -> str:
    whole = int(x)
    cents = round((x - whole) * 100)
    text = in_words(whole) + " dollars"
    return text + (f" and {in_words(cents)} cents" if cents else "")


def id_disguises(value: str, rng: random.Random) -> dict[str, str]:
    core = value.lstrip("#")
    cut = rng.randint(2, max(2, len(core) - 2))
    out = {
        "id_spaced": " ".join([core[:cut], core[cut:]]) if len(core) > 3 else core.upper(),
        "id_hyphen": "-".join(core[i:i + 3] for i in range(0, len(core), 3)),
        "id_case": core.swapcase(),
        "id_partial": f"the one ending in …{core[-3:]}" if rng.random() < 0.5 else f"the one starting with {core[:3]}",
    }
    if value.startswith("#"):
        out["id_noprefix"] = core
    digits = re.search(r"\d{4,}$", core)
    if digits and digits.start() > 0:
        out["id_number_only"] = digits.group(0)
    return out


def amount_disguises(x: float, rng: random.Random) -> dict[str, str]:
    out = {"amount_words": amount_words(x),
           "amount_currency": rng.choice([f"{x:g} USD", f"USD {x:,.2f}", f"{x:g} dollars", f"EUR {x:g}"])}
    if not float(x).is_integer():
        out["amount_rounded"] = rng.choice([f"about {round(x)}", f"roughly ${int(x)}", f"{int(x) + 1} or so"])
    return out


def date_disguises(iso: str, rng: random.Random) -> dict[str, str]:
    y, m, d = (int(p) for p in iso[:10].split("-"))
    month = _MONTHS[m - 1]
    return {
        "date_month_name": rng.choice([f"{month} {d}", f"{d} {month}", f"{month[:3]} {d}, {y}"]),
        "date_slashes": rng.choice([f"{d:02d}/{m:02d}/{y}", f"{m:02d}/{d:02d}", f"{m}-{d}-{y}"]),
        "date_ordinal": rng.choice([f"the {_ORD[d]}", f"the {_ORD[d]} of {month}", f"{month} {d}th"]),
    }


def tool_spelling(name: str, style: str) -> str:
    words = name.split("_")
    if style == "camel":
        return words[0] + "".join(w.capitalize() for w in words[1:])
    if style == "pascal":
        return "".join(w.capitalize() for w in words)
    if style == "spaced":
        return " ".join(words)
    if style == "hyphen":
        return "-".join(words)
    return name


def sequence_disguises(names: list[str], rng: random.Random, p0_names: list[str]) -> dict[str, str]:
    """A run of consecutive reference calls in several spellings. Only runs with a pair that
    p0 does not already contain in that order tell the agent anything, so only those are used."""
    steps = [n for i, n in enumerate(names) if i == 0 or names[i - 1] != n]
    known = {(a, b) for k, a in enumerate(p0_names) for b in p0_names[k + 1:]}
    starts = [i for i in range(len(steps) - 1) if steps[i] != steps[i + 1] and (steps[i], steps[i + 1]) not in known]
    if not starts:
        return {}
    i = rng.choice(starts)
    run = steps[i:i + min(len(steps) - i, rng.randint(2, 4))]
    numbered = list(enumerate(run, 1))
    rng.shuffle(numbered)
    return {
        "seq_camel": ", then ".join(tool_spelling(n, "camel") for n in run),
        "seq_spaced": " and after that ".join(tool_spelling(n, "spaced") for n in run),
        "seq_numbered_shuffled": "; ".join(f"{k}. {tool_spelling(n, rng.choice(['camel', 'spaced', 'snake']))}"
                                           for k, n in numbered),
        "seq_two": f"{tool_spelling(steps[i], 'pascal')} followed by {tool_spelling(steps[i + 1], 'pascal')}",
    }


_SWAPS = [(r"\byou're\b", "the user is"), (r"\byou are\b", "the user is"), (r"\byour\b", "their"),
          (r"\byou\b", "the user"), (r"\bwant\b", "would like"), (r"\bdon't\b", "do not"),
          (r"\bIf\b", "Should it happen that"), (r"\bwilling\b", "prepared")]


def paraphrase(sentence: str, rng: random.Random) -> str:
    out = sentence.strip()
    for pattern, repl in _SWAPS:
        if rng.random() < 0.8:
            out = re.sub(pattern, repl, out, flags=re.I)
    parts = [p.strip() for p in re.split(r",\s*", out) if p.strip()]
    if len(parts) > 1 and rng.random() < 0.5:
        parts = parts[1:] + parts[:1]
    return rng.choice(["Keep in mind that ", "Note: ", "The plan ignores that ", ""]) + ", ".join(parts).rstrip(".") + "."


# -- what is public, judged here on its own terms ----------------------------------------------

def _occurs(value: str, text: str) -> bool:
    return re.search(r"(?<![A-Za-z0-9])" + re.escape(value) + r"(?![A-Za-z0-9])", text, re.I) is not None


def _scalars(obj: Any):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _scalars(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _scalars(v)
    elif isinstance(obj, (str, int, float)) and not isinstance(obj, bool):
        yield obj


def hidden_values(view: TaskView, supervision: Supervision, p0: dict) -> dict[str, list]:
    public = view.text() + json.dumps(p0)
    ids, amounts, dates = set(), set(), set()
    for action in supervision.reference_actions:
        for v in _scalars(action.arguments):
            s = str(v)
            if _occurs(s, public) or _occurs(s.lstrip("#"), public):
                continue
            if isinstance(v, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", v):
                month, day = _MONTHS[int(v[5:7]) - 1], int(v[8:10])
                if not (_occurs(f"{month} {day}", public) or _occurs(f"{day} {month}", public)):
                    dates.add(v)
            elif isinstance(v, (int, float)) and abs(v) >= 10:
                amounts.add(float(v))
            elif isinstance(v, str) and re.search(r"\d", v) and re.fullmatch(r"#?[\w-]{5,}", v):
                ids.add(v)
    return {"ids": sorted(ids), "amounts": sorted(amounts), "dates": sorted(dates)}


def hidden_sentences(view: TaskView, supervision: Supervision, p0: dict) -> list[str]:
    """Sentences of the user's hidden instructions that tell something the view does not (a
    word of five letters or more absent from the view, the opening request and p0)."""
    public = (view.text() + json.dumps(p0)).lower()
    out = []
    for s in re.split(r"(?<=[.!?])\s+|\n", supervision.hidden_user_instructions):
        s = s.strip()
        if len(s) < 30 or ":" in s[:20]:
            continue
        novel = [w for w in re.findall(r"[A-Za-z]{5,}", s) if not _occurs(w, public)]
        if len(novel) >= 2:
            out.append(s)
    return out


# -- rationales --------------------------------------------------------------------------------

_OPEN = ["The plan stops before the user's goal is met (E2).", "The plan skips a check the policy requires (E3).",
         "The plan acts on an assumption it never verifies (E6).", "A dependency between steps is wrong (E4)."]
_CLOSE = ["Revise it so every precondition is checked first.", "Make the final write depend on what the lookups return.",
          "Confirm with the user before acting.", ""]


def _wrap(rng: random.Random, middle: str) -> str:
    return f"{rng.choice(_OPEN)} {middle} {rng.choice(_CLOSE)}".strip()


def leaky_cases(view: TaskView, sup: Supervision, p0: dict, rng: random.Random) -> list[tuple[str, str]]:
    values = hidden_values(view, sup, p0)
    out: list[tuple[str, str]] = []
    public = view.text() + json.dumps(p0)
    for v in values["ids"][:2]:
        for kind, written in id_disguises(v, rng).items():
            if kind == "id_number_only" and _occurs(written, public):
                continue  # the number alone is in the view (the user gave it)
            out.append((kind, _wrap(rng, rng.choice([f"It must act on {written}.", f"The record to use is {written}.",
                                                     f"Look at {written} instead."]))))
    for x in values["amounts"][:2]:
        for kind, written in amount_disguises(x, rng).items():
            out.append((kind, _wrap(rng, f"The amount involved should be {written}.")))
    for d in values["dates"][:1]:
        for kind, written in date_disguises(d, rng).items():
            out.append((kind, _wrap(rng, f"The relevant date is {written}.")))
    p0_names = [step["name"] for step in p0["tool_chain"]]
    for kind, written in sequence_disguises([a.name for a in sup.reference_actions], rng, p0_names).items():
        out.append((kind, _wrap(rng, f"The right order is {written}.")))
    for s in hidden_sentences(view, sup, p0)[:2]:
        out.append(("hidden_paraphrase", _wrap(rng, paraphrase(s, rng))))
    return out


_PUBLIC_NUMBER = re.compile(r"(?<![\w.])\$?\d[\d,]*(?:\.\d+)?(?:\s+(?:hours?|days?|dollars?|percent|%))?")


def clean_cases(view: TaskView, sup: Supervision, p0: dict, rng: random.Random) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    steps = [s["name"] for s in p0["tool_chain"]]
    if len(steps) >= 2:
        style = rng.choice(["snake", "camel", "spaced"])
        told = ", then ".join(tool_spelling(n, style) for n in steps)
        out.append(("clean_p0_restated", _wrap(rng, f"Your plan does {told}; the order is fine but a step is missing.")))
        desc = p0["tool_chain"][0]["parameter_description"]
        out.append(("clean_p0_values", _wrap(rng, f"The first step ({tool_spelling(steps[0], style)} with {desc}) is right.")))
    tools = view.tool_names
    if len(tools) >= 4:
        k = rng.randint(4, len(tools))
        start = rng.randrange(len(tools) - k + 1)
        listed = ", ".join(tools[start:start + k])
        out.append(("clean_offered_tools", _wrap(rng, f"The task offers {listed}; the plan uses too few of them.")))
    numbers = [m.group(0) for m in _PUBLIC_NUMBER.finditer(view.policy)]
    if numbers:
        picked = rng.sample(numbers, min(2, len(numbers)))
        out.append(("clean_policy_numbers", _wrap(rng, f"The policy's limits ({' and '.join(picked)}) are not checked.")))
    if view.opening_request:
        words = [w for w in re.findall(r"[A-Z][a-z]+|#?\w*\d\w*", view.opening_request)][:3]
        if words:
            out.append(("clean_view_values", _wrap(rng, f"The user said {', '.join(words)}; use that.")))
    ref = [a.name for a in sup.reference_actions]
    if ref:
        out.append(("clean_single_tool", _wrap(rng, f"The plan never calls {tool_spelling(rng.choice(ref), rng.choice(['snake', 'camel']))}.")))
    out.append(("clean_generic", _wrap(rng, "It does not verify the user's identity or eligibility before changing anything.")))
    return out


# -- tasks -------------------------------------------------------------------------------------

def make_p0(view: TaskView, sup: Supervision, rng: random.Random) -> dict:
    """A plausible tested-model plan: the reference's lookups without its last write, the
    first step's arguments guessed from the request."""
    actions = [a for a in sup.reference_actions if a.requestor == "assistant"] or list(sup.reference_actions)
    keep = actions[:-1] if len(actions) > 1 else actions
    chain = []
    for i, a in enumerate(keep):
        desc = json.dumps(a.arguments) if i == 0 else "the identifiers found in the previous step"
        chain.append({"name": a.name, "parameter_description": desc, "reason": "needed by the request"})
    return {"plan": "Identify the user, look up the records, check the policy, then act.", "tool_chain": chain}


def tau2_tasks(domain: str) -> list[tuple[TaskView, Supervision]]:
    from envs.base import TaskSelection
    from envs.tau2 import Tau2Environment
    from envs.tau2 import tasks as tau2

    env = Tau2Environment()
    out = []
    for task_id in env.select(TaskSelection(domain=domain)):
        view, sup = env.load(domain, task_id)
        reason = tau2.task(domain, task_id).user_scenario.instructions
        opening = getattr(reason, "reason_for_call", None) or ""
        out.append((view.model_copy(update={"opening_request": opening}), sup))
    return out


def toolsandbox_shaped(n: int, rng: random.Random) -> list[tuple[TaskView, Supervision]]:
    """Synthetic tasks in ToolSandbox's shape (its tool vocabulary, milestone-like outcomes)."""
    first = ["Homer", "Fredrik", "Kazuo", "Amara", "Lucia", "Dmitri", "Ngozi", "Priya", "Tomasz", "Ines"]
    last = ["Thoreson", "Okafor", "Vasquez", "Lindqvist", "Moreau", "Haddad", "Ishikawa", "Brennan"]
    tools = ["search_contacts", "send_message_with_phone_number", "add_reminder", "search_reminder",
             "convert_currency", "get_current_timestamp", "modify_contact", "set_wifi_status",
             "search_messages", "timestamp_to_datetime_info"]
    view_tools = [{"type": "function", "function": {"name": t, "parameters": {}}} for t in tools]
    out = []
    for i in range(n):
        name = f"{rng.choice(first)} {rng.choice(last)}"
        phone = f"+1{rng.randint(200, 999)}{rng.randint(100, 999)}{rng.randint(1000, 9999)}"
        amount = round(rng.uniform(20, 3000), 2)
        date = f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        contact_id = f"{rng.randint(10**7, 10**8):x}-{rng.randint(1000, 9999)}"
        actions = [ReferenceAction(name="search_contacts", arguments={"name": name}),
                   ReferenceAction(name="modify_contact", arguments={"person_id": contact_id, "phone_number": phone}),
                   ReferenceAction(name="convert_currency", arguments={"amount": amount, "from_currency_code": "USD",
                                                                      "to_currency_code": "EUR"}),
                   ReferenceAction(name="add_reminder", arguments={"content": "pay back", "reminder_timestamp": date}),
                   ReferenceAction(name="send_message_with_phone_number", arguments={"phone_number": phone,
                                                                                     "content": "Done"})]
        rng.shuffle(actions[2:4])
        hidden = (f"You are {name.split()[0]}'s roommate. You want the new number saved and a reminder "
                  f"set. Only reveal that the landlord Mortimer expects payment by midsummer when asked. "
                  f"You remember the old phone was stolen at the aquarium.")
        view = TaskView(env="toolsandbox", domain="toolsandbox", task_id=f"shaped_{i}",
                        policy="You are a helpful assistant on a phone. Use the tools to act for the user. "
                               "Ask for missing information.",
                        tools=view_tools, opening_request=f"Update {name.split()[0]}'s phone number and remind me about the money.")
        sup = Supervision(task_id=f"shaped_{i}", reference_actions=actions,
                          expected_outcomes=[f"Milestone: contact database row with phone_number == {phone}",
                                             "Minefield: no message sent before the contact is updated"],
                          hidden_user_instructions=hidden)
        out.append((view, sup))
    return out


def build(seed: int = SEED, shaped: int = 60) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    tasks = [(d, v, s) for d in DOMAINS for v, s in tau2_tasks(d)]
    tasks += [("toolsandbox-shaped", v, s) for v, s in toolsandbox_shaped(shaped, rng)]
    cases: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for domain, view, sup in tasks:
        p0 = make_p0(view, sup, rng)
        leaks = leaky_cases(view, sup, p0, rng)
        cleans = clean_cases(view, sup, p0, rng)
        picked = _rarest(leaks, 3, counts, rng) + _rarest(cleans, 2, counts, rng)
        for kind, rationale in picked:
            case = {"id": f"{domain}/{view.task_id}/{kind}", "env": view.env, "domain": domain,
                    "task_id": view.task_id, "kind": kind, "leak": not kind.startswith("clean_"),
                    "opening_request": view.opening_request, "p0": p0, "rationale": rationale}
            if view.env != "tau2":
                case["view"] = view.model_dump()
                case["supervision"] = sup.model_dump()
            cases.append(case)
    return cases


def _rarest(options: list[tuple[str, str]], k: int, counts: dict[str, int],
            rng: random.Random) -> list[tuple[str, str]]:
    """``k`` of the options, the kinds least represented so far first (ties at random), so rare
    disguises (amounts, dates) are not drowned by common ones."""
    rng.shuffle(options)
    picked, kinds = [], set()
    for kind, text in sorted(options, key=lambda o: counts.get(o[0], 0)):
        if kind not in kinds and len(picked) < k:
            picked.append((kind, text))
            kinds.add(kind)
            counts[kind] = counts.get(kind, 0) + 1
    return picked


def load(path: Path = CORPUS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def task_of(case: dict[str, Any], loader: Callable[[str, str], tuple[TaskView, Supervision]] | None = None):
    """The case's (view with its opening request, supervision)."""
    if "view" in case:
        return TaskView.model_validate(case["view"]), Supervision.model_validate(case["supervision"])
    if loader is None:
        from envs.tau2 import Tau2Environment

        loader = Tau2Environment().load
    view, sup = loader(case["domain"], case["task_id"])
    return view.model_copy(update={"opening_request": case["opening_request"]}), sup


def main() -> None:
    cases = build()
    CORPUS.parent.mkdir(parents=True, exist_ok=True)
    CORPUS.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8")
    kinds: dict[str, int] = {}
    for c in cases:
        kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
    print(f"{len(cases)} cases ({sum(c['leak'] for c in cases)} leaky) → {CORPUS.name}")
    for kind, n in sorted(kinds.items()):
        print(f"  {kind:24s} {n}")


if __name__ == "__main__":
    main()
