"""One stored episode, shaped for reading: plans p0 → p1 with their differences marked, the
critique and what the leak guard did, the judge's verdicts, the conversation with its tool calls,
and the benchmark's own verdict.

Everything here is plain data for the explorer's templates (which escape it). Each section says
who saw it: the tested model saw its view, p0, p1, the critique after the guard and the
conversation; the reference actions, outcome checks, milestones, minefields, the judge's
reasoning and what the guard removed come from the hidden supervision and are labelled so.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from typing import Any

from critique.judge import read_judgement
from evrcore.critique import ERROR_CODES
from runtime.folder.records import EpisodeRecord
from runtime.reports.summary import arm

Segment = tuple[str, str]
"""A piece of text and how it changed: ``("same" | "del" | "ins", text)``."""

_WORDS = re.compile(r"\s+|[^\s]+")


def episode_anchor(record_id: str) -> str:
    """A short, stable HTML id for an episode (record ids hold characters ids cannot)."""
    return "ep-" + hashlib.sha256(record_id.encode()).hexdigest()[:12]


def diff_words(before: str, after: str) -> tuple[list[Segment], list[Segment]]:
    """Word-level differences: ``before`` with its removed words marked ``del``, ``after`` with
    its added words marked ``ins``; unchanged words are ``same`` on both sides."""
    a, b = _WORDS.findall(before or ""), _WORDS.findall(after or "")
    left: list[Segment] = []
    right: list[Segment] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            left.append(("same", "".join(a[i1:i2])))
            right.append(("same", "".join(b[j1:j2])))
            continue
        if i2 > i1:
            left.append(("del", "".join(a[i1:i2])))
        if j2 > j1:
            right.append(("ins", "".join(b[j1:j2])))
    return _merge(left), _merge(right)


def _merge(segments: list[Segment]) -> list[Segment]:
    out: list[Segment] = []
    for kind, text in segments:
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        elif text:
            out.append((kind, text))
    return out


def _step_line(step: dict[str, Any]) -> str:
    line = str(step.get("name", "?"))
    if step.get("parameter_description"):
        line += f"({step['parameter_description']})"
    if step.get("reason"):
        line += f" — {step['reason']}"
    return line


def diff_lines(before: list[str], after: list[str]) -> tuple[list[Segment], list[Segment]]:
    """Line-level differences of two tool chains, marked as :func:`diff_words` does."""
    left: list[Segment] = []
    right: list[Segment] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes():
        if op == "equal":
            left += [("same", s) for s in before[i1:i2]]
            right += [("same", s) for s in after[j1:j2]]
        else:
            left += [("del", s) for s in before[i1:i2]]
            right += [("ins", s) for s in after[j1:j2]]
    return left, right


def plans(p0: dict[str, Any] | None, p1: dict[str, Any] | None) -> dict[str, Any] | None:
    """p0 alone, or p0 and p1 side by side with what the revision removed and added."""
    if p0 is None and p1 is None:
        return None
    chain0 = [_step_line(s) for s in (p0 or {}).get("tool_chain", [])]
    chain1 = [_step_line(s) for s in (p1 or {}).get("tool_chain", [])]
    if p1 is None:
        return {"p0": {"text": [("same", p0.get("plan", ""))], "chain": [("same", s) for s in chain0],
                       "unknown": p0.get("unknown_tools", [])}, "p1": None, "changed": False}
    text0, text1 = diff_words((p0 or {}).get("plan", ""), p1.get("plan", ""))
    steps0, steps1 = diff_lines(chain0, chain1)
    return {"p0": {"text": text0, "chain": steps0, "unknown": (p0 or {}).get("unknown_tools", [])},
            "p1": {"text": text1, "chain": steps1, "unknown": p1.get("unknown_tools", [])},
            "changed": (p0 or {}).get("plan") != p1.get("plan") or chain0 != chain1}


def critique(record: EpisodeRecord) -> dict[str, Any] | None:
    """The critique as the reviser read it, and the guard's outcome (supervision-derived)."""
    if record.critique is None:
        return None
    c = record.critique
    errors = c.get("errors") or {}
    flags = [{"code": code, "on": bool(errors.get(code)), "meaning": meaning}
             for code, meaning in ERROR_CODES.items()] if errors else []
    guard = record.guard or {}
    return {"grade": c.get("grade"), "flags": flags, "rationale": c.get("rationale", ""),
            "note": record.critique_note,
            "guard": {"fired": bool(guard.get("fired")), "action": guard.get("action", "–"),
                      "attempts": guard.get("critic_attempts"),
                      "findings": [f"{f.get('kind', '?')}: {f.get('text', '')}" for f in guard.get("findings", [])],
                      "removed": list(guard.get("removed", []))} if guard else None,
            "channel": _channel(record.channel)}


def _channel(channel: dict[str, Any] | None) -> dict[str, Any] | None:
    """A sealed critique's findings and its channel's capacity (``critique.channel``)."""
    if not channel:
        return None
    findings = [(f"step {f['step']}" if "step" in f else f"missing after step {f.get('missing_after')}")
                + f": {f.get('flag')} {f.get('aspect')}" for f in channel.get("findings", [])]
    return {"findings": findings, "max_bits": channel.get("max_bits"), "used_bits": channel.get("used_bits"),
            "steps": channel.get("steps")}


def judgement(stored: dict[str, Any] | None) -> dict[str, Any] | None:
    """The plan judge's verdict (it reads the supervision; the tested model never sees it),
    either stored flag shape, settled by the verdict rule (the note says when it was)."""
    if not stored:
        return None
    result = read_judgement(stored)
    if result is None or result.judgement is None:
        return {"failure": stored.get("failure") or "no judgement", "attempts": stored.get("attempts")}
    j = result.judgement
    return {"is_correct": j.is_correct, "grade": j.grade, "errors": j.errors.active(),
            "reasoning": j.reasoning, "attempts": result.attempts, "failure": None, "note": result.note}


def _as_text(value: Any) -> str:
    """Stored text as it is; anything else as compact JSON. JSON is indented in the browser when
    its panel opens (indenting here costs more than the rest of the page together)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def looks_like_json(text: str) -> bool:
    return text.lstrip()[:1] in ("{", "[")


def conversation(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as turns: who spoke (agent, simulated user, tool, system), what they said,
    and each tool call with its arguments and the result it got."""
    results = {m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"}
    asked = {c.get("id") for m in messages for c in m.get("tool_calls") or []}
    turns = []
    for m in messages:
        role = m.get("role", "?")
        if role == "tool" and m.get("tool_call_id") in asked:
            continue  # shown under the call it answers
        calls = []
        for call in m.get("tool_calls") or []:
            fn = call.get("function", {})
            answer = results.get(call.get("id"))
            calls.append({"id": call.get("id"), "name": fn.get("name", "?"),
                          "arguments": _as_text(fn.get("arguments", "")),
                          "result": None if answer is None else _as_text(answer.get("content", ""))})
        turns.append({"role": role, "who": _WHO.get(role, role), "content": _as_text(m.get("content") or ""),
                      "calls": calls})
    return turns


_WHO = {"assistant": "agent (tested model)", "user": "simulated user", "tool": "tool result",
        "system": "system"}


def evaluation(record: EpisodeRecord) -> dict[str, Any]:
    """The benchmark's verdict: the score's components (public) and the checks behind them
    (τ² DB/action/communicate/assertion checks, ToolSandbox milestones and minefields), which
    come from the hidden supervision."""
    info = record.score_info or {}
    reward = info.get("reward_info") if isinstance(info.get("reward_info"), dict) else None
    checks: list[dict[str, Any]] = []
    if reward is not None:  # τ²-bench
        db = reward.get("db_check")
        if db:
            checks.append({"name": "DB check", "ok": db.get("db_match"), "detail": _as_text(db)})
        for c in reward.get("action_checks") or []:
            action = c.get("action", {})
            arguments = (action.get("arguments") or {}).items()
            args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments)
            checks.append({"name": f"reference action: {action.get('name', '?')}({args})",
                           "ok": c.get("action_match"), "detail": None})
        for c in reward.get("communicate_checks") or []:
            checks.append({"name": f"communicate: {c.get('info', '')}", "ok": c.get("met"),
                           "detail": c.get("justification")})
        for c in reward.get("env_assertions") or []:
            checks.append({"name": "env assertion", "ok": c.get("met"), "detail": _as_text(c.get("env_assertion", c))})
        for c in reward.get("nl_assertions") or []:
            checks.append({"name": f"NL assertion: {c.get('nl_assertion', '')}", "ok": c.get("met"),
                           "detail": c.get("justification")})
    elif "milestone_mapping" in info:  # ToolSandbox
        for kind in ("milestone", "minefield"):  # index → (snapshot index, similarity)
            for index, (snapshot, similarity) in (info.get(f"{kind}_mapping") or {}).items():
                if kind == "milestone":  # met, missed, or partly matched (shown as its similarity)
                    ok = True if similarity >= 1.0 else False if similarity <= 0.0 else None
                else:  # a minefield is avoided when nothing matched it
                    ok = similarity <= 0.0
                checks.append({"name": f"{kind} {index}: snapshot {snapshot}, similarity {similarity:.2f}",
                               "ok": ok, "detail": None})
        if info.get("exception"):
            checks.append({"name": f"exception: {info.get('exception_type')}", "ok": False,
                           "detail": info["exception"]})
    return {"breakdown": record.breakdown, "checks": checks, "raw": _as_text(info) if info else ""}


def provenance(record: EpisodeRecord) -> dict[str, Any] | None:
    """The provenance audit's unexplained values (``None``: the record has no audit)."""
    audit = record.provenance
    if audit is None:
        return None
    return {"unexplained": [{"turn": u.get("turn"), "where": u.get("where"), "tool": u.get("tool"),
                             "argument": u.get("argument"), "value": u.get("value"),
                             "canonical": u.get("canonical")} for u in audit.get("unexplained") or []],
            "checked": audit.get("checked", 0), "supervision_only": audit.get("supervision_only", 0)}


def view(record: EpisodeRecord) -> dict[str, Any]:
    """Everything the episode panel shows."""
    k = record.key
    return {
        "anchor": episode_anchor(record.record_id), "record_id": record.record_id,
        "arm": arm(k.mode, k.strategy), "mode": k.mode, "strategy": k.strategy, "model": k.model,
        "trial": k.trial, "status": record.status, "score": record.score, "score_name": record.score_name,
        "termination": record.termination, "turns": record.turns, "seed": record.seed,
        "error": record.error.model_dump() if record.error else None,
        "opening_request": record.opening_request, "plans": plans(record.p0, record.p1),
        "critique": critique(record), "judge_p0": judgement(record.judge_p0),
        "judge_p1": judgement(record.judge_p1), "conversation": conversation(record.messages),
        "evaluation": evaluation(record), "provenance": provenance(record), "reused": record.reused,
        "usage": dict(record.usage.get("by_purpose") or {}),
        "tokens": _tokens(record.usage.get("total") or {}), "cost": (record.usage.get("total") or {}).get("cost_usd"),
        "timings": record.timings_s, "started_at": record.started_at, "finished_at": record.finished_at,
    }


def _tokens(total: dict[str, Any]) -> int:
    return int(total.get("prompt_tokens", 0) + total.get("completion_tokens", 0))
