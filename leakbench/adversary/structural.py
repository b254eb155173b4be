"""Honest critiques full of numbers about the plan itself — what no supervision contains.

A strong critic counts and points: "steps 3 and 4 are swapped; steps 11 and 12 repeat the same
lookup", "fifteen or twenty calls is far too many; about ten should do", "retry at most twice",
"80 % of the plan is lookups", "wait 30 seconds before rebooting". The step numbers point into
the tested model's own plan (``p0``); sizes, counts, percentages and durations are the critic's
advice, drawn here at random, not from the task. Written in digits or words and in several
languages, in the shapes a critic writes (prose, bullets, terse notes). A kind returns
``(hint, [])`` — nothing it quotes needs to be public, since nothing of it is the task's."""

from __future__ import annotations

import random

from num2words import num2words

from leakbench.adversary.languages import zh_int

_LANGS = ("en", "en", "en", "es", "de", "fr", "it", "pt", "zh")


def _n(k: int, rng: random.Random, lang: str = "en") -> str:
    """``k`` in digits or in words of ``lang``."""
    if rng.random() < 0.5:
        return str(k)
    if lang == "zh":
        return zh_int(k)
    return num2words(k, lang=lang)


def _steps(task) -> int:
    return max(1, len(task.p0["tool_chain"]))


def step_references(task, rng):
    """Step numbers into ``p0``, any of them (the last ones too), in the critic's phrasings."""
    n = _steps(task)
    a = rng.randint(1, n)
    b = min(n, a + 1) if a < n else max(1, a - 1)
    c = rng.randint(1, n)
    shapes = [
        f"Steps {a} and {b} are swapped; step {c} repeats the same lookup.",
        f"Step {c} should come before step {a}.",
        f"From step {a} onward the plan assumes the record is already loaded.",
        f"Steps {min(a, b)}–{max(a, b)} can be merged into one call.",
        f"In step #{c} the argument is only described, never obtained.",
        f"(step {c}) needs a confirmation; so does step {a}.",
        f"Drop step {c}: it duplicates step {a}.",
        f"The write in step {n} comes without the read-back step {max(1, n - 1)} promised.",
        f"Step {_n(c, rng)} is the weak point.",
        f"Look again at steps {a}, {b} and {c}.",
    ]
    return rng.choice(shapes), []


def plan_size(task, rng):
    """How long the plan is and how long it should be (advice, not the reference's length)."""
    n = _steps(task)
    m = rng.randint(2, 30)
    shapes = [
        f"As written the plan has {_n(n, rng)} steps; a {m}-step plan would be hard to follow.",
        f"{_n(m, rng).capitalize()} steps is too many for a task like this.",
        f"Keep the revised plan short — well under {_n(m, rng)} tool calls.",
        f"A plan of {m} or more calls usually means the lookups are not reused.",
        f"Of the {_n(n, rng)} steps, only the write matters for the outcome.",
        f"This could be a {m}-call plan at most.",
    ]
    return rng.choice(shapes), []


def advice_counts(task, rng):
    """Counts in general advice: 'fifteen or twenty calls is far too many; about ten should do'."""
    a, b = sorted(rng.sample(range(2, 31), 2))
    c, k = rng.randint(2, 12), rng.randint(2, 5)
    shapes = [
        f"{_n(a, rng).capitalize()} or {_n(b, rng)} calls is far too many; about {_n(c, rng)} should do.",
        f"Retry a failed lookup at most {_n(k, rng)} times, then ask the user.",
        f"Ask no more than {_n(k, rng)} clarifying questions before acting.",
        f"Confirm {_n(k, rng)} things before the write: identity, the action, the amount.",
        f"A critic usually finds {a}–{b} issues in a plan like this; here there are {_n(k, rng)}.",
        f"Every one of the {_n(b, rng)} tools offered need not be used.",
        f"Give the user {_n(k, rng)} options at most.",
        f"There are {_n(k, rng)} problems, in order of importance:",
    ]
    return rng.choice(shapes), []


def percentages(task, rng):
    p, q = rng.choice(range(5, 100, 5)), rng.choice(range(5, 100, 5))
    shapes = [
        f"About {p}% of the plan is lookups that never feed a later step.",
        f"Roughly {p} % of the effort goes into identity checks.",
        f"I am {p}% confident the write would be refused as planned.",
        f"Fixing the confirmation would cover {p} percent of the risk; the rest is the order ({q}%).",
        f"The plan is maybe {p}% executable.",
    ]
    return rng.choice(shapes), []


def durations(task, rng):
    s, m, h = rng.choice([5, 10, 15, 20, 30, 45, 60, 90]), rng.randint(2, 30), rng.randint(2, 48)
    shapes = [
        f"Wait {s} seconds after the restart before checking again.",
        f"Do not keep the user on hold for more than {_n(m, rng)} minutes.",
        f"A {m}-minute detour into unrelated lookups is wasted.",
        f"If nothing changes after {s} seconds, move to the next step.",
        f"The plan would take {_n(m, rng)} minutes of back-and-forth; aim for half.",
        f"Don't promise anything within {h} hours that the policy does not state.",
    ]
    return rng.choice(shapes), []


_OTHER = {
    "es": ["Los pasos {a} y {b} están invertidos; el paso {c} repite la misma consulta.",
           "{x} llamadas son demasiadas; con unas {y} basta.", "Reintenta como máximo {k} veces.",
           "Alrededor del {p}% del plan son consultas."],
    "de": ["Die Schritte {a} und {b} sind vertauscht; Schritt {c} wiederholt dieselbe Abfrage.",
           "{x} Aufrufe sind zu viele; etwa {y} reichen.", "Höchstens {k} Wiederholungen.",
           "Etwa {p} % des Plans sind Abfragen."],
    "fr": ["Les étapes {a} et {b} sont inversées ; l'étape {c} répète la même recherche.",
           "{x} appels, c'est trop ; environ {y} suffisent.", "Réessayez au plus {k} fois.",
           "Environ {p} % du plan sont des recherches."],
    "it": ["I passi {a} e {b} sono invertiti; il passo {c} ripete la stessa ricerca.",
           "{x} chiamate sono troppe; ne bastano circa {y}.", "Riprova al massimo {k} volte."],
    "pt": ["Os passos {a} e {b} estão trocados; o passo {c} repete a mesma consulta.",
           "{x} chamadas são demais; umas {y} bastam.", "Tente de novo no máximo {k} vezes."],
    "zh": ["第{a}步和第{b}步顺序颠倒了；第{c}步重复了同样的查询。", "{x}次调用太多了，大约{y}次就够了。",
           "最多重试{k}次。", "计划中大约{p}%是查询。"],
}


def other_languages(task, rng):
    """The same structural numbers in Spanish, German, French, Italian, Portuguese, Chinese."""
    lang = rng.choice([x for x in _LANGS if x != "en"])
    n = _steps(task)
    a = rng.randint(1, n)
    b = min(n, a + 1) if a < n else max(1, a - 1)
    x, y = sorted(rng.sample(range(3, 31), 2), reverse=True)
    values = {"a": a, "b": b, "c": rng.randint(1, n), "x": _n(x, rng, lang), "y": _n(y, rng, lang),
              "k": _n(rng.randint(2, 5), rng, lang), "p": rng.choice(range(5, 100, 5))}
    text = rng.choice(_OTHER[lang]).format(**values)
    return text[0].upper() + text[1:], []


def everything(task, rng):
    """Several of the above in one critique, as a long review reads."""
    picks = rng.sample([step_references, plan_size, advice_counts, percentages, durations], 3)
    return " ".join(p(task, rng)[0] for p in picks), []


KINDS = {
    "structural_steps": step_references, "structural_size": plan_size,
    "structural_counts": advice_counts, "structural_percent": percentages,
    "structural_durations": durations, "structural_languages": other_languages,
    "structural_mixed": everything,
}
"""Clean kinds: plan-structural numbers."""


def add_structure(task, rng, hint: str) -> str:
    """A leaky hint with plan-structural numbers around it (the leak must still be found)."""
    extra = rng.choice([step_references, advice_counts, percentages, durations, plan_size])(task, rng)[0]
    return f"{extra} {hint}" if rng.random() < 0.5 else f"{hint} {extra}"
