"""The episode state machine: a LangGraph ``StateGraph`` whose edges the mode selects.

    direct      prepare ───────────────────────────────────────────────────► execute → score
    plan-first  prepare → plan → [judge_p0] ───────────────────────────────► execute → score
    refine      prepare → plan → [judge_p0] → critique → revise → [judge_p1] → execute → score

``prepare`` fixes the opening request once per (task, user model, trial) and ``plan`` makes p0
once per (task, tested model, planner, trial): both are shared artifacts (``artifacts``), so
Plan-first and Refine execute from the same opening and revise the same p0. A node never writes
the run folder: what it made goes into the state's ``made``, and comes back with the record.
Only ``critique`` (for the strategies that see it) and the optional plan judge touch the
``Supervision``; the planner, reviser and executor nodes are handed the ``TaskView`` alone.
A node that fails puts a ``StageError`` in the state and the graph ends there; one refused by the
episode's limits (``runtime.episode.limits``) puts the limit there and the graph goes on to
``execute``, whose environment ends the play unfinished. The graph is compiled once per process;
an episode's own settings travel as LangGraph's runtime context.
"""

from __future__ import annotations

import hashlib
import operator
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any, Callable, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from critique.guard.auditor import LeakAuditor
from critique.critic import CriticResult
from critique.judge import JudgeResult, PlanJudge
from critique.reference import reference_plan
from critique.sealed_options import SealedOptions
from critique.strategies import Strategy
from envs.base import Environment, Score, Supervision, TaskView, Trajectory
from planners.base import Planner
from evrcore.chat import ChatModel
from evrcore.plan import Plan
from runtime.episode.artifacts import JUDGE_INPUTS, Artifact, ArtifactMemo, judge_inputs_key
from runtime.episode.executor import Executor
from runtime.episode.limits import EpisodeLimits, LimitedClient, LimitReached
from runtime.episode.simulated_user import SimulatedUser
from runtime.episode.failures import classify
from runtime.llm.layer import Meter, ModelLayer
from runtime.llm.roles import PURPOSES, critique_purpose
from runtime.folder.records import AA_MODE, EpisodeKey, StageError

PlannerFactory = Callable[[ChatModel], Planner]


def _merge(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    return {**a, **b}


class EpisodeState(TypedDict, total=False):
    view: TaskView
    supervision: Supervision
    p0: Plan
    critic: CriticResult
    p1: Plan
    judge_p0: JudgeResult
    judge_p1: JudgeResult
    trajectory: Trajectory
    score: Score
    error: StageError
    limit: str
    reused: Annotated[list[str], operator.add]
    made: Annotated[list[Artifact], operator.add]
    timings: Annotated[dict[str, float], _merge]


@dataclass
class EpisodeContext:
    """Everything an episode's nodes need besides its state."""

    key: EpisodeKey
    seed: int
    env: Environment
    layer: ModelLayer
    artifacts: ArtifactMemo
    planner_name: str
    make_planner: PlannerFactory
    meter: Meter
    max_steps: int
    strategy: Strategy
    sealed: SealedOptions = SealedOptions()
    """How a sealed critique is made (writer, findings cap, what the guard may do)."""
    judge: bool = True
    auditor: bool = True
    refresh_cache: bool = False
    """Ignore cached model replies (an errored episode being re-run)."""
    limits: EpisodeLimits | None = None
    started: float = 0.0
    """``time.perf_counter()`` when the episode started (its wall-time limit counts from it)."""

    def client(self, purpose: str, limited: bool = True) -> ChatModel:
        """A client for ``purpose``, answered by its role's model (``runtime.llm.roles``);
        ``limited``: refused once the episode reached a limit."""
        context = {"env": self.key.env, "domain": self.key.domain, "task_id": self.key.task_id,
                   "mode": self.key.mode, "strategy": self.key.strategy, "trial": self.key.trial}
        client = self.layer.client(PURPOSES[purpose].role, purpose, self.meter, seed=self.seed,
                                   context=context, refresh=self.refresh_cache)
        if limited and self.limits is not None and self.limits.any():
            return LimitedClient(client, self.limits, self.meter, self.started)
        return client


def _node(stage: str, fn: Callable[[EpisodeState, EpisodeContext], dict[str, Any]]):
    """Time a node and turn its exception into a recorded ``StageError``."""

    def run(state: EpisodeState, runtime: Runtime[EpisodeContext]) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            update = fn(state, runtime.context)
        except LimitReached as exc:  # not a failure: the episode goes on to its unfinished end
            update = {"limit": exc.termination}
            if stage == "execute":  # an environment that did not end its play at the refusal
                update["error"] = StageError(
                    stage=stage, type="LimitNotHonoured", kind="internal",
                    message=f"{exc.termination}: the environment did not end its play at the "
                    "refused turn")
        except Exception as exc:  # noqa: BLE001 - every failure becomes part of the record
            update = {"error": StageError(stage=stage, type=type(exc).__name__, message=str(exc)[:2000],
                                          **classify(exc))}
        update["timings"] = {stage: round(time.perf_counter() - started, 4)}
        return update

    return run


def shared(ctx: EpisodeContext, kind: str, key: dict[str, Any], make: Callable[[], Any],
           note_reuse: bool = True) -> tuple[Any, dict[str, Any]]:
    """A shared artifact's value, and the state update that says whether this episode made it
    (``made``, for the batch layer to store) or reused it."""
    value, made = ctx.artifacts.get_or_create(kind, key, make)
    if made is not None:
        return value, {"made": [made]}
    return value, ({"reused": [kind]} if note_reuse else {})


def _arm(key: EpisodeKey) -> dict[str, str]:
    """The A/A arm shares nothing with the other modes' episodes of its trial: its own key part."""
    return {"arm": AA_MODE} if key.mode == AA_MODE else {}


def prepare(state: EpisodeState, ctx: EpisodeContext) -> dict[str, Any]:
    key = ctx.key
    view, supervision = ctx.env.load(key.domain, key.task_id)
    user = SimulatedUser(ctx.client("user", limited=False))  # every mode's start: never refused
    opening_key = {"env": key.env, "domain": key.domain, "task_id": key.task_id,
                   "user_model": ctx.layer.specs["user_model"].model, "trial": key.trial, **_arm(key)}
    opening, update = shared(ctx, "opening", opening_key,
                             lambda: ctx.env.opening_request(key.domain, key.task_id, user, ctx.seed))
    return {**update, "view": view.model_copy(update={"opening_request": opening}),
            "supervision": supervision}


def plan(state: EpisodeState, ctx: EpisodeContext) -> dict[str, Any]:
    key, view = ctx.key, state["view"]
    planner = ctx.make_planner(ctx.client("planner"))
    p0_key = {"env": key.env, "domain": key.domain, "task_id": key.task_id, "model": key.model,
              "planner": ctx.planner_name, "trial": key.trial, **_arm(key),
              "opening": hashlib.sha256((view.opening_request or "").encode()).hexdigest()}
    data, update = shared(ctx, "p0", p0_key, lambda: planner.plan(view).model_dump())
    return {**update, "p0": Plan.model_validate(data)}


def judge_inputs(state: EpisodeState, ctx: EpisodeContext) -> dict[str, Any]:
    """What the judge read besides the plan and the query — the full tool schemas and the
    reference plan and tool chain — kept once per task so the APB export can hand APB's own
    judge the same inputs (``runtime.reports.apb_export``)."""
    key = ctx.key
    _, update = shared(ctx, JUDGE_INPUTS, judge_inputs_key(key.env, key.domain, key.task_id),
                       lambda: {"tools": state["view"].tools,
                                "reference": reference_plan(state["supervision"]).to_apb()},
                       note_reuse=False)
    return update


def judge_p0(state: EpisodeState, ctx: EpisodeContext) -> dict[str, Any]:
    key, p0 = ctx.key, state["p0"]
    judge = PlanJudge(ctx.client("judge"))
    inputs = judge_inputs(state, ctx)
    judge_key = {"env": key.env, "domain": key.domain, "task_id": key.task_id, "trial": key.trial, **_arm(key),
                 "judge_model": ctx.layer.specs["judge_model"].model,
                 "p0": hashlib.sha256(p0.model_dump_json().encode()).hexdigest()}
    data, update = shared(ctx, "judge_p0", judge_key,
                          lambda: judge.judge(state["view"], state["supervision"], p0).model_dump(),
                          note_reuse=False)
    made = inputs.get("made", []) + update.get("made", [])
    return {**update, **({"made": made} if made else {}), "judge_p0": JudgeResult.model_validate(data)}


def critique(state: EpisodeState, ctx: EpisodeContext) -> dict[str, Any]:
    strategy = ctx.strategy
    if strategy.critic_role is None:
        return {}
    settings = strategy.settings
    purpose = "sealed-critic" if settings.sealed else critique_purpose(strategy.critic_role)
    auditor = None
    if ctx.auditor and settings.guarded and settings.sees_supervision:
        auditor = LeakAuditor(ctx.client("auditor"))
    tested_writer = settings.sealed and ctx.sealed.writer == "tested"
    writer = ctx.client("writer") if tested_writer else None
    critic = strategy.critic(ctx.client(purpose), auditor=auditor, writer=writer, sealed=ctx.sealed)
    supervision = state["supervision"] if strategy.settings.sees_supervision else None
    return {"critic": critic.critique(state["view"], supervision, state["p0"])}


def revise(state: EpisodeState, ctx: EpisodeContext) -> dict[str, Any]:
    if "critic" not in state:  # the negative control: nothing to revise from
        return {"p1": state["p0"].model_copy(deep=True)}
    planner = ctx.make_planner(ctx.client("reviser"))
    return {"p1": planner.revise(state["view"], state["p0"], state["critic"].critique,
                                 reviewer=ctx.strategy.reviewer)}


def judge_p1(state: EpisodeState, ctx: EpisodeContext) -> dict[str, Any]:
    judge = PlanJudge(ctx.client("judge"))
    return {**judge_inputs(state, ctx), "judge_p1": judge.judge(state["view"], state["supervision"], state["p1"])}


def execute(state: EpisodeState, ctx: EpisodeContext) -> dict[str, Any]:
    key, view = ctx.key, state["view"]
    plan_used = state.get("p1") or state.get("p0")
    executor = Executor(view, plan_used, ctx.client("executor"))
    user = SimulatedUser(ctx.client("user"))
    trajectory = ctx.env.play(key.domain, key.task_id, view.opening_request or "",
                              executor, user, ctx.seed, ctx.max_steps)
    return {"trajectory": trajectory}


def score(state: EpisodeState, ctx: EpisodeContext) -> dict[str, Any]:
    """The benchmark's evaluator; one with an LLM judge of its own (τ³'s NL assertions) gets
    its completions from the model layer (``nl_judge_model``), when the run configured one."""
    key = ctx.key
    if "nl_judge_model" not in ctx.layer.specs:
        return {"score": ctx.env.score(key.domain, key.task_id, state["trajectory"])}
    context = {"env": key.env, "domain": key.domain, "task_id": key.task_id, "mode": key.mode,
               "strategy": key.strategy, "trial": key.trial}
    # no seed and no episode limit: the release's judge sends none, and grading is not the
    # agent's spending (its cost is still counted, under its own purpose)
    client = ctx.layer.client("nl_judge_model", "nl_judge", ctx.meter, seed=None, context=context,
                              refresh=ctx.refresh_cache)
    judge = BenchmarkJudge(client)
    return {"score": ctx.env.score(key.domain, key.task_id, state["trajectory"], judge=judge)}


class BenchmarkJudge:
    """A benchmark's LLM judge answered by the model layer (an ``envs.JudgeTurn``): the
    benchmark built the messages; the run's ``nl_judge_model`` answers them."""

    def __init__(self, model: ChatModel):
        self.model = model

    def __call__(self, benchmark_model: str, messages: list[dict], options: dict) -> dict:
        return self.model.complete(messages).as_message()


NODES = {"prepare": prepare, "plan": plan, "judge_p0": judge_p0, "critique": critique,
         "revise": revise, "judge_p1": judge_p1, "execute": execute, "score": score}


def _route(after: str) -> Callable[[EpisodeState, Runtime[EpisodeContext]], str]:
    """The edge out of ``after``: END on an error, else the next stage for this episode's mode
    (the plan judge's nodes are skipped when the run has the judge off)."""

    def route(state: EpisodeState, runtime: Runtime[EpisodeContext]) -> str:
        if "error" in state:
            return END
        if "limit" in state and after not in ("execute", "score"):
            return "execute"  # its first turn is refused: the benchmark scores it unfinished
        ctx = runtime.context
        mode = ctx.key.mode
        nxt = {
            "prepare": "execute" if mode == "direct" else "plan",
            "plan": "judge_p0",
            "judge_p0": "execute" if mode in ("plan-first", AA_MODE) else "critique",
            "critique": "revise",
            "revise": "judge_p1",
            "judge_p1": "execute",
            "execute": "score",
        }[after]
        if nxt in ("judge_p0", "judge_p1") and not ctx.judge:
            return _route(nxt)(state, runtime)
        return nxt

    return route


_TARGETS = {"prepare": ["execute", "plan"], "plan": ["judge_p0", "execute", "critique"],
            "judge_p0": ["execute", "critique"], "critique": ["revise", "execute"],
            "revise": ["judge_p1", "execute"], "judge_p1": ["execute"], "execute": ["score"]}


@lru_cache(maxsize=1)
def episode_graph():
    """The episode graph, compiled once per process; each episode runs it with its own
    ``EpisodeContext`` (LangGraph's runtime context), so nothing is rebuilt per episode."""
    graph = StateGraph(EpisodeState, context_schema=EpisodeContext)
    for name, fn in NODES.items():
        graph.add_node(name, _node(name, fn))
    graph.add_edge(START, "prepare")
    for source, targets in _TARGETS.items():
        graph.add_conditional_edges(source, _route(source), [*targets, END])
    graph.add_edge("score", END)
    return graph.compile()

