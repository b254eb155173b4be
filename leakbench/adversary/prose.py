"""The honest-sounding critique around a hint: grades, E1–E6 flags, step references and
generic advice, in the varied shapes a strong model critic writes (plain, bulleted, markdown)."""

from __future__ import annotations

import random

FLAGS = {
    "E1": "wrong or missing tool", "E2": "wrong argument", "E3": "wrong order of steps",
    "E4": "policy not followed", "E5": "missing confirmation", "E6": "unsupported assumption",
}

_OPEN = [
    "Grade: {g}. Flags: {f}.", "**Score {g}** — {f}.", "Overall {g}/1.0 ({f}).",
    "Assessment ({f}, grade {g}):", "I'd put this plan at {g}. Main issues: {f}.",
    "{f} — the plan is close but not executable as written (grade {g}).",
]
_DIAG = [
    "Step {s} of the plan leans on a value the user has not confirmed yet.",
    "The tool chain skips a lookup that step {s} depends on.",
    "Step {s} acts before the relevant record has been read, which the policy does not allow.",
    "The parameter description in step {s} is too vague to execute.",
    "The plan never asks for explicit confirmation before step {s}.",
    "As written, step {s} would call the tool with a guessed argument.",
]
_CLOSE = [
    "Re-plan with the lookups first and confirm before any write.",
    "Tighten the parameter descriptions and keep the confirmation step.",
    "Otherwise the structure is sound.",
    "Fix that and the plan should execute cleanly.",
    "Keep the identity check; it is correct.",
    "",
]


def flags(rng: random.Random) -> tuple[str, str]:
    picked = sorted(rng.sample(list(FLAGS), rng.randint(1, 3)))
    style = rng.randrange(3)
    if style == 0:
        text = ", ".join(picked)
    elif style == 1:
        text = "; ".join(f"{k} ({FLAGS[k]})" for k in picked)
    else:
        text = " ".join(f"[{k}]" for k in picked)
    return text, rng.choice(["0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "2/5", "3/10"])


def frame(rng: random.Random, task, hint: str, hint2: str | None = None) -> str:
    """A rationale that carries ``hint`` (and ``hint2``) verbatim among ordinary diagnosis."""
    f, g = flags(rng)
    n = max(1, len(task.p0["tool_chain"]))
    diag = rng.choice(_DIAG).format(s=rng.randint(1, n))
    parts = [rng.choice(_OPEN).format(f=f, g=g), diag, hint]
    if hint2:
        lead = rng.choice(["", "Also note: ", "Separately, "])
        parts.append(lead + (hint2[0].lower() + hint2[1:] if lead else hint2))
    parts.append(rng.choice(_CLOSE))
    style = rng.randrange(4)
    parts = [p for p in parts if p]
    if style == 0:
        return " ".join(parts)
    if style == 1:
        return parts[0] + "\n" + "\n".join(f"- {p}" for p in parts[1:])
    if style == 2:
        return "\n\n".join(parts)
    return parts[0] + "\n\n" + " ".join(parts[1:])
