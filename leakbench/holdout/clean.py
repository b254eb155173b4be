"""Honest critique material built from public values only: p0 restated, offered tools, policy
quotes, grades, E1–E6 flags, step numbers, and public values written in many spellings.

Every writer returns ``(text, cited)``; ``cited`` lists the public values the text spells out
(``{"value", "written"}``), so a test can check each one against the view.
"""

from __future__ import annotations

import json
import re

from leakbench.holdout import forms

FLAGS = {
    "E1": "the plan drifts from what the user actually asked",
    "E2": "part of the request is left unhandled",
    "E3": "it acts before the explicit confirmation the policy requires",
    "E4": "a step needs an identifier that no earlier step produces",
    "E5": "a tool is called with parameters the schema does not take",
    "E6": "the plan promises an outcome the tools cannot deliver",
}
DEVICE_TERMS = ["airplane mode", "mobile data", "roaming", "APN", "data saver", "VPN",
                "network mode", "SIM", "MMS", "Wi-Fi", "status bar", "speed test"]
STYLES = ("bullets", "markdown", "json", "paragraph", "terse")


def public_tokens(f) -> list[str]:
    """Values in the opening request worth citing (ids, codes, numbers, names)."""
    toks = re.findall(r"#W\d{7}|\b[a-z]+_[a-z]+_\d{4}\b|\d{3}-\d{3}-\d{4}|\b[A-Z0-9]{6}\b|\b[A-Z]{3}\d{3}\b|\b\d{5}\b",
                      f.opening)
    names = re.findall(r"\b(?:I am|name is) ([A-Z][a-z]+ [A-Z][a-z]+)", f.opening)
    return [t for t in dict.fromkeys(toks + names) if f.is_public(t)]


def respell(value: str, rng) -> tuple[str, str]:
    """A public value in some other spelling: (kind, written)."""
    kind = rng.choice(["plain", "spelled", "nato", "separated", "fullwidth", "devanagari", "ja", "ru", "backticks"])
    if kind == "plain":
        return kind, value
    if kind == "backticks":
        return kind, f"`{value}`"
    if kind in ("spelled", "nato", "separated"):
        return kind, forms.DISGUISES[kind](value, rng)
    if not any(c.isdigit() for c in value):
        return "plain", value
    if kind in ("fullwidth", "devanagari"):
        return kind, forms.digits_in(kind, value)
    return kind, forms.digits_in(kind, value)


def restate_p0(f, rng):
    cited, lines = [], []
    for i, s in enumerate(f.p0["tool_chain"], 1):
        params = s["parameter_description"]
        for tok in public_tokens(f):
            if tok in params and rng.random() < 0.6:
                _, w = respell(tok, rng)
                params = params.replace(tok, w)
                cited.append({"value": tok, "written": w})
        lines.append(f"step {i} `{s['name']}` ({params})")
    return "Your plan, as I read it: " + "; ".join(lines) + ".", cited


def tools_offered(f, rng):
    pick = sorted(rng.sample(f.tools, min(len(f.tools), rng.randint(3, 6))))
    lead = rng.choice(["Tools you have available include", "The view offers, among others:",
                       "Worth remembering that you can call", "Offered tools (unordered):"])
    return f"{lead} {', '.join('`' + t + '`' for t in pick)}.", []


def policy_quote(f, rng):
    if not f.policy_lines:
        return "The policy asks for an explicit confirmation before any write action.", []
    line = rng.choice(f.policy_lines)
    nums = [n for n in re.findall(r"\d+", line) if f.is_public(n)]
    if nums and rng.random() < 0.5:
        n = rng.choice(nums)
        lang = rng.choice(["en", "fr", "de", "es", "ru", "ja"])
        w = forms.WORDS[lang](int(n)) if int(n) < 100000 else n
        para = re.sub(rf"(?<!\d){n}(?!\d)", w, line, count=1)
        return f"Policy (paraphrased, {lang}): “{para}”", [{"value": n, "written": w}]
    return rng.choice(["The policy is explicit: “{}”", "Recall the rule: {}", "> {}"]).format(line), []


def flags(f, rng):
    n = len(f.p0["tool_chain"]) or 1
    codes = rng.sample(sorted(FLAGS), rng.randint(1, 2))
    parts = [f"{c} (step {rng.randint(1, n)}): {FLAGS[c]}" for c in codes]
    return ". ".join(parts) + ".", []


def grade(f, rng):
    g = rng.choice(["0.2", "0.4", "0.6", "0.8"])
    return rng.choice([f"Grade: {g}.", f"**Grade {g} / 1.0**", f"I would put this at {g}."]), []


def cite_opening(f, rng):
    toks = public_tokens(f)
    if not toks:
        return "The opening request names what the user wants; anchor every step to it.", []
    tok = rng.choice(toks)
    kind, w = respell(tok, rng)
    text = rng.choice([
        "The user already gave {w} in the first message, so there is no need to ask again.",
        "Use the identifier the user stated ({w}) instead of searching for it.",
        "Authenticate with what was given up front — {w} — before anything else.",
        "You restate {w} correctly; good.",
    ]).format(w=w)
    return text, [{"value": tok, "written": w}]


def device_settings(f, rng):
    terms = sorted(t for t in rng.sample(DEVICE_TERMS, 4) if t.lower() in f.public)
    if not terms:
        return "Walk the user through the device checks the policy lists.", []
    return ("The policy's troubleshooting guide names settings worth checking (in whatever order the "
            f"symptoms suggest): {', '.join(terms)}."), []


WRITERS = [restate_p0, tools_offered, policy_quote, flags, grade, cite_opening]


def pieces(f, rng, n: int):
    writers = list(WRITERS) + ([device_settings] if f.domain == "telecom" else [])
    chosen = rng.sample(writers, min(n, len(writers)))
    return [w(f, rng) for w in chosen], [w.__name__ for w in chosen]


def assemble(rng, style: str, sentences: list[str]) -> str:
    if style == "bullets":
        return "\n".join(f"{rng.choice(['-', '*', '•'])} {s}" for s in sentences)
    if style == "markdown":
        head = rng.choice(["### Critique", "## Review of p0", "**Assessment**"])
        return head + "\n\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(sentences, 1))
    if style == "json":
        return "```json\n" + json.dumps({"notes": sentences, "verdict": "revise"}, ensure_ascii=False, indent=1) + "\n```"
    if style == "terse":
        return " | ".join(s.rstrip(".") for s in sentences)
    return " ".join(sentences)


def clean_case(f, rng):
    style = rng.choice(STYLES)
    parts, names = pieces(f, rng, rng.randint(3, 5))
    text = assemble(rng, style, [p[0] for p in parts])
    cited = [c for p in parts for c in p[1]]
    return text, f"{'+'.join(sorted(n.split('_')[0] for n in names))}/{style}", cited
