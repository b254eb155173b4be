"""One record per (env, domain, task, mode, tested model, trial): everything a report needs.

Records are the unit of resumption: a finished record is never run again under the same run id.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat

MODES = ("direct", "plan-first", "refine")
AA_MODE = "plan-first-aa"
"""Plan-first run a second time with independent trial seeds (its own opening requests and p0):
the A/A arm, whose Δ against Plan-first is the run's measured noise floor. Never part of "all"."""
RECORD_MODES = (*MODES, AA_MODE)
RECORD_VERSION = 2
"""The shape and meaning of a record; part of a run's settings fingerprint (``runtime.compose.fingerprint``)."""
BAD_ANSWER = ("unparsable_tool_call", "empty_reply")
"""Flags of an answer that failed validation: it is never cached (``runtime.llm.layer``), and
``--retry-errors`` runs an episode that carries one again (``runtime.batch``)."""
Mode = Literal["direct", "plan-first", "refine", "plan-first-aa"]


class EpisodeKey(BaseModel):
    model_config = ConfigDict(frozen=True)

    env: str
    domain: str
    task_id: str
    mode: Mode
    model: str
    trial: int
    strategy: str = Field(default="", description="Critique strategy (refine only).")

    def id(self) -> str:
        parts = [self.env, self.domain, self.task_id, self.mode, self.model, str(self.trial)]
        return "|".join(parts + ([self.strategy] if self.strategy else []))


class StageError(BaseModel):
    stage: str
    type: str
    message: str
    kind: str | None = Field(
        default=None,
        description="infrastructure / model_output / internal (runtime.episode.failures); absent in "
        "records written before kinds were recorded.",
    )
    cause: str | None = Field(
        default=None,
        description="What was seen, a row of runtime.episode.failures.CAUSES (http_4xx, http_5xx, "
        "timeout, connection, ...); absent in records written before causes were recorded.")


class Attempt(BaseModel):
    """One run of an episode, kept when it ran more than once (its Ray worker or node was lost
    under it): what that run cost, so a lost attempt's paid calls stay counted."""

    number: int
    ended: Literal["lost", "finished"]
    id: str | None = Field(default=None, description="A lost attempt's own id "
                           "(runtime.folder.lost_attempts): it is counted once, in one place.")
    reason: str | None = Field(default=None, description="Why a lost attempt ended (Ray's error).")
    worker: str | None = Field(default=None, description="worker index@node id:pid that ran it.")
    calls: int = 0
    cached_calls: int = 0
    in_flight_calls: int = Field(
        default=0, description="Calls sent but not answered before the loss: the endpoint may "
        "have served (and billed) them; their tokens and cost are unknown.")
    in_flight_cost_usd: float = Field(
        default=0.0, description="Those calls' cost as estimated from their requests "
        "(runtime.llm.estimate.call_estimate): counted by --max-cost, not in cost_usd.")
    at_least: bool = Field(
        default=False, description="The counts may be short: they are the last reading of a ledger "
        "lost after it (the Ray head's), and calls sent since are not known.")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class EpisodeRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str
    key: EpisodeKey
    record_id: str
    status: Literal["ok", "error"]
    seed: int
    opening_request: str | None = None
    p0: dict[str, Any] | None = Field(default=None, description="APB plan + unknown_tools flag.")
    critique: dict[str, Any] | None = None
    guard: dict[str, Any] | None = Field(default=None, description="Leak-guard outcome for the critique.")
    critique_note: str | None = Field(
        default=None, description="What the verdict rule (evrcore.verdict) settled in the critique: "
        "a grade that contradicted its flags after the critic's last attempt.")
    channel: dict[str, Any] | None = Field(
        default=None, description="The sealed critique's channel (critique.sealed.ChannelUse): its "
        "findings and capacity in bits, max and used; absent for the other strategies.")
    provenance: dict[str, Any] | None = Field(
        default=None, description="Provenance audit (critique.provenance): supervision-only values the "
        "agent used without having observed them; absent in records written before it existed.")
    p1: dict[str, Any] | None = None
    judge_p0: dict[str, Any] | None = Field(default=None, description="APB plan judgement of p0.")
    judge_p1: dict[str, Any] | None = Field(default=None, description="APB plan judgement of p1.")
    score: StrictFloat | None = Field(
        default=None, description="The benchmark's score: a number (a string such as \"1.0\" "
        "is refused: the line is named and not counted).")
    score_name: str | None = None
    breakdown: dict[str, Any] = Field(default_factory=dict)
    termination: str | None = None
    turns: int | None = None
    messages: list[dict[str, Any]] = Field(default_factory=list)
    score_info: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, Any] = Field(default_factory=dict)
    timings_s: dict[str, float] = Field(default_factory=dict)
    reused: list[str] = Field(
        default_factory=list, description="Shared artifacts this episode read rather than made."
    )
    error: StageError | None = None
    malformed: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="Malformed model output by purpose and kind (unparsable_tool_call, "
        "empty_reply, truncated) with counts; empty when every answer was well formed.")
    flags: list[str] = Field(
        default_factory=list, description="The kinds of malformed output seen in this episode.")
    finish_reasons: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="The providers' own finish reasons that were not ordinary ones "
        "(MALFORMED_FUNCTION_CALL, SAFETY, length, ...) by purpose, with counts, retried "
        "answers included; empty when every answer ended normally.")
    fingerprint: str | None = Field(
        default=None, description="The id of the settings the episode was made with (run.json "
        "holds them, runtime.compose.fingerprint); absent in records written before fingerprints.")
    started_at: str
    finished_at: str
    attempts: list[Attempt] = Field(
        default_factory=list,
        description="Every run of the episode when there was more than one (a lost Ray worker or "
        "node), the last being this record's; ``usage`` counts the last only, ``lost_spend`` the "
        "others. Empty when the episode ran once.")
    digest: str | None = Field(
        default=None, description="SHA-256 of the record's canonical JSON without this field "
        "(runtime.folder.integrity), set when the line is written; absent in records written "
        "before digests.")


SCORE_RANGES = {"reward": (0.0, 1.0), "similarity": (0.0, 1.0)}
"""Each environment's score by its name, and where it lies: τ² and τ³ reward (a product of
components in [0, 1]), ToolSandbox similarity. A record whose score is outside it was not
written by the runtime; a score of another name (a synthetic benchmark's) need only be finite."""


def score_problem(record: EpisodeRecord) -> str | None:
    """Why ``record``'s score cannot be counted, whatever its digest says (a resealed edit, a
    bug): NaN, infinite, outside its environment's range (``SCORE_RANGES``), or missing from an
    ``ok`` episode; None when it is sound (an errored episode has none)."""
    score = record.score
    if score is None:
        return "score: missing from an ok episode" if record.status == "ok" else None
    if math.isnan(score):
        return "score: NaN, not a number"
    low, high = SCORE_RANGES.get(record.score_name or "", (-math.inf, math.inf))
    if math.isinf(score) or not low <= score <= high:
        return f"score: {score!r} is outside the environment's range [{low:g}, {high:g}]"
    return None


def lost_attempts(record: EpisodeRecord) -> list[Attempt]:
    return [a for a in record.attempts if a.ended == "lost"]


def in_flight_words(calls: int, cost_usd: float) -> str:
    """`` (1 in flight when lost, ≈$0.0003 by their requests)``, or ``""`` when none was: a call in
    flight has no answer, so no known price; it is shown at its request's estimate, never in the cost."""
    return f" ({calls} in flight when lost, ≈${cost_usd:.4f} by their requests)" if calls else ""


def lost_spend(record: EpisodeRecord) -> tuple[int, float]:
    """(calls, cost in USD) of the record's lost attempts: paid, though no result came of them
    (calls in flight at the loss included; their cost is unknown, so not in the sum)."""
    lost = lost_attempts(record)
    return (sum(a.calls + a.in_flight_calls for a in lost), sum(a.cost_usd for a in lost))
