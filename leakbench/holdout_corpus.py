"""A held-out labelled corpus for the leak guard, written independently of it.

``python -m leakbench.holdout_corpus`` writes ``leakbench/data/leak_holdout.jsonl``; ``build(seed)``
returns the cases. Each case: id, env, domain, task_id, opening_request, p0, rationale, leak,
class, kind, and for leaky cases ``planted`` (value, type, written); clean cases carry
``cited`` (the public values they spell out). Leaky rationales hide one or two leaky sentences
among honest, public-only critique so that the surroundings look like the clean cases.

Publicness (see :mod:`leakbench.holdout.facts`): a value is public when it occurs, lower-cased,
in the task view with the opening request written here, or in p0.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from leakbench.holdout import clean, leaky
from leakbench.holdout.facts import all_facts
from evrcore.args import command_parser

OUT = Path(__file__).parent / "data" / "leak_holdout.jsonl"
PER_CLASS = {"airline": 20, "retail": 22, "telecom": 20}  # leaky cases per class and domain
CLEAN = {"airline": 110, "retail": 120, "telecom": 110}
CLEAN_MAIN = [clean.restate_p0, clean.tools_offered, clean.policy_quote, clean.flags, clean.cite_opening]


def leaky_case(f, rng, cls):
    got = leaky.CLASSES[cls](f, rng)
    if got is None:
        return None
    sentence, kind, planted = got
    parts, _ = clean.pieces(f, rng, rng.randint(1, 3))
    sentences = [p[0] for p in parts]
    sentences.insert(rng.randint(0, len(sentences)), sentence)
    style = rng.choice(clean.STYLES)
    text = clean.assemble(rng, style, sentences)
    if not all(p["written"] in text for p in planted):  # a style that re-escapes (JSON) hides it
        text = clean.assemble(rng, "paragraph", sentences)
    return text, f"{kind}/{style}", planted


def clean_case(f, rng):
    main = rng.choice(CLEAN_MAIN + ([clean.device_settings] if f.domain == "telecom" else []))
    first = main(f, rng)
    parts, _ = clean.pieces(f, rng, rng.randint(2, 4))
    parts = [first] + [p for p in parts if p[0] != first[0]]
    style = rng.choice(clean.STYLES)
    text = clean.assemble(rng, style, [p[0] for p in parts])
    cited = [c for p in parts for c in p[1]]
    if not all(c["written"] in text for c in cited):
        text = clean.assemble(rng, "paragraph", [p[0] for p in parts])
    return text, f"{main.__name__}/{style}", cited


def base(f, n, **more):
    return {"id": f"holdout-{n:04d}", "env": "tau2", "domain": f.domain, "task_id": f.task_id,
            "opening_request": f.opening, "p0": f.p0, **more}


def build(seed: int = 0, facts=None) -> list[dict]:
    rng = random.Random(seed)
    facts = facts if facts is not None else all_facts()
    by_domain = {d: [f for f in facts if f.domain == d] for d in PER_CLASS}
    cases = []
    for d, pool in by_domain.items():
        for cls in leaky.CLASSES:
            made, tries = 0, 0
            while made < PER_CLASS[d] and tries < 400:
                tries += 1
                f = rng.choice(pool)
                got = leaky_case(f, rng, cls)
                if got is None:
                    continue
                text, kind, planted = got
                cases.append(base(f, 0, rationale=text, leak=True, **{"class": cls}, kind=kind, planted=planted))
                made += 1
        for _ in range(CLEAN[d]):
            f = rng.choice(pool)
            text, kind, cited = clean_case(f, rng)
            cases.append(base(f, 0, rationale=text, leak=False, **{"class": "clean_" + kind.split("/")[0]},
                              kind=kind, cited=cited))
    rng.shuffle(cases)
    for i, c in enumerate(cases):
        c["id"] = f"holdout-{i:04d}"
    return cases


def main(argv: list[str] | None = None) -> None:
    command_parser("python -m leakbench.holdout_corpus", __doc__.split("\n")[0]).parse_args(argv)
    cases = build(0)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w", encoding="utf-8") as fh:
        for c in cases:
            fh.write(json.dumps(c, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"wrote {len(cases)} cases to {OUT.name}")


if __name__ == "__main__":
    main()
