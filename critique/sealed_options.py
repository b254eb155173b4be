"""How a sealed critique is made: who words the rationale, how many findings the critic may
give, and whether the guard and the auditor may act on the sealed text.

Apart from ``critique.sealed`` so that the settings (``runtime.compose.config``), the run spec
and the fingerprint can name them without importing the critic.

* ``writer``: ``rendered`` (the default) words the canonical answer deterministically, from p0's
  own step names and the closed definitions of flags and aspects, with no model call: the text
  the reviser reads is a function of the counted answer and p0 alone. ``tested``: the tested
  model's own model writes it from the same inputs (no party beyond the reviser itself). There
  is no value naming the critic's model: a writer that can share a code with the critic is no
  option.
* ``findings``: at most this many findings per answer (0..6); the capacity in bits grows with it
  (``critique.channel``; the guide's table).
* ``guard``: ``measure`` (the default): the rules and the auditor read the sealed text and their
  findings are recorded, the text is never changed. ``replace``: where either would have fired,
  the *whole* rationale is replaced by the deterministic rendering; that choice is one more bit
  of capacity (counted where the writer is a model; with ``rendered`` both sides are the same
  text).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_FINDINGS = 6
"""The schema's ceiling: one finding per flag."""

DEFAULT_FINDINGS = 2
"""Two findings: room for the plan's main defect and one more, at most 25 bits on a five-step
p0 — too few to carry a six-character ID (31 bits) whole (the guide's table)."""

WRITERS = ("rendered", "tested")
GUARD_ACTIONS = ("measure", "replace")


class SealedOptions(BaseModel):
    """The sealed strategy's options, as a run spec and each record carry them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    writer: Literal["rendered", "tested"] = "rendered"
    findings: int = Field(default=DEFAULT_FINDINGS, ge=0, le=MAX_FINDINGS)
    guard: Literal["measure", "replace"] = "measure"

    @property
    def choice_bits(self) -> int:
        """Bits the guard's choice adds to the capacity: one where it may replace a model's text."""
        return 1 if self.guard == "replace" and self.writer != "rendered" else 0
