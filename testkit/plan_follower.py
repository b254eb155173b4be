"""Scripted roles whose execution depends on the plan: the controls for critique experiments.

* the planner writes a deliberately wrong ``p0``: the task's reference actions without the last
  state-changing write, each as a tool-chain step whose ``parameter_description`` is the JSON
  arguments — but only the values it has seen (view, opening request) are copied; a value it
  cannot know is described (``DESCRIBED``), so ``p0`` carries no hidden value;
* the critic reveals the reference (``REFERENCE_ACTIONS=[...]`` in its rationale, or with
  ``disguised`` the reference in many disguises, ``testkit.disguised_leak``) — under the
  ``leaky`` strategy that reaches the reviser, under ``anti-leak`` the guard removes it;
* the reviser applies revealed reference actions when it can read them, else keeps ``p0``;
* the leak auditor is the scripted overlap stand-in (``testkit.leak_auditor``);
* the executor performs exactly the steps of the plan in its instructions, filling each described
  value from the matching reference action (the k-th call of a tool is the reference's k-th:
  the stand-in for reading it off an earlier tool result; when it never saw the value, the
  provenance audit counts it), then says the plan's summary;
* the user opens with the task's reason for calling and who they are (its ``known_info``) and
  stops at the first answer.

So on such tasks Plan-first scores 0, ``leaky`` Refine scores 1 and ``none`` stays at 0 — known
answers for the statistics and the leak boundary. On other tasks ``p0`` is the full reference.
``noise`` makes an episode sloppy at random (seeded per episode, independently per mode): the
executor drops its last step and does not tell the user the plan's summary, so a negative
control has run-to-run variation like a real model's.
It proves the experiment's plumbing, not a model.
"""

from __future__ import annotations

import json
import random
import re
import zlib
from dataclasses import dataclass
from typing import Any

from envs.base import TaskSelection
from envs.tau2 import tasks as tau2_tasks
from testkit import sealed_answers
from testkit.disguised_leak import decode, disguised_rationale
from critique.provenance import Observed, is_trivial, scalar_keys
from testkit.gold import opening_words, last_state_changing_write
from testkit.leak_auditor import overlap_auditor
from testkit.roles import JUDGE_P0
from testkit.scripted import register_script, text, tool_call

_STEP = re.compile(r"^\d+\. (\S+) — parameters: (\{.*?\})(?: — why: .*)?$", re.M)
_REVEALED = re.compile(r"REFERENCE_ACTIONS=(\[.*\])$", re.M)


def suitable_tasks(domain: str, limit: int | None = None) -> list[str]:
    """Tasks the controls can run: a state-changing write to leave out, nothing to communicate."""
    out: list[str] = []
    for task_id in tau2_tasks.select(TaskSelection(domain=domain)):
        task = tau2_tasks.task(domain, task_id)
        criteria = task.evaluation_criteria
        if not criteria or not criteria.actions or criteria.communicate_info:
            continue
        if any(a.requestor != "assistant" for a in criteria.actions):
            continue
        if last_state_changing_write(domain, task) is not None:
            out.append(task_id)
            if limit and len(out) == limit:
                break
    return out


DESCRIBED = "⟨not known yet: the {key} from an earlier tool result or the user⟩"
"""How the scripted planner writes a value it has not seen; the executor fills it in."""


def _plan_steps(actions, seen: str | None = None) -> list[dict[str, str]]:
    """Tool-chain steps with the actions' arguments; with ``seen`` (what the planner read), a
    value it did not see is described, not copied (``DESCRIBED``)."""
    return [{"name": a.name, "parameter_description": json.dumps(
                a.arguments if seen is None else _describe_unseen(a.arguments, _observed(seen)), sort_keys=True),
             "reason": "step of the plan"} for a in actions]


def _observed(text: str) -> Observed:
    observed = Observed()
    observed.add(text)
    return observed


def _known(value: Any, observed: Observed) -> bool:
    keys = {k for k in scalar_keys(value) if not is_trivial(k)}
    return not keys or any(observed.explains(k) for k in keys)


def _describe_unseen(value: Any, observed: Observed, key: str = "value") -> Any:
    if isinstance(value, dict):
        return {k: _describe_unseen(v, observed, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_describe_unseen(v, observed, key) for v in value]
    return value if _known(value, observed) else DESCRIBED.format(key=key)


def _fill_described(value: Any, reference: Any) -> Any:
    """A plan step's arguments with each described value taken from the matching reference
    action (the scripted stand-in for reading it off the conversation; the provenance audit
    counts it when the executor never observed it)."""
    if isinstance(value, dict) and isinstance(reference, dict):
        return {k: _fill_described(v, reference.get(k)) for k, v in value.items()}
    if isinstance(value, list) and isinstance(reference, list) and len(value) == len(reference):
        return [_fill_described(v, r) for v, r in zip(value, reference)]
    if isinstance(value, str) and value.startswith("⟨not known yet:"):
        return reference
    return value


def opening(task: Any) -> str:
    """The scripted user's opening: the reason for calling, and who they are (the task's
    ``known_info``), as a real user would say when asked."""
    known = getattr(task.user_scenario.instructions, "known_info", None) or ""
    return " ".join(f"{opening_words(task)} {' '.join(known.split())}".split())


@dataclass
class PlanFollowingRoles:
    noise: float = 0.0
    wrong_share: float = 1.0
    """Share of suitable tasks whose p0 leaves out the write (by a stable hash of the task id)."""
    disguised: bool = False
    """The critic tells the reference in disguise (``testkit.disguised_leak``) instead of the
    ``REFERENCE_ACTIONS=`` literal: the anti-leak control."""
    honest: bool = True
    """``p0`` copies only values the planner has seen and the user says who they are; ``False``
    is the earlier control (``p0`` copies the reference, the user never says who they are), whose
    executor uses hidden values it never observed: what the provenance audit must flag."""

    def model_name(self, name: str = "plan-follower") -> str:
        return register_script(name, self)

    def __call__(self, request: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
        purpose = context.get("purpose")
        domain, task = context["domain"], tau2_tasks.task(context["domain"], context["task_id"])
        actions = list(task.evaluation_criteria.actions)
        if purpose == "planner":
            steps = list(actions)
            drop = last_state_changing_write(domain, task)
            wrong = zlib.crc32(f"{domain}/{task.id}".encode()) % 1000 < self.wrong_share * 1000
            if drop is not None and wrong and all(a.requestor == "assistant" for a in actions):
                del steps[drop]
            seen = "\n".join(str(m.get("content") or "") for m in request.get("messages", []))
            return text(json.dumps({"plan": _summary(task), "tool_chain": _plan_steps(steps, seen if self.honest else None)}))
        if purpose in ("critic", "self-critic", "sealed-critic") and sealed_answers.is_sealed_critic(request):
            return sealed_answers.sealed_critic(request, context)  # no string to reveal anything in
        if purpose == "writer":
            return sealed_answers.writer(request, context)
        if purpose in ("critic", "self-critic"):
            revealed = [{"name": a.name, "arguments": a.arguments} for a in actions]
            rationale = ("The plan stops before the goal is met. REFERENCE_ACTIONS=" + json.dumps(revealed))
            if self.disguised:
                rationale = disguised_rationale(revealed, seed=f"{domain}/{task.id}")
            return text(json.dumps({
                "grade": 0.4, "errors": {"E1": False, "E2": True, "E3": False, "E4": False, "E5": False, "E6": False},
                "rationale": rationale,
            }))
        if purpose == "auditor":
            return overlap_auditor(request, context)
        if purpose == "reviser":
            return text(json.dumps(self._revise(request)))
        if purpose == "judge":
            return text(json.dumps(JUDGE_P0))
        if purpose == "executor":
            seed = f"{context['task_id']}:{context.get('trial')}:{context.get('mode')}:{request.get('seed')}"
            skip_last = self.noise > 0 and random.Random(seed).random() < self.noise
            return self._execute(request, skip_last, actions)
        if purpose == "user":
            convo = [m for m in request["messages"] if m.get("role") != "system"]
            first = opening(task) if self.honest else opening_words(task)
            return text(first if len(convo) == 1 else "###STOP###")
        raise ValueError(f"no script for purpose {purpose!r}")

    @staticmethod
    def _revise(request: dict[str, Any]) -> dict[str, Any]:
        prompt = request["messages"][-1]["content"]
        current = json.loads(prompt.split("<current_plan>", 1)[1].split("</current_plan>", 1)[0])
        critique = prompt.split("<critique>", 1)[-1].split("</critique>", 1)[0]
        decoded = decode(critique)
        if decoded:
            steps = [{"name": a["name"], "parameter_description": json.dumps(a["arguments"], sort_keys=True),
                      "reason": "read from the critique"} for a in decoded]
            return {"plan": current["plan"], "tool_chain": steps}
        match = _REVEALED.search(prompt)
        if match:
            try:
                revealed = json.loads(match.group(1))
                steps = [{"name": a["name"], "parameter_description": json.dumps(a["arguments"], sort_keys=True),
                          "reason": "revealed by the critic"} for a in revealed]
                return {"plan": json.loads(prompt.split("<current_plan>", 1)[1].split("</current_plan>", 1)[0])["plan"],
                        "tool_chain": steps}
            except (json.JSONDecodeError, KeyError, TypeError):
                pass
        current = prompt.split("<current_plan>", 1)[1].split("</current_plan>", 1)[0]
        return json.loads(current)

    @staticmethod
    def _execute(request: dict[str, Any], skip_last: bool, reference: list[Any]) -> dict[str, Any]:
        system = request["messages"][0]["content"]
        steps, seen = [], {}
        for name, args in _STEP.findall(system):  # the k-th call of a tool is its k-th reference call
            same = [a for a in reference if a.name == name]
            match = same[seen.get(name, 0)].arguments if seen.get(name, 0) < len(same) else {}
            seen[name] = seen.get(name, 0) + 1
            steps.append((name, _fill_described(json.loads(args), match)))
        if skip_last and steps:
            steps = steps[:-1]
        done = sum(len(m.get("tool_calls") or []) for m in request["messages"] if m.get("role") == "assistant")
        if done < len(steps):
            name, arguments = steps[done]
            return tool_call(name, arguments)
        summary = system.split("<plan>", 1)[-1].split("</plan>", 1)[0] if "<plan>" in system else ""
        if skip_last:  # a sloppy episode also forgets to tell the user what the plan says
            summary = ""
        return text(("I have completed the steps of the plan. " + summary).strip())


def _summary(task: Any) -> str:
    """The plan's text: what to do and, where the task has some, what to tell the user."""
    info = task.evaluation_criteria.communicate_info or []
    return "Do the steps below." + (" Tell the user: " + "; ".join(info) if info else "")
