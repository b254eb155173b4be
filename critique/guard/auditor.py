"""The leak auditor: a model that reads the supervision and a rationale and names the spans
that reveal it — the semantic second line behind the rule-based guard.

Rules catch values and sequences in any spelling; a paraphrase of what the reference intends
needs a reader. On the free-text arm its spans are handled like rule findings (the critic
retries, then they are redacted), and it reads the redacted rationale once more so a run
records the leaks that are left (residual); on a sealed arm it only measures. Its model is the ``auditor_model`` role (default: the judge's).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from critique.bounded_json import OutsideSchema, validated
from critique.guard.guard_outcome import LeakFinding
from envs.base import Supervision
from evrcore.chat import ChatModel
from evrcore.prompts import render

AUDIT_JSON_SCHEMA = {
    "type": "object",
    "properties": {"leaks": {"type": "array", "items": {"type": "string"}}},
    "required": ["leaks"],
    "additionalProperties": False,
}


AUDIT_CHARS = 64_000
"""Quoted spans of one rationale: an answer far longer is outside the schema unread."""


class AuditAnswer(BaseModel):
    leaks: list[str] = Field(default_factory=list)


class LeakAuditor:
    def __init__(self, model: ChatModel, attempts: int = 2):
        self.model = model
        self.attempts = attempts

    def audit(self, supervision: Supervision, rationale: str) -> list[LeakFinding]:
        """The spans of ``rationale`` the auditor says reveal the supervision. Spans that do not
        occur in the rationale are dropped (a model may paraphrase instead of quoting); an
        auditor that never answers in the schema finds nothing, and says so by raising."""
        prompt = render("critique", "auditor", reference=supervision.render(), rationale=rationale)
        messages = [{"role": "user", "content": prompt}]
        error: Exception | None = None
        for _ in range(self.attempts):
            reply = self.model.complete(messages, json_schema=AUDIT_JSON_SCHEMA)
            try:  # bounded, and a refusal names the rule, never the auditor's strings
                answer = validated(AuditAnswer, reply.content, max_chars=AUDIT_CHARS, max_depth=2)
            except OutsideSchema as exc:
                error = exc
                messages += [reply.as_message(), {"role": "user", "content":
                             'Answer with exactly one JSON object {"leaks": ["<exact span>", ...]}.'}]
                continue
            spans = [s.strip() for s in answer.leaks if s and s.strip()]
            return [LeakFinding(kind="auditor", text=s, written=s) for s in spans
                    if len(s) >= 3 and s.lower() in rationale.lower()]
        raise AuditorError(f"the leak auditor gave no valid answer: {error}")


class AuditorError(RuntimeError):
    """The auditor never answered in its schema."""
