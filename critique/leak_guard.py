"""The leak guard: the critic's rationale must not carry what only the supervision knows.

The critic sees the hidden reference, so its rationale is checked for supervision-only content
before the reviser (the tested model) reads it:

* reference values — IDs, dates, amounts, codes that appear in the reference actions or outcome
  checks but nowhere in the task view (``Supervision.supervision_only_values``);
* the reference call sequence — a run of ``min_sequence`` consecutive reference tool calls
  named in the same order.

What it finds is reported; the critic retries, and what still leaks after that is redacted.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from envs.base import Supervision, TaskView

REDACTED = "[redacted]"

_NUMBER = re.compile(r"(?<![\w.])-?\$?\d[\d,]*(?:\.\d+)?(?![\w])")


class LeakFinding(BaseModel):
    kind: Literal["value", "sequence"]
    text: str = Field(description="The supervision-only value, or the leaked call sequence.")


class GuardOutcome(BaseModel):
    """What the guard did to one critique; stored in every Refine record."""

    fired: bool = False
    action: Literal["passed", "retried", "redacted"] = "passed"
    findings: list[LeakFinding] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list, description="Spans cut by redaction.")


class LeakGuard:
    def __init__(self, view: TaskView, supervision: Supervision, min_sequence: int = 3):
        self.values = sorted(supervision.supervision_only_values(view), key=len, reverse=True)
        names: list[str] = []
        for action in supervision.reference_actions:
            if not names or names[-1] != action.name:
                names.append(action.name)
        self.sequence = names
        self.window = min(len(names), min_sequence)

    # -- detection -----------------------------------------------------------------------
    def scan(self, text: str) -> list[LeakFinding]:
        findings = [LeakFinding(kind="value", text=v) for v in self.values if self._value_spans(text, v)]
        window = self._sequence_window(text)
        if window:
            findings.append(LeakFinding(kind="sequence", text=" → ".join(window)))
        return findings

    def _value_spans(self, text: str, value: str) -> list[tuple[int, int]]:
        number = _as_number(value)
        if number is not None:
            return [
                m.span()
                for m in _NUMBER.finditer(text)
                if _as_number(m.group(0)) == number
            ]
        pattern = re.compile(r"(?<![A-Za-z0-9])" + re.escape(value) + r"(?![A-Za-z0-9])", re.I)
        return [m.span() for m in pattern.finditer(text)]

    def _mentions(self, text: str) -> list[tuple[int, str]]:
        found = []
        for name in set(self.sequence):
            for m in re.finditer(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])", text):
                found.append((m.start(), name))
        return sorted(found)

    def _sequence_window(self, text: str) -> list[str] | None:
        if self.window < 2:
            return None
        mentioned = [name for _, name in self._mentions(text)]
        for start in range(len(self.sequence) - self.window + 1):
            window = self.sequence[start : start + self.window]
            if _is_subsequence(window, mentioned):
                return window
        return None

    # -- redaction -----------------------------------------------------------------------
    def redact(self, text: str) -> tuple[str, list[str]]:
        """The text with every leaked span replaced by ``[redacted]``, and the spans removed."""
        spans: list[tuple[int, int]] = []
        for value in self.values:
            spans += self._value_spans(text, value)
        window = self._sequence_window(text)
        if window:
            # Keep the first named step; cut the later ones so the order is no longer told.
            later = set(window[1:])
            spans += [
                (pos, pos + len(name)) for pos, name in self._mentions(text) if name in later
            ]
        spans = _merge(spans)
        removed = [text[a:b] for a, b in spans]
        for a, b in reversed(spans):
            text = text[:a] + REDACTED + text[b:]
        return text, removed


def _as_number(text: str) -> float | None:
    cleaned = text.replace(",", "").replace("$", "").strip()
    if not re.fullmatch(r"-?\d+(?:\.\d+)?", cleaned):
        return None
    return float(cleaned)


def _is_subsequence(needle: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(any(x == h for h in it) for x in needle)


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged
