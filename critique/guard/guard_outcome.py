"""What the leak guard found and did to one critique, as records store it.

Apart from the guard itself (``critique.guard.leak_guard``, with its word lists and number readers) so
that the critic's result type, the auditor and the episode graph, which every run imports,
do not load the guard until a guarded critique is made.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class LeakFinding(BaseModel):
    kind: Literal["value", "unseen", "partial", "sequence", "hidden", "name", "pointer", "state", "record", "auditor"]
    text: str = Field(description="The supervision value, the value as read, the leaked call "
                      "sequence, or what the auditor named.")
    written: str = Field(default="", description="How the rationale wrote it.")


class GuardOutcome(BaseModel):
    """What the guard did to one critique; stored in every guarded Refine record."""

    fired: bool = False
    action: Literal["passed", "retried", "redacted", "measured", "replaced"] = Field(
        default="passed", description="passed, retried, redacted (the free-text arm); measured "
        "(a sealed arm: findings recorded, the text unchanged) or replaced (the whole sealed "
        "rationale by its deterministic rendering).")
    findings: list[LeakFinding] = Field(default_factory=list, description="Rules and auditor together.")
    rule_findings: list[LeakFinding] = Field(default_factory=list)
    auditor_findings: list[LeakFinding] = Field(default_factory=list)
    residual: list[LeakFinding] = Field(
        default_factory=list, description="What the auditor still found in the redacted rationale.")
    audited: bool = Field(default=False, description="Whether a leak auditor read the rationale.")
    removed: list[str] = Field(default_factory=list, description="Spans cut by redaction.")
    audit_failed: bool = Field(default=False, description="The auditor gave no answer in its "
                               "schema (a sealed arm records this and keeps the critique).")


def union_findings(a: list[LeakFinding], b: list[LeakFinding]) -> list[LeakFinding]:
    """``a`` and the findings of ``b`` it does not already hold (by kind and text)."""
    seen = {(f.kind, f.text) for f in a}
    return a + [f for f in b if (f.kind, f.text) not in seen]
