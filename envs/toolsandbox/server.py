"""The ToolSandbox env server: runs INSIDE ToolSandbox's own virtualenv, spoken to over stdio.

    python -m envs.toolsandbox.server          (PYTHONPATH = the folder holding ``envs``)

It plays real scenarios with ToolSandbox's own ``Scenario.play`` loop, execution environment
and ``Evaluation``; only the agent and the user are ours: two ``BaseRole`` subclasses whose turns
are protocol callbacks answered by the runtime (executor, user model — so every model call,
cache and cost stays in the runtime; ToolSandbox's stock user hard-codes OpenAI's URL).

Imports: stdlib, ToolSandbox and its pinned deps, ``envs.base``/``envs.protocol`` (pydantic
2.7-compatible) and ``envs.toolsandbox.convert``. Never langgraph, litellm or ``runtime``.

One process plays one episode at a time: ToolSandbox keeps its world state in a module global.
"""

from __future__ import annotations

import copy
import json
import os
import random
import traceback
from types import SimpleNamespace
from typing import Any, Optional

from envs.base import (
    AgentTurn,
    ReferenceAction,
    Score,
    Supervision,
    TaskSelection,
    TaskView,
    Trajectory,
    UnknownTaskError,
    UserTurn,
)
from envs.protocol import CallbackFailed, ConnectionClosed, ProtocolError, main
from envs.toolsandbox import convert

DOMAIN = "default"
RAPID_API_MODULE = "rapid_api_search_tools"


def _ts() -> SimpleNamespace:
    """ToolSandbox's modules, imported on first use (importing this file stays cheap)."""
    from tool_sandbox.common import execution_context, message_conversion, tool_conversion
    from tool_sandbox.common.evaluation import get_effective_turn_count
    from tool_sandbox.roles.base_role import BaseRole
    from tool_sandbox.roles.execution_environment import ExecutionEnvironment
    from tool_sandbox.roles.openai_api_user import OpenAIAPIUser

    return SimpleNamespace(ec=execution_context, mc=message_conversion, tc=tool_conversion,
                           turn_count=get_effective_turn_count, BaseRole=BaseRole,
                           ExecutionEnvironment=ExecutionEnvironment, OpenAIAPIUser=OpenAIAPIUser)


def _role_classes():
    ts = _ts()
    ec, mc, tc, BaseRole, OpenAIAPIUser = ts.ec, ts.mc, ts.tc, ts.BaseRole, ts.OpenAIAPIUser
    RoleType = ec.RoleType

    def assistant_reply(reply: dict[str, Any]) -> tuple[Optional[str], list[dict[str, Any]]]:
        return reply.get("content"), list(reply.get("tool_calls") or [])

    class CallbackAgent(BaseRole):
        """ToolSandbox's agent role, answered by the runtime's executor (mirrors its OpenAI agent)."""

        role_type = RoleType.AGENT

        def __init__(self, turn: AgentTurn):
            self.turn = turn
            self.call_ids: dict[str, str] = {}
            """ToolSandbox's identifier-safe call id → the model's own one. The model's id can carry
            provider state (litellm keeps Gemini's thought signature in it) that must go back."""
            self.words: dict[str, str] = {}
            """The text a turn sent beside its tool calls, by its first call's (safe) id: ToolSandbox's
            messages have no place for it, so it is put back into every later request here."""

        def respond(self, ending_index: Optional[int] = None) -> None:
            messages = self.get_messages(ending_index=ending_index)
            self.messages_validation(messages=messages)
            messages = self.filter_messages(messages=messages)
            if messages[-1].sender == RoleType.SYSTEM:
                return
            tools = self.get_available_tools()
            schemas = tc.convert_to_openai_tools(tools)
            chat, _ = mc.to_openai_messages(messages)
            # The system messages are the policy, which the executor already holds.
            chat = with_words([m for m in chat if m["role"] != "system"], self.words)
            chat = [convert.restore_call_ids(m, self.call_ids) for m in chat]
            content, calls = assistant_reply(self.turn(chat, schemas))
            context = ec.get_current_context()
            names = convert.NameMap({name: fn.__name__ for name, fn in tools.items()})
            if not calls:
                out = [mc.Message(sender=RoleType.AGENT, recipient=RoleType.USER, content=content or "")]
            else:
                out = []
                if (content or "").strip():
                    self.words[convert.safe_call_id(calls[0].get("id"), 0)] = content
                for i, call in enumerate(calls):
                    fn = call["function"]
                    call_id = convert.safe_call_id(call.get("id"), i)
                    if call.get("id"):
                        self.call_ids[call_id] = call["id"]
                    names.to_execution(fn["name"])  # unknown tool → KeyError, as in ToolSandbox
                    execution = context.get_execution_facing_tool_name(fn["name"])
                    code = convert.tool_call_to_code(call_id, execution, convert.parse_arguments(fn.get("arguments")))
                    out.append(mc.Message(sender=RoleType.AGENT, recipient=RoleType.EXECUTION_ENVIRONMENT,
                                          content=code, openai_tool_call_id=call_id,
                                          openai_function_name=fn["name"]))
            self.add_messages(out)

    class CallbackUser(BaseRole):
        """ToolSandbox's simulated user (its prompt, few-shot examples and role flip, as in
        ``OpenAIAPIUser``) with the model call answered by the runtime's user model."""

        role_type = RoleType.USER

        def __init__(self, turn: UserTurn):
            self.turn = turn

        def respond(self, ending_index: Optional[int] = None) -> None:
            messages = self.get_messages(ending_index=ending_index)
            self.messages_validation(messages=messages)
            messages = self.filter_messages(messages=messages)
            if messages[-1].sender == RoleType.SYSTEM:
                return
            tools = self.get_available_tools()
            schemas = ([tc.convert_to_openai_tool(t) for t in tools.values()]
                       if messages[-1].sender == RoleType.AGENT else None)
            chat = OpenAIAPIUser.to_openai_messages(messages=messages)
            system, rest = (chat[0]["content"], chat[1:]) if chat and chat[0]["role"] == "system" else ("", chat)
            content, calls = assistant_reply(self.turn(system, rest, schemas))
            if not calls and not (content or "").strip():
                # Nothing to say means nothing left to ask: end the conversation.
                calls = [{"id": "end", "function": {"name": "end_conversation", "arguments": "{}"}}]
            if not calls:
                out = [mc.Message(sender=RoleType.USER, recipient=RoleType.AGENT, content=content)]
            else:
                names = convert.NameMap({name: name for name in tools})
                out = []
                for i, call in enumerate(calls):
                    fn = call["function"]
                    names.to_execution(fn["name"])
                    code = convert.tool_call_to_code(convert.safe_call_id(call.get("id"), i), fn["name"],
                                                     convert.parse_arguments(fn.get("arguments")))
                    out.append(mc.Message(sender=RoleType.USER, recipient=RoleType.EXECUTION_ENVIRONMENT,
                                          content=code))
            self.add_messages(out)

    return CallbackAgent, CallbackUser


def with_words(chat: list[dict[str, Any]], words: dict[str, str]) -> list[dict[str, Any]]:
    """ToolSandbox's chat with the agent's words put back beside the tool calls they came with
    (ToolSandbox writes ``content: ""`` there; its own agent drops the words)."""
    out = []
    for m in chat:
        calls = m.get("tool_calls") or []
        if m.get("role") == "assistant" and calls and calls[0].get("id") in words:
            m = {**m, "content": words[calls[0]["id"]]}
        out.append(m)
    return out


class ToolSandboxNative:
    """ToolSandbox as an ``envs.base.Environment``, in ToolSandbox's own interpreter."""

    name = "toolsandbox"

    def __init__(self) -> None:
        from tool_sandbox.common.tool_discovery import ToolBackend, get_all_tools
        from tool_sandbox.scenarios import named_scenarios

        # ToolSandbox's CLI seeds 42 before building scenarios (the tool lists are shuffled).
        random.seed(42)
        self.scenarios = named_scenarios(preferred_tool_backend=ToolBackend.DEFAULT)
        online = {n for n, fn in get_all_tools(ToolBackend.DEFAULT).items()
                  if fn.__module__.rsplit(".", 1)[-1] == RAPID_API_MODULE}
        bases = [n for n, s in self.scenarios.items() if "NO_DISTRACTION_TOOLS" in _cats(s)]
        self.excluded: dict[str, str] = {}
        self.catalog: dict[str, list[str]] = {}
        for name, scenario in self.scenarios.items():
            base = self.scenarios[convert.base_name(name, bases)]
            needs = sorted(set(base.starting_context.tool_allow_list or []) & online)
            if needs:
                self.excluded[name] = f"needs RapidAPI (online tools {', '.join(needs)})"
            else:
                self.catalog[name] = _cats(scenario)
        self._CallbackAgent, self._CallbackUser = _role_classes()

    # -- Environment ---------------------------------------------------------------------------

    def domains(self) -> list[str]:
        return [DOMAIN]

    def server_info(self) -> dict[str, Any]:
        return {"scenarios": len(self.scenarios), "offline": len(self.catalog),
                "needs_rapidapi": len(self.excluded)}

    def select(self, selection: TaskSelection) -> list[str]:
        self._domain(selection.domain)
        try:
            return convert.select_scenarios(self.catalog, split=selection.split, ids=selection.ids,
                                            count=selection.count, seed=selection.seed,
                                            excluded=self.excluded)
        except LookupError as exc:
            raise UnknownTaskError(str(exc.args[0])) from None

    def load(self, domain: str, task_id: str) -> tuple[TaskView, Supervision]:
        scenario = self._scenario(domain, task_id)
        parts = self._parts(scenario)
        view = TaskView(env=self.name, domain=DOMAIN, task_id=task_id, policy=parts["policy"],
                        system_prompt=parts["policy"], tools=parts["tools"],
                        categories=self.catalog[task_id])
        names = convert.NameMap(parts["name_map"])
        milestones = convert.matcher_data(scenario.evaluation.milestone_matcher)
        minefields = convert.matcher_data(scenario.evaluation.minefield_matcher)
        outcomes = (convert.describe(milestones, names.to_agent)
                    + convert.describe(minefields, names.to_agent, minefield=True)
                    + [convert.SCORING_NOTE])
        supervision = Supervision(
            task_id=task_id,
            reference_actions=[ReferenceAction(**a) for a in convert.reference_actions(milestones, names.to_agent)],
            expected_outcomes=outcomes,
            hidden_user_instructions=convert.user_task(parts["user_system"]),
        )
        return view, supervision

    def task_info(self, domain: str, task_id: str) -> dict[str, Any]:
        scenario = self._scenario(domain, task_id)
        parts = self._parts(scenario)
        return {"categories": self.catalog[task_id], "tool_name_map": parts["name_map"],
                "max_messages": scenario.max_messages,
                "milestones": convert.matcher_data(scenario.evaluation.milestone_matcher),
                "minefields": convert.matcher_data(scenario.evaluation.minefield_matcher)}

    def opening_request(self, domain: str, task_id: str, user: UserTurn, seed: int) -> str:
        """ToolSandbox scenarios script the user's first message: no model call needed."""
        return self._parts(self._scenario(domain, task_id))["opening"]

    def play(self, domain: str, task_id: str, opening_request: str, agent: AgentTurn,
             user: UserTurn, seed: int, max_steps: int) -> Trajectory:
        ts = _ts()
        ec, mc = ts.ec, ts.mc
        scenario = copy.deepcopy(self._scenario(domain, task_id))
        scenario.max_messages = min(scenario.max_messages, max_steps)
        self._set_opening(scenario, opening_request)
        agent_role = self._CallbackAgent(agent)
        roles = {ec.RoleType.AGENT: agent_role, ec.RoleType.USER: self._CallbackUser(user),
                 ec.RoleType.EXECUTION_ENVIRONMENT: ts.ExecutionEnvironment()}
        random.seed(seed)
        exception = None
        try:
            scenario.play(roles=roles, scenario_name=task_id)
        except (CallbackFailed, ProtocolError, ConnectionClosed):
            raise  # the runtime's side failed (a model that is down, ...): an errored episode
        except Exception as exc:  # noqa: BLE001 - ToolSandbox scores a failed play as 0
            exception = {"type": type(exc).__name__, "message": str(exc)[:2000],
                         "traceback": traceback.format_exc(limit=8)}
        context = ec.get_current_context()
        sandbox = context.get_database(ec.DatabaseNamespace.SANDBOX, get_all_history_snapshots=True)
        active = sandbox["conversation_active"].to_list()[-1]
        if exception:
            termination, turns = f"exception:{exception['type']}", scenario.max_messages
        else:
            termination = "max_messages" if active else "user_ended"
            turns = ts.turn_count(sandbox)
        return Trajectory(
            messages=with_words(_agent_chat(context, ec, mc), agent_role.words),
            termination=termination,
            turns=turns,
            native={
                "scenario": task_id,
                "categories": self.catalog[task_id],
                "opening_request": opening_request,
                "max_messages": scenario.max_messages,
                "exception": exception,
                "execution_context": json.loads(json.dumps(context.to_dict(serialize_console=False), default=str)),
            },
        )

    def score(self, domain: str, task_id: str, trajectory: Trajectory) -> Score:
        """ToolSandbox's ``Evaluation.evaluate`` on the final execution context; a play that
        raised scores like ToolSandbox's ``run_scenario`` does (0, turn count = max)."""
        ec = _ts().ec
        scenario = self._scenario(domain, task_id)
        native = trajectory.native
        max_messages = native.get("max_messages", scenario.max_messages)
        info: dict[str, Any] = {"scenario": task_id, "categories": self.catalog[task_id]}
        if native.get("exception"):
            exc = native["exception"]
            breakdown = {"milestone_similarity": 0.0, "minefield_similarity": 0.0, "turn_count": max_messages}
            info.update(exception_type=exc["type"], exception=exc["message"],
                        milestone_mapping={}, minefield_mapping={})
            return Score(value=0.0, name="similarity", breakdown=breakdown, info={**info, **breakdown})
        context = ec.ExecutionContext.from_dict(native["execution_context"])
        result = scenario.evaluation.evaluate(execution_context=context, max_turn_count=max_messages)
        breakdown = {"milestone_similarity": float(result.milestone_similarity),
                     "minefield_similarity": float(result.minefield_similarity),
                     "turn_count": int(result.turn_count)}
        info.update(
            exception_type=None,
            milestone_mapping={str(k): list(v) for k, v in result.milestone_mapping.items()},
            minefield_mapping={str(k): list(v) for k, v in result.minefield_mapping.items()},
        )
        return Score(value=float(result.similarity), name="similarity", breakdown=breakdown,
                     info={**info, **breakdown})

    # -- helpers -------------------------------------------------------------------------------

    def _domain(self, domain: str) -> None:
        if domain != DOMAIN:
            raise UnknownTaskError(f"unknown ToolSandbox domain {domain!r}; accepted: {DOMAIN} "
                                   "(pick scenarios by category with --split)")

    def _scenario(self, domain: str, task_id: str):
        self._domain(domain)
        if task_id not in self.catalog:
            try:
                convert.select_scenarios(self.catalog, ids=[task_id], excluded=self.excluded)
            except LookupError as exc:
                raise UnknownTaskError(str(exc.args[0])) from None
        return self.scenarios[task_id]

    def _parts(self, scenario) -> dict[str, Any]:
        """Policy, opening, the user's instructions and the agent's tools of a scenario."""
        ts = _ts()
        ec, tc = ts.ec, ts.tc
        RoleType = ec.RoleType
        rows = scenario.starting_context.get_database(ec.DatabaseNamespace.SANDBOX,
                                                      get_all_history_snapshots=True).to_dicts()
        real = [r for r in rows if r["visible_to"] != [RoleType.USER]]
        policy = "\n\n".join(r["content"] for r in real
                             if r["sender"] == RoleType.SYSTEM and r["recipient"] == RoleType.AGENT)
        opening = next(r["content"] for r in real
                       if r["sender"] == RoleType.USER and r["recipient"] == RoleType.AGENT)
        user_system = next((r["content"] for r in real
                            if r["sender"] == RoleType.SYSTEM and r["recipient"] == RoleType.USER), "")
        with ec.new_context(scenario.starting_context):
            tools = self._CallbackAgent.get_available_tools()
            schemas = tc.convert_to_openai_tools(tools)
        return {"policy": policy, "opening": opening, "user_system": user_system, "tools": schemas,
                "name_map": {name: fn.__name__ for name, fn in tools.items()}}

    @staticmethod
    def _set_opening(scenario, opening: str) -> None:
        """Make the scenario start from ``opening`` (the same words in every mode)."""
        import polars as pl

        ec = _ts().ec
        RoleType = ec.RoleType
        ctx = scenario.starting_context
        db = ctx._dbs[ec.DatabaseNamespace.SANDBOX]
        not_few_shot = pl.col("visible_to").is_null() | (pl.col("visible_to") != [RoleType.USER])
        is_opening = ((pl.col("sender") == RoleType.USER) & (pl.col("recipient") == RoleType.AGENT)
                      & not_few_shot)
        first = db.filter(is_opening)["sandbox_message_index"].min()
        target = is_opening & (pl.col("sandbox_message_index") == first)
        if db.filter(target)["content"].to_list() == [opening]:
            return
        ctx._dbs[ec.DatabaseNamespace.SANDBOX] = db.with_columns(
            pl.when(target).then(pl.lit(opening)).otherwise(pl.col("content")).alias("content"))


def _cats(scenario) -> list[str]:
    return [str(c) for c in scenario.categories]


def _agent_chat(context, ec, mc) -> list[dict[str, Any]]:
    """The conversation as the agent saw it, as OpenAI chat dicts (ToolSandbox's converter)."""
    RoleType = ec.RoleType
    db = context.get_database(ec.DatabaseNamespace.SANDBOX, get_all_history_snapshots=True)
    messages = [mc.Message(**r) for r in db.to_dicts()]  # fills in default visibility
    chat, _ = mc.to_openai_messages([m for m in messages if RoleType.AGENT in (m.visible_to or [])])
    return json.loads(json.dumps(chat, default=str))


if __name__ == "__main__":
    os.environ.setdefault("TQDM_DISABLE", "1")
    main(ToolSandboxNative)
