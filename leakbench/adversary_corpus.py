"""An adversarial corpus of critic rationales for measuring the leak guard, built by class.

Written independently of the guard and of its own corpus generator, so the guard is measured
on disguises it was not tuned on. Real τ²-bench tasks (airline, retail, telecom) are loaded
through the project's adapter; each case is a critique a strong model critic could write —
leaky (a supervision-only value or fact hidden in honest-sounding diagnosis) or clean (full
of values the tested model has already seen, or of numbers about the plan itself:
``leakbench.adversary.structural``). Every leak kind appears a second time with such
plan-structural numbers around it (class ``structural``, kind ``<class>/<kind>``), so a guard
that spares the critic's own counting must still find the leak beside it. The classes only the
database resolves and the order told as a constraint (``leakbench.adversary.records``) come with
clean twins of the same shapes.

    python -m leakbench.adversary_corpus            # writes leakbench/data/leak_adversary.jsonl
    python -m leakbench.adversary_corpus --seed 7 --out other.jsonl
"""

from __future__ import annotations

import functools
import json
import math
import random
from pathlib import Path

from leakbench.adversary import clean, leaky, prose, records, structural
from leakbench.adversary.tasks import DOMAINS, load
from leakbench.tau2_data import task_ids
from evrcore.args import command_parser

OUT = Path(__file__).parent / "data" / "leak_adversary.jsonl"
PER_CLASS = 96      # leaky cases per class and domain, spread over the class's kinds
PER_CLEAN_KIND = 32  # clean cases per clean kind and domain
MIXED_SHARE = 0.5    # leaky cases again with plan-structural numbers around them, per kind
TWIN_SHARE = 2       # clean twins of the database and constraint classes: twice a clean kind's count


@functools.lru_cache(maxsize=None)
def tasks_for(domain: str, seed: int, limit: int | None = None) -> tuple:
    """The domain's tasks (or a seeded ``limit`` of them), loaded once a process; read-only."""
    ids = task_ids(domain)
    if limit is not None:
        ids = sorted(random.Random(f"{seed}:{domain}").sample(ids, min(limit, len(ids))), key=ids.index)
    return tuple(load(domain, i, seed) for i in ids)


def _case(task, cls, kind, n, rationale, leak, planted=None) -> dict:
    case = {"id": f"adv-{task.domain}-{cls}-{kind}-{n:03d}", "env": "tau2", "domain": task.domain,
            "task_id": task.task_id, "opening_request": task.opening, "p0": task.p0,
            "rationale": rationale, "leak": leak, "class": cls, "kind": kind}
    if leak:
        case["planted"] = planted
    return case


def _fill(tasks, want, make, key) -> list:
    """Up to ``want`` cases from ``make(task, rng, n)``, cycling the tasks in a seeded order."""
    order = list(tasks)
    random.Random(key).shuffle(order)
    out, tries = [], 0
    while len(out) < want and tries < max(3 * len(order), want * 4):
        task = order[tries % len(order)]
        rng = random.Random(f"{key}:{tries}")
        tries += 1
        case = make(task, rng, len(out))
        if case is not None:
            out.append(case)
    return out


def build(seed: int = 0, domains=DOMAINS, limit: int | None = None, scale: float = 1.0) -> list[dict]:
    """Every case, deterministic for ``seed``. ``limit`` tasks per domain and ``scale`` of the
    per-kind counts make a quick sample (the default test's)."""
    cases = []
    for domain in domains:
        tasks = tasks_for(domain, seed, limit)
        for cls, kinds in {**leaky.KINDS, **records.KINDS}.items():
            per_kind = max(1, math.ceil(PER_CLASS * scale / len(kinds)))
            for kind, gen in kinds.items():
                def make(task, rng, n, cls=cls, kind=kind, gen=gen):
                    got = gen(task, rng)
                    if not got:
                        return None
                    hint, planted = got
                    rationale = prose.frame(rng, task, hint)
                    if not all(p["written"] in rationale and leaky.absent(p, task) for p in planted):
                        return None
                    return _case(task, cls, kind, n, rationale, True, planted)
                cases += _fill(tasks, per_kind, make, f"{seed}:{domain}:{cls}:{kind}")

                def mixed(task, rng, n, cls=cls, kind=kind, gen=gen):
                    case = make(task, rng, n)
                    if case is None:
                        return None
                    case["rationale"] = structural.add_structure(task, rng, case["rationale"])
                    case.update(id=f"adv-{task.domain}-structural-{cls}-{kind}-{n:03d}", **{"class": "structural"},
                                kind=f"{cls}/{kind}")
                    return case
                cases += _fill(tasks, max(1, math.ceil(per_kind * MIXED_SHARE)), mixed,
                               f"{seed}:{domain}:structural:{cls}:{kind}")
        for kind, gen in {**clean.KINDS, **structural.KINDS, **records.CLEAN}.items():
            def make(task, rng, n, kind=kind, gen=gen):
                got = gen(task, rng)
                if not got:
                    return None
                hint, used = got
                rationale = prose.frame(rng, task, hint, clean.advice(rng) if rng.random() < 0.5 else None)
                if not all(task.public.has(u) for u in used) or not clean.is_clean(rationale, task):
                    return None
                return _case(task, "clean", kind, n, rationale, False)
            want = PER_CLEAN_KIND * (TWIN_SHARE if kind in records.CLEAN else 1)
            cases += _fill(tasks, max(1, math.ceil(want * scale)), make, f"{seed}:{domain}:clean:{kind}")
    return cases


def write(cases: list[dict], path: Path = OUT) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(json.dumps(case, ensure_ascii=False, sort_keys=True) + "\n")


def main(argv=None) -> int:
    parser = command_parser("python -m leakbench.adversary_corpus", __doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    cases = build(args.seed)
    write(cases, args.out)
    leaks = sum(c["leak"] for c in cases)
    print(f"{len(cases)} cases ({leaks} leaky, {len(cases) - leaks} clean) -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
