"""Measure the leak guard on the labelled corpus: catch rate and false-alarm rate per kind.

    python -m critique.leak_eval                       # rules, and rules + the scripted auditor
    python -m critique.leak_eval --sample 150          # a seeded sample (the default test's)
    python -m critique.leak_eval --auditor-model openai/gpt-4o-mini   # a real auditor model

Catch rate = share of leaky cases the guard flags; false-alarm rate = share of clean cases it
flags. "Rules" is the guard alone; "+ auditor" also counts the auditor's findings. Offline the
auditor is a scripted stand-in (``testkit.leak_auditor``: it names sentences that share
distinctive words with the supervision) — it shows the plumbing, not a model's judgement.
Exit code 1 when the rules miss the targets (catch < 95% or false alarms > 2%).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from critique.auditor import LeakAuditor
from critique.leak_corpus import CORPUS, load, task_of
from critique.leak_guard import LeakGuard
from evrcore.plan import Plan

CATCH_TARGET = 0.95
FALSE_ALARM_TARGET = 0.02


@dataclass
class Tally:
    n: int = 0
    rules: int = 0
    audited: int = 0

    def rate(self, which: str) -> float:
        return getattr(self, which) / self.n if self.n else 0.0


@dataclass
class Measurement:
    kinds: dict[str, Tally] = field(default_factory=dict)
    leak: Tally = field(default_factory=Tally)
    clean: Tally = field(default_factory=Tally)
    misses: list[dict[str, Any]] = field(default_factory=list)
    alarms: list[dict[str, Any]] = field(default_factory=list)
    with_auditor: bool = False

    @property
    def catch(self) -> float:
        return self.leak.rate("rules")

    @property
    def false_alarms(self) -> float:
        return self.clean.rate("rules")

    def meets_targets(self) -> bool:
        return self.catch >= CATCH_TARGET and self.false_alarms <= FALSE_ALARM_TARGET

    def as_dict(self) -> dict[str, Any]:
        def row(t: Tally) -> dict[str, Any]:
            out = {"n": t.n, "rules": round(t.rate("rules"), 4)}
            if self.with_auditor:
                out["with_auditor"] = round(t.rate("audited"), 4)
            return out

        return {"catch": row(self.leak), "false_alarms": row(self.clean),
                "kinds": {k: row(t) for k, t in sorted(self.kinds.items())}}


def measure(cases: list[dict[str, Any]], auditor: LeakAuditor | None = None,
            loader: Callable | None = None) -> Measurement:
    result = Measurement(with_auditor=auditor is not None)
    for case in cases:
        view, supervision = task_of(case, loader)
        plan = Plan.model_validate(case["p0"])
        rules = bool(LeakGuard(view, supervision, plan).scan(case["rationale"]))
        audited = rules
        if auditor is not None:
            audited = rules or bool(auditor.audit(supervision, case["rationale"]))
        for tally in (result.kinds.setdefault(case["kind"], Tally()), result.leak if case["leak"] else result.clean):
            tally.n += 1
            tally.rules += rules
            tally.audited += audited
        if case["leak"] and not rules:
            result.misses.append(case)
        if not case["leak"] and rules:
            result.alarms.append(case)
    return result


def sample(cases: list[dict[str, Any]], size: int | None, seed: int = 0) -> list[dict[str, Any]]:
    if size is None or size >= len(cases):
        return cases
    return random.Random(seed).sample(cases, size)


def render(m: Measurement) -> str:
    head = f"{'kind':26s} {'n':>5s} {'rules':>7s}" + (f" {'+ auditor':>10s}" if m.with_auditor else "")
    lines = [head, "-" * len(head)]

    def line(name: str, t: Tally) -> str:
        out = f"{name:26s} {t.n:5d} {t.rate('rules'):7.1%}"
        return out + (f" {t.rate('audited'):10.1%}" if m.with_auditor else "")

    for kind, t in sorted(m.kinds.items(), key=lambda kv: (kv[0].startswith("clean_"), kv[0])):
        lines.append(line(kind, t))
    lines += ["-" * len(head), line("catch rate (leaky)", m.leak), line("false alarms (clean)", m.clean)]
    verdict = "meets" if m.meets_targets() else "MISSES"
    lines.append(f"rules {verdict} the targets: catch ≥ {CATCH_TARGET:.0%}, false alarms ≤ {FALSE_ALARM_TARGET:.0%}")
    return "\n".join(lines)


def main(argv: list[str] | None = None, make_auditor: Callable[[str | None], LeakAuditor] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m critique.leak_eval", description=__doc__.split("\n")[0])
    p.add_argument("--sample", type=int, help="a seeded sample of this many cases (default: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-auditor", action="store_true", help="measure the rules alone")
    p.add_argument("--auditor-model", help="a litellm model for the auditor (default: the scripted stand-in)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--show", type=int, default=0, help="print this many misses and false alarms")
    args = p.parse_args(argv)
    if args.sample is not None and args.sample < 1:
        print(f"--sample must be a positive number of cases, not {args.sample}", file=sys.stderr)
        return 2
    if not CORPUS.exists():
        print(f"no corpus at {CORPUS.name}; build it with python -m critique.leak_corpus", file=sys.stderr)
        return 2
    auditor = None
    if not args.no_auditor:
        if make_auditor is None:
            print("the auditor needs a model; run through `python -m critique.leak_eval`", file=sys.stderr)
            return 2
        auditor = make_auditor(args.auditor_model)
    m = measure(sample(load(), args.sample, args.seed), auditor)
    print(json.dumps(m.as_dict(), indent=2) if args.json else render(m))
    for case in (m.misses[: args.show] + m.alarms[: args.show]):
        print(f"\n[{'miss' if case['leak'] else 'false alarm'}] {case['id']}: {case['rationale']}")
    return 0 if m.meets_targets() else 1


if __name__ == "__main__":
    # The command is a composition root: the auditor's model comes from the test kit's factory
    # (the scripted stand-in, or a named model through the runtime's model layer).
    from testkit.leak_auditor import make_auditor

    sys.exit(main(make_auditor=make_auditor))
