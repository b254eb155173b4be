"""What every environment gives the runtime, and the one boundary that matters.

A task is split into two objects that are kept apart by type:

* :class:`TaskView` — what the tested model may see (policy, tools, opening request).
* :class:`Supervision` — what only the critic and the judge may see (reference actions,
  expected outcomes, the simulated user's hidden instructions).

Functions that talk to the tested model take a ``TaskView`` and never a ``Supervision``.

An environment drives its own benchmark loop (orchestrator, user simulator, evaluator) and
calls back into the runtime for model turns through two plain callables, :data:`AgentTurn`
and :data:`UserTurn`, that speak OpenAI-style chat dicts.  Because the callbacks carry only
JSON-shaped data, the same contract can cross a process or container boundary.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

ChatMessage = dict[str, Any]
"""An OpenAI-style chat message: ``{"role", "content", "tool_calls"?, "tool_call_id"?}``."""

ToolSchema = dict[str, Any]
"""An OpenAI function-tool schema: ``{"type": "function", "function": {"name", ...}}``."""

AgentTurn = Callable[[list[ChatMessage], list[ToolSchema]], ChatMessage]
"""The executor, as the environment sees it: conversation so far → next assistant message."""

UserTurn = Callable[[str, list[ChatMessage], list[ToolSchema] | None], ChatMessage]
"""The simulated user: (its system prompt, conversation from its side, its tools) → message."""

Embed = Callable[[str, list[str]], list[list[float]]]
"""Embeddings a benchmark's own retrieval asks for, answered by the runtime: (the embedding
model the benchmark names, the texts) → one vector per text (τ³ banking's dense search)."""

JudgeTurn = Callable[[str, list[ChatMessage], dict], ChatMessage]
"""A benchmark's own LLM judge, answered by the runtime: (the model the benchmark names, the
messages the benchmark's evaluator built, its sampling options) → the judge's reply. τ³ grades
NL assertions this way; the prompt and the verdict's parsing stay the benchmark's."""


class TaskView(BaseModel):
    """Task-facing view: everything the planner, reviser and executor may see."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    env: str
    domain: str
    task_id: str
    policy: str = Field(description="System prompt / domain policy given to the agent.")
    instructions: str = Field(
        default="",
        description="The benchmark's own agent instruction (τ²'s AGENT_INSTRUCTION); the executor "
        "puts it before the policy. Empty: the executor's neutral default.",
    )
    system_prompt: str | None = Field(
        default=None,
        description="The benchmark's own agent system prompt, sent as it is (ToolSandbox: the "
        "scenario's system message, as its OpenAI agent sends it). None: the executor builds "
        "τ²'s ``<instructions>``/``<policy>`` prompt from ``instructions`` and ``policy``.",
    )
    tools: list[ToolSchema] = Field(description="The agent's tool schemas (OpenAI format).")
    opening_request: str | None = Field(
        default=None,
        description="The user's request as the agent sees it when it plans. Filled in by the "
        "runtime once per (task, trial) so every mode sees the same words.",
    )
    categories: list[str] = Field(default_factory=list)
    retrievable: str = Field(
        default="",
        description="What the agent can look up with its tools beyond the policy (τ³ banking's "
        "knowledge base under a search configuration): public for the leak guard, since a value "
        "the agent can retrieve is no secret, but never put into a model's prompt as such.",
    )

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools]

    def text(self) -> str:
        """Everything in the view as one string (what the leak guard treats as public)."""
        return "\n".join(
            [self.instructions, self.policy, json.dumps(self.tools, sort_keys=True),
             self.opening_request or ""]
        )


class ReferenceAction(BaseModel):
    """One step of the reference solution."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    requestor: str = "assistant"

    def render(self) -> str:
        args = ", ".join(f"{k}={json.dumps(v)}" for k, v in self.arguments.items())
        who = "" if self.requestor == "assistant" else f" [by {self.requestor}]"
        return f"{self.name}({args}){who}"


class Supervision(BaseModel):
    """Evaluator-only knowledge of a task. Only the critic and the plan judge receive it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    reference_actions: list[ReferenceAction] = Field(default_factory=list)
    expected_outcomes: list[str] = Field(
        default_factory=list,
        description="Outcome checks in words: information to communicate, env assertions, "
        "milestones and minefields.",
    )
    hidden_user_instructions: str = ""
    records: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Database records around the reference, as the task's initial database holds "
        "them: each ``{table, id, acted_on, owner?, record}``. ``acted_on``: a reference action names "
        "it by identifier; the others are what lists it (the user whose orders they are), its "
        "siblings in that list and the product a variant belongs to. For the leak guard, which "
        "resolves a phrase that picks out one record ('the most recent order', 'the cheapest "
        "variant', 'the cancelled reservation') against them. Never rendered for a model.",
    )

    def render(self) -> str:
        """A readable block for the critic and the judge."""
        parts = []
        if self.reference_actions:
            steps = "\n".join(
                f"{i}. {a.render()}" for i, a in enumerate(self.reference_actions, 1)
            )
            parts.append(f"Reference actions:\n{steps}")
        if self.expected_outcomes:
            parts.append("Expected outcomes:\n" + "\n".join(f"- {o}" for o in self.expected_outcomes))
        if self.hidden_user_instructions:
            parts.append(f"The user's hidden instructions:\n{self.hidden_user_instructions}")
        return "\n\n".join(parts) or "(no supervision)"

    def reference_values(self) -> set[str]:
        """Every scalar that appears in the reference actions and outcome checks."""
        values: set[str] = set()
        for action in self.reference_actions:
            values.update(scalar_values(action.arguments))
        for outcome in self.expected_outcomes:
            values.update(_quoted_or_coded(outcome))
        return {_canonical(v) for v in values}

    def supervision_only_values(self, view: TaskView) -> set[str]:
        """Reference values that the tested model cannot have read in its view.

        These are what must never reach the planner, reviser or executor through the critic.
        Trivial values (booleans, one- or two-character strings, small integers) are left
        out because they occur everywhere.
        """
        public = view.text().lower()
        out = set()
        for value in self.reference_values():
            if _is_trivial(value):
                continue
            if value.lower() in public:
                continue
            out.add(value)
        return out


def scalar_values(obj: Any) -> Iterable[str]:
    """Every scalar inside nested arguments, as text (``1270.0`` → ``1270``; booleans and
    ``None`` name nothing)."""
    if isinstance(obj, dict):
        for v in obj.values():
            yield from scalar_values(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from scalar_values(v)
    elif isinstance(obj, bool) or obj is None:
        return
    elif isinstance(obj, float) and obj.is_integer():
        yield str(int(obj))
    else:
        yield str(obj)


_CODE = re.compile(r"\b(?=[A-Za-z0-9_#-]*\d)[A-Za-z0-9_#][A-Za-z0-9_#.-]{3,}\b")


def _quoted_or_coded(text: str) -> Iterable[str]:
    """Values inside free-text outcome checks: numbers, ids and codes (tokens with a digit)."""
    for match in _CODE.finditer(text):
        yield match.group(0).rstrip(".")


def _canonical(value: str) -> str:
    """One spelling per number ('1270.50' and '1270.5' are the same amount)."""
    try:
        number = float(value.replace(",", ""))
    except ValueError:
        return value
    if not re.fullmatch(r"-?[\d,]+(\.\d+)?", value):
        return value  # keep codes such as '1e5' or 'nan' as written
    return str(int(number)) if number.is_integer() else repr(number)


def _is_trivial(value: str) -> bool:
    v = value.strip()
    if len(v) < 3:
        return True
    try:
        return abs(float(v)) < 10
    except ValueError:
        return False


class Trajectory(BaseModel):
    """What an environment returns from playing one episode: the conversation, how it ended,
    and the benchmark-native record its scorer needs (JSON, so it can cross a process)."""

    model_config = ConfigDict(extra="forbid")

    messages: list[ChatMessage] = Field(default_factory=list)
    termination: str
    turns: int
    native: dict[str, Any] = Field(default_factory=dict)


class Score(BaseModel):
    """The benchmark's own verdict on a trajectory (τ² reward, ToolSandbox similarity)."""

    model_config = ConfigDict(extra="forbid")

    value: float
    name: str
    breakdown: dict[str, Any] = Field(default_factory=dict)
    info: dict[str, Any] = Field(default_factory=dict)


class TaskSelection(BaseModel):
    """How a user picks tasks: explicit ids, or a seeded sample of a split."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    domain: str
    split: str | None = None
    ids: list[str] | None = None
    count: int | None = None
    seed: int = 0


@runtime_checkable
class Environment(Protocol):
    """A benchmark the runtime can run episodes in."""

    name: str

    def domains(self) -> list[str]: ...

    def select(self, selection: TaskSelection) -> list[str]:
        """Task ids for a selection; raises :class:`UnknownTaskError` for bad ids/splits."""
        ...

    def load(self, domain: str, task_id: str) -> tuple[TaskView, Supervision]:
        """The two halves of one task. ``view.opening_request`` is still empty."""
        ...

    def opening_request(self, domain: str, task_id: str, user: UserTurn, seed: int) -> str:
        """The user's first message, obtained the benchmark's way (e.g. from its simulator)."""
        ...

    def play(
        self,
        domain: str,
        task_id: str,
        opening_request: str,
        agent: AgentTurn,
        user: UserTurn,
        seed: int,
        max_steps: int,
    ) -> Trajectory:
        """Play one episode with the benchmark's own loop, from the fixed opening request."""
        ...

    def score(self, domain: str, task_id: str, trajectory: Trajectory) -> Score:
        """Score a trajectory with the benchmark's own evaluator."""
        ...

    def capture_logs(self, folder: Path, scrub: Callable[[str], str] | None = None) -> None:
        """Keep the logs of whatever serves this environment (env servers, containers) in
        ``folder`` (the run folder's), passed through ``scrub`` (the runtime's secret scrubber:
        environments cannot import it) before they are written; a no-op where nothing runs
        outside this process."""
        ...

    def close(self) -> None:
        """Release what the environment holds (server processes, containers). Idempotent; the
        CLI calls it at the end of a run and on Ctrl-C."""
        ...


class EnvError(Exception):
    """Base for environment errors that the CLI turns into a one-line message."""


class TurnRefused(Exception):
    """The runtime refused a model turn because the episode reached one of its limits (tokens,
    cost, time). Not a failure: the environment ends its play there, as it ends an episode out
    of steps, with ``termination`` as the trajectory's termination, and scores it as it scores
    any unfinished episode."""

    def __init__(self, termination: str, detail: str = ""):
        super().__init__(detail or termination)
        self.termination = termination


class UnknownTaskError(EnvError, ValueError):
    """A domain, split or task id the environment does not have."""
