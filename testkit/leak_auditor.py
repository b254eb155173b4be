"""A scripted leak auditor: a stand-in for an auditor model in the offline suite and the controls.

``overlap_auditor`` is a stand-in for an auditor model, honest about what it is: it names each
sentence of the critique that shares a code (a token with a digit) or three or more long words
with the hidden reference. It lets the offline suite and the controls exercise the auditor's
plumbing (retry, redaction, residual findings); it is no measure of a model's judgement.
"""

from __future__ import annotations

import json
import re
from typing import Any

from testkit.scripted import text

_STOP = {"should", "would", "could", "their", "there", "which", "about", "after", "before",
         "agent", "critique", "reference", "hidden", "before", "reveals", "first", "then"}


def _words(s: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Za-z]{6,}", s)} - _STOP


def _codes(s: str) -> set[str]:
    return {re.sub(r"[^a-z0-9]", "", t.lower()) for t in re.findall(r"[\w#-]*\d[\w#-]*", s) if len(t) >= 4}


def overlap_auditor(request: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    prompt = request["messages"][0]["content"]
    reference = prompt.split("<hidden_reference>", 1)[1].split("</hidden_reference>", 1)[0]
    critique = prompt.split("<critique>", 1)[1].split("</critique>", 1)[0].strip()
    reference = re.sub(r"\b\w+\(", "(", reference)  # tool names are offered to the agent: not secrets
    ref_words, ref_codes = _words(reference), _codes(reference)
    leaks = []
    for sentence in re.findall(r"[^.!?\n]+[.!?]?", critique):
        s = sentence.strip()
        if (_codes(s) & ref_codes) or len(_words(s) & ref_words) >= 3:
            leaks.append(s)
    return text(json.dumps({"leaks": leaks}))
