"""Conversions between the runtime's terms and ToolSandbox's, in plain Python (stdlib only).

Why a separate module: the env server runs inside ToolSandbox's own virtualenv while tests of
this logic must run without ToolSandbox. So everything here takes plain data or duck-typed
ToolSandbox objects and imports nothing from either side.

* OpenAI tool calls ↔ the Python call strings ToolSandbox's execution environment runs
  (byte-for-byte the format of ``tool_sandbox.common.message_conversion``), with tool names
  mapped from the agent-facing (possibly scrambled) name to the execution-facing one.
* Milestones and minefields → plain data → readable text for the critic and the plan judge.
* Scenario selection by name, category (the ``split``) or a seeded sample.
"""

from __future__ import annotations

import ast
import json
import random
import re
from typing import Any, Callable, Iterable, Optional

# ---- tool calls --------------------------------------------------------------------------------

_CODE = re.compile(
    r"^(?P<tool_id>.+)_parameters = (?P<arguments>[^\n]+)\n(?P=tool_id)_response = (?P<name>[^\(]+)"
)


def safe_call_id(raw: Optional[str], index: int = 0) -> str:
    """A tool-call id usable as a Python identifier prefix.

    ToolSandbox writes ``{id}_parameters = ...``: ids such as ``chatcmpl-tool-1`` (vLLM) would
    be a syntax error charged to the agent. Non-identifier characters become ``_``.
    """
    text = re.sub(r"\W", "_", raw or "") or f"call_{index}"
    return text if text[0].isalpha() or text[0] == "_" else f"call_{text}"


def restore_call_ids(message: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    """``message`` with the identifier-safe call ids of :func:`safe_call_id` turned back into the
    model's own (``ids``: safe → original), so what the model sent comes back unchanged."""
    if message.get("tool_calls"):
        message = {**message, "tool_calls": [{**c, "id": ids.get(c.get("id"), c.get("id"))}
                                             for c in message["tool_calls"]]}
    if message.get("tool_call_id") in ids:
        message = {**message, "tool_call_id": ids[message["tool_call_id"]]}
    return message


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict; raises ``ValueError`` like ToolSandbox's ``json.loads``."""
    if isinstance(raw, dict):
        return raw
    value = json.loads(raw or "{}")
    if not isinstance(value, dict):
        raise ValueError(f"tool-call arguments must be a JSON object, got {raw!r}")
    return value


def tool_call_to_code(call_id: str, execution_name: str, arguments: dict[str, Any]) -> str:
    """The Python snippet ToolSandbox runs for one tool call (same text as its own converter)."""
    return (
        f"{call_id}_parameters = {arguments}\n"
        f"{call_id}_response = {execution_name}(**{call_id}_parameters)\n"
        f"print(repr({call_id}_response))"
    )


def code_to_tool_call(code: str) -> tuple[str, str, dict[str, Any]]:
    """(call id, execution-facing name, arguments) of a snippet made by :func:`tool_call_to_code`."""
    match = _CODE.match(code)
    if match is None:
        raise ValueError(f"not a ToolSandbox tool-call snippet: {code[:80]!r}")
    return match.group("tool_id"), match.group("name"), ast.literal_eval(match.group("arguments"))


class NameMap:
    """Agent-facing ↔ execution-facing tool names (identical unless names are scrambled)."""

    def __init__(self, agent_to_execution: dict[str, str]):
        self.agent_to_execution = dict(agent_to_execution)
        self.execution_to_agent = {v: k for k, v in agent_to_execution.items()}

    def to_execution(self, agent_name: str) -> str:
        """Raises ``KeyError`` for a tool the agent does not have (ToolSandbox's own rule)."""
        if agent_name not in self.agent_to_execution:
            raise KeyError(
                f"Agent tool call agent_facing_tool_name={agent_name!r} is not a known allowed tool. "
                f"Options are {sorted(self.agent_to_execution)}"
            )
        return self.agent_to_execution[agent_name]

    def to_agent(self, execution_name: str) -> str:
        return self.execution_to_agent.get(execution_name, execution_name)


# ---- milestones and minefields -----------------------------------------------------------------

def constraint_data(constraint: Any) -> Optional[dict[str, Any]]:
    """A ToolSandbox ``SnapshotConstraint`` as plain data; ``None`` for guardrails (implicit)."""
    fn = constraint.snapshot_constraint
    options: dict[str, str] = {}
    if hasattr(fn, "func"):  # functools.partial
        options = {k: getattr(v, "__name__", str(v)) for k, v in (fn.keywords or {}).items()}
        fn = fn.func
    name = getattr(fn, "__name__", str(fn))
    if name == "guardrail_similarity":
        return None
    target = constraint.target_dataframe
    rows = target.to_dicts() if target is not None else []
    return {
        "namespace": str(constraint.database_namespace),
        "similarity": name,
        "options": options,
        "reference": constraint.reference_milestone_node_index,
        "target": json.loads(json.dumps(rows, default=str)),
    }


def matcher_data(matcher: Any) -> dict[str, Any]:
    """A ToolSandbox ``MilestoneMatcher`` (milestones or minefields) as plain data."""
    milestones = [
        [c for c in (constraint_data(x) for x in m.snapshot_constraints) if c is not None]
        for m in matcher.milestones
    ]
    edges = [list(e) for e in matcher.milestone_dag.edges()] if milestones else []
    return {"milestones": milestones, "edges": edges}


def _args(arguments: dict[str, Any]) -> str:
    return ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())


def _traces(raw: Any) -> list[dict[str, Any]]:
    value = json.loads(raw) if isinstance(raw, str) else raw
    return list(value) if isinstance(value, list) else [value]


def _row(row: dict[str, Any]) -> str:
    return ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in row.items())


def describe_constraint(c: dict[str, Any], agent_name: Callable[[str], str]) -> str:
    """One constraint in words, tool names as the agent sees them."""
    ns, sim, rows = c["namespace"], c["similarity"], c["target"]
    source = ""
    if sim == "tool_trace_dependant_similarity" and c.get("reference") is not None:
        source = f" (values taken from the tool result at milestone {c['reference'] + 1})"
    if ns == "SANDBOX":
        parts = []
        for row in rows:
            sender, recipient = row.get("sender"), row.get("recipient")
            if row.get("tool_trace") is not None:
                calls = [f"{agent_name(t['tool_name'])}({_args(t.get('arguments') or {})})"
                         for t in _traces(row["tool_trace"])]
                parts.append("the agent calls " + " or ".join(calls) + source)
            elif sender == "AGENT" and recipient == "USER":
                parts.append(f'the agent tells the user: "{row.get("content")}"{source}')
            elif sender == "AGENT" and recipient == "EXECUTION_ENVIRONMENT":
                parts.append(f"the agent calls {agent_name(str(row.get('content')))}")
            else:
                parts.append(f"a message with {_row(row)}")
        return "; ".join(parts)
    what = ns.lower()
    body = "; ".join(_row(r) for r in rows)
    since = ""
    if c.get("reference") is not None and c["reference"] >= 0:
        since = f" (relative to the state at milestone {c['reference'] + 1})"
    if sim == "addition_similarity":
        return f"a {what} entry is added with {body}{since}"
    if sim == "removal_similarity":
        return f"the {what} entry with {body} is removed{since}"
    if sim == "update_similarity":
        return f"{what} entries are updated to {body}{since}"
    if ns == "SETTING":
        return f"device settings: {body}"
    return f"the {what} database matches {body}"


def describe(data: dict[str, Any], agent_name: Callable[[str], str], minefield: bool = False) -> list[str]:
    """Readable lines for milestones (in order, with their DAG predecessors) or minefields."""
    preds: dict[int, list[int]] = {}
    for a, b in data.get("edges", []):
        preds.setdefault(b, []).append(a)
    lines = []
    for i, constraints in enumerate(data["milestones"]):
        text = " and ".join(describe_constraint(c, agent_name) for c in constraints) or "(no check)"
        if minefield:
            lines.append(f"Minefield {i + 1} (must NOT happen; if it does the score is 0): {text}")
        else:
            after = sorted(preds.get(i, []))
            order = f" [after milestone {', '.join(str(a + 1) for a in after)}]" if after else ""
            lines.append(f"Milestone {i + 1}{order}: {text}")
    return lines


def reference_actions(data: dict[str, Any], agent_name: Callable[[str], str]) -> list[dict[str, Any]]:
    """The tool calls the milestones name (first alternative), in milestone order."""
    actions = []
    for constraints in data["milestones"]:
        for c in constraints:
            for row in c["target"] if c["namespace"] == "SANDBOX" else []:
                if row.get("tool_trace") is not None and row.get("sender") == "EXECUTION_ENVIRONMENT":
                    trace = _traces(row["tool_trace"])[0]
                    action = {"name": agent_name(trace["tool_name"]), "arguments": trace.get("arguments") or {}}
                    if not actions or actions[-1] != action:  # one call feeding two checks
                        actions.append(action)
    return actions


SCORING_NOTE = ("Scoring: similarity = mean milestone match (in DAG order) × [no minefield matched]; "
                "agent messages are matched by ROUGE-L, tool calls by name and given arguments.")


def user_task(system_prompt: str) -> str:
    """The scenario-specific part of the simulated user's instructions."""
    marker = "want User B to complete: "
    return system_prompt.split(marker, 1)[1].strip() if marker in system_prompt else system_prompt.strip()


# ---- scenario selection ------------------------------------------------------------------------

VARIANT_SUFFIXES = (
    "_3_distraction_tools_tool_description_scrambled",
    "_3_distraction_tools_arg_description_scrambled",
    "_3_distraction_tools_arg_type_scrambled",
    "_3_distraction_tools_tool_name_scrambled",
    "_3_distraction_tools",
    "_10_distraction_tools",
    "_all_tools",
)


def base_name(name: str, bases: Iterable[str]) -> str:
    """The base scenario a tool-augmentation variant was made from (``name`` itself for a base)."""
    base_set = set(bases)
    if name in base_set:
        return name
    for suffix in VARIANT_SUFFIXES:
        if name.endswith(suffix) and name[: -len(suffix)] in base_set:
            return name[: -len(suffix)]
    return name


def _norm(category: str) -> str:
    return category.strip().upper().replace("-", "_")


def select_scenarios(catalog: dict[str, list[str]], *, split: Optional[str] = None,
                     ids: Optional[list[str]] = None, count: Optional[int] = None, seed: int = 0,
                     excluded: Optional[dict[str, str]] = None) -> list[str]:
    """Scenario names in the benchmark's order.

    ``catalog``: name → categories of every runnable scenario. ``split``: categories joined by
    ``+`` (all must hold), e.g. ``multiple_user_turn+no_distraction_tools``. ``excluded``:
    name → why it cannot run (e.g. needs RapidAPI). Raises ``LookupError`` with the accepted
    values on a bad id or category.
    """
    excluded = excluded or {}
    if ids:
        for name in ids:
            if name in excluded:
                raise LookupError(f"scenario {name!r} cannot run here: {excluded[name]}")
            if name not in catalog:
                sample = ", ".join(list(catalog)[:3])
                raise LookupError(f"unknown ToolSandbox scenario {name!r}; accepted: {len(catalog)} "
                                  f"offline scenarios such as {sample}")
        return list(ids)
    names = list(catalog)
    if split:
        wanted = [_norm(c) for c in split.split("+") if c.strip()]
        known = sorted({_norm(c) for cats in catalog.values() for c in cats})
        bad = [c for c in wanted if c not in known]
        if bad:
            raise LookupError(f"unknown ToolSandbox category {bad[0].lower()!r}; accepted: "
                              f"{', '.join(k.lower() for k in known)} (join several with '+')")
        names = [n for n in names if set(wanted) <= {_norm(c) for c in catalog[n]}]
    if count is not None:
        rng = random.Random(seed)
        picked = set(rng.sample(names, min(count, len(names))))
        names = [n for n in names if n in picked]
    return names
