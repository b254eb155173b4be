"""What each derivation of the supervision costs and buys: the leak guard's relevance test
(``critique.guard.relevance``) measured on the adversarial corpus with each set of derivations.

    python bench/leak_guard_derivations.py            # the whole adversarial corpus
    python bench/leak_guard_derivations.py --sample 1500

For each set: surface and order catch, false alarms on plan-structural clean critiques and on
all clean ones, words removed per clean critique, and the guard's time per critique (build +
scan, on this machine and its load). ``none`` is the guard before relevance: every unseen value
removed.
"""

from __future__ import annotations

import argparse

from leakbench.evaluate import load, measure, sample

SETS = {
    "none (every unseen value removed)": None,
    "no derivation": (),
    "value": ("value",),
    "value + part": ("value", "part"),
    "value + part + count (default)": ("value", "part", "count"),
    "value + part + count + arithmetic": ("value", "part", "count", "arithmetic"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int)
    args = parser.parse_args()
    cases = sample(load("adversary"), args.sample)
    print("| derivations | surface catch | order catch | false alarms: plan-structural | false alarms: all clean "
          "| words removed / clean critique | ms / critique |")
    print("|---|---|---|---|---|---|---|")
    for name, derivations in SETS.items():
        m = measure(cases, fragments=False, derivations=derivations)
        structural = m.groups.get("clean: plan-structural")
        print(f"| {name} | {m.surface_catch:.1%} | {m.groups['order'].rate('rules'):.1%} | "
              f"{structural.rate('rules') if structural else 0:.1%} | {m.false_alarms:.1%} | "
              f"{m.words_removed_per_clean:.3f} | {m.ms_per_critique:.1f} |", flush=True)


if __name__ == "__main__":
    main()
