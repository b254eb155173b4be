"""The τ³ adapter as its env server runs it, inside the τ³ virtualenv (tau2-bench 1.0.1):

    python -m envs.protocol envs.tau3.adapter:Tau3Adapter

It is the τ² adapter (:class:`envs.tau2.Tau2Environment`: τ²'s orchestrator, user simulator and
evaluator, driven by the runtime's callbacks) running on the release's own code, with what the
release adds: banking_knowledge, whose tools and policy follow a retrieval configuration
(``$EVR_TAU3_RETRIEVAL``) and, for ``golden_retrieval``, the task; its environments are built
with the keyword arguments ``tau2 run`` builds them with (``tau2.runner.build``), for play and
for the evaluator alike. τ²'s shared-DB cache (``envs.tau2.db_cache``) is not installed: the
release's environments are τ³'s own, unpatched.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from types import SimpleNamespace
from typing import Any, Optional

from envs.base import JudgeTurn, Score, Supervision, TaskView, Trajectory, UnknownTaskError, UserTurn
from envs.tau2 import Tau2Environment, episode, tasks
from envs.tau3 import embeddings, nl_judge, retrieval

RETRIEVAL_VAR = "EVR_TAU3_RETRIEVAL"


class Tau3Adapter(Tau2Environment):
    """τ³-bench (tau2-bench 1.0.1): airline, retail, telecom, mock, banking_knowledge."""

    name = "tau3"

    def __init__(self, retrieval_config: str | None = None) -> None:
        # No db_cache.install(): the cache knows τ²'s DB layouts, not banking's TransactionalDB.
        tasks.serve_as("τ³-bench", remember_catalogue=False)
        self.retrieval = retrieval.check(retrieval_config or os.environ.get(RETRIEVAL_VAR) or None,
                                         retrieval.DOMAIN, embeddings=embeddings.wanted())
        from tau2.domains.banking_knowledge.retrieval import get_all_variant_names

        if self.retrieval not in get_all_variant_names():
            raise UnknownTaskError(f"this tau2 release has no retrieval configuration {self.retrieval!r}")

    def connect(self, connection: Any) -> None:
        """The server's connection: when started to (``$EVR_TAU3_EMBEDDINGS``), the release's
        embedders get their vectors from the runtime through it (:mod:`envs.tau3.embeddings`)."""
        if embeddings.wanted():
            embeddings.answer_with(connection.embed_turn)

    def server_info(self) -> dict[str, Any]:
        """What the runtime records: the release, each domain's task set, the retrieval."""
        model, options = nl_judge.release_judge()
        return {"task_sets": {d: tasks.task_set(d) for d in self.domains()},
                "retrieval": self.retrieval, "nl_judge": {"model": model, "options": options}}

    def task_set(self, domain: str) -> dict:
        return tasks.task_set(domain)

    # -- environments built the way ``tau2 run`` builds them ----------------------------------

    def env_kwargs(self, domain: str, task) -> dict:
        """``tau2 run``'s own keyword arguments for the domain's environment constructor."""
        if domain != retrieval.DOMAIN:
            return {}
        from tau2.runner.build import _build_env_kwargs

        config = SimpleNamespace(retrieval_config=self.retrieval, retrieval_config_kwargs=None,
                                 domain=domain)
        return _build_env_kwargs(config, task)

    def _task_env(self, domain: str, task):
        from tau2.registry import registry

        return registry.get_env_constructor(domain)(**self.env_kwargs(domain, task))

    def load(self, domain: str, task_id: str) -> tuple[TaskView, Supervision]:
        task = tasks.task(domain, task_id)
        if domain != retrieval.DOMAIN:
            policy, schemas = tasks.policy_and_tools(domain)
            return tasks.split_task(domain, task, policy, schemas, env=self.name)
        env = self._task_env(domain, task)
        schemas = [t.openai_schema for t in env.get_tools()]
        return tasks.split_task(domain, task, env.get_policy(), schemas, env=self.name,
                                retrievable=self._retrievable())

    def _retrievable(self) -> str:
        """The knowledge base as the agent's search tools can show it (nothing when it has none)."""
        if self.retrieval not in retrieval.SEARCHES:
            return ""
        return knowledge_text()

    def task_info(self, domain: str, task_id: str) -> dict[str, Any]:
        task = tasks.task(domain, task_id)
        return {"task_set": tasks.task_set(domain),
                "retrieval": self.retrieval if domain == retrieval.DOMAIN else None,
                "required_documents": list(getattr(task, "required_documents", None) or [])}

    def opening_request(self, domain: str, task_id: str, user: UserTurn, seed: int) -> str:
        task = tasks.task(domain, task_id)
        env = self._task_env(domain, task) if domain == retrieval.DOMAIN else tasks.reference_env(domain)
        return episode.opening_request(env, task, user)

    def play(self, domain, task_id, opening_request, agent, user, seed, max_steps) -> Trajectory:
        task = episode.with_opening(tasks.task(domain, task_id), opening_request)
        own = domain == retrieval.DOMAIN
        env = self._task_env(domain, task) if own else self._env(domain)
        trajectory = episode.play(domain, task, env, agent, user, seed, max_steps, own_tools=own)
        trajectory.native["opening_request"] = opening_request
        return trajectory

    def score(self, domain: str, task_id: str, trajectory: Trajectory,
              judge: Optional[JudgeTurn] = None) -> Score:
        """The release's evaluator. NL assertions are graded by τ³'s own LLM judge
        (:mod:`envs.tau3.nl_judge`) whose completion ``judge`` — the runtime's model layer —
        answers. Without one, a task whose reward includes them is scored on its other
        components, and the score says so (``NL_ASSERTION: None``, ``info.ungraded``)."""
        task = episode.with_opening(tasks.task(domain, task_id), trajectory.native["opening_request"])
        criteria = task.evaluation_criteria
        basis = criteria.reward_basis if criteria else []
        asserted = bool(criteria and getattr(criteria, "nl_assertions", None))  # none: nothing to judge
        ungraded = [b for b in basis if getattr(b, "value", b) == NL] if judge is None and asserted else []
        if ungraded:
            task = task.model_copy(deep=True)
            task.evaluation_criteria.reward_basis = [b for b in criteria.reward_basis if b not in ungraded]
        with nl_judge.answered_by(judge) if judge is not None else nullcontext():
            score = episode.score(domain, task, trajectory, env_kwargs=self.env_kwargs(domain, task))
        if ungraded:
            score.breakdown[NL] = None
            score.info["ungraded"] = [NL]
        return score


NL = nl_judge.NL


@tasks.once_per_process
def knowledge_text() -> str:
    from tau2.domains.banking_knowledge.environment import get_knowledge_base

    kb = get_knowledge_base()
    docs = getattr(kb, "documents", None) or {}
    items = docs.values() if isinstance(docs, dict) else docs
    return "\n\n".join(f"{d.id}\n{d.title}\n{d.content}" for d in items)
