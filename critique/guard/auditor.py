"""The leak auditor: a model that reads the supervision and a rationale and names the spans
that reveal it — the semantic second line behind the rule-based guard.

Rules catch values and sequences in any spelling; a paraphrase of what the reference intends
needs a reader. The auditor's spans are handled like rule findings (the critic retries, then
they are redacted), and it reads the redacted rationale once more so a run records the leaks
that are left (residual). Its model is the ``auditor_model`` role (default: the judge's).
"""

from __future__ import annotations

from pydantic import BaseModel, Field, ValidationError

from critique.guard.guard_outcome import LeakFinding
from envs.base import Supervision
from evrcore.chat import ChatModel, extract_json
from evrcore.prompts import render

AUDIT_JSON_SCHEMA = {
    "type": "object",
    "properties": {"leaks": {"type": "array", "items": {"type": "string"}}},
    "required": ["leaks"],
    "additionalProperties": False,
}


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
            try:
                answer = AuditAnswer.model_validate(extract_json(reply.content))
            except (ValueError, ValidationError) as exc:
                error = exc
                messages += [reply.as_message(), {"role": "user", "content":
                             'Answer with exactly one JSON object {"leaks": ["<exact span>", ...]}.'}]
                continue
            spans = [s.strip() for s in answer.leaks if s and s.strip()]
            return [LeakFinding(kind="auditor", text=s, written=s) for s in spans
                    if len(s) >= 3 and s.lower() in rationale.lower()]
        raise AuditorError(f"the leak auditor gave no valid answer: {' '.join(str(error).split())[:300]}")


class AuditorError(RuntimeError):
    """The auditor never answered in its schema."""
