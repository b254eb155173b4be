"""The sealed critique's schema, capacity and failure paths: strictly closed answers, an exact
count of them, re-asking then failing, a rationale rendered from the counted answer alone, a
writer that cannot be handed the supervision, a guard that only measures."""

from __future__ import annotations

import inspect
import itertools
import json
import math

import pytest
from pydantic import ValidationError

from critique import channel
from critique.critic import CriticError
from critique.sealed import (
    ASPECTS,
    SealedAnswer,
    SealedAnswerRefused,
    SealedCritic,
    answer_schema,
    max_answers,
    render_rationale,
    write_rationale,
)
from critique.sealed_options import MAX_FINDINGS, SealedOptions
from envs.base import Supervision
from evrcore.chat import ChatReply
from evrcore.critique import GRADES
from evrcore.taxonomy import ERROR_CODES

FLAGS = {"E1": False, "E2": True, "E3": False, "E4": False, "E5": False, "E6": False}


def answer(findings, grade=0.6, errors=FLAGS):
    return {"grade": grade, "errors": dict(errors), "findings": findings}


def valid(data, steps=3) -> SealedAnswer:
    return SealedAnswer.model_validate(data, context={"steps": steps})


def test_a_closed_answer_is_read_and_made_canonical():
    a = valid(answer([{"step": 3, "flag": "E2", "aspect": "termination"},
                      {"missing_after": 0, "flag": "E2", "aspect": "missing_step"},
                      {"step": 3, "flag": "E2", "aspect": "termination"}])).canonical()
    assert [f.model_dump(exclude_none=True) for f in a.findings] == [
        {"missing_after": 0, "flag": "E2", "aspect": "missing_step"},
        {"step": 3, "flag": "E2", "aspect": "termination"}]  # a set: duplicates collapse, order fixed


@pytest.mark.parametrize("bad", [
    answer([], grade=0.5),                                                  # not a grade
    answer([], grade="0.6"),                                                # a string for a number
    {**answer([]), "rationale": "ABC123"},                                 # a field the schema lacks
    answer([{"step": 1, "flag": "E2", "aspect": "argument", "note": "x"}]),  # ... in a finding
    answer([{"step": "1", "flag": "E2", "aspect": "argument"}]),           # a string for a step
    answer([{"step": True, "flag": "E2", "aspect": "argument"}]),          # a bool for a step
    answer([{"step": 0, "flag": "E2", "aspect": "argument"}]),             # steps are 1..n
    answer([{"step": 4, "flag": "E2", "aspect": "argument"}]),             # beyond p0
    answer([{"missing_after": 4, "flag": "E2", "aspect": "missing_step"}]),
    answer([{"step": 1, "missing_after": 1, "flag": "E2", "aspect": "order"}]),  # two positions
    answer([{"flag": "E2", "aspect": "order"}]),                            # none
    answer([{"step": 1, "flag": "E2", "aspect": "the reservation EHGLP3"}]),  # free text in an enum
    answer([{"step": 1, "flag": "E2", "aspect": a} for a in list(ASPECTS)[:MAX_FINDINGS + 1]]),
    {**answer([]), "errors": {**FLAGS, "E2": 1}},                           # 1 is no boolean
])
def test_anything_outside_the_schema_is_refused(bad):
    with pytest.raises(ValidationError):
        valid(bad)


def _walk(schema):
    yield schema
    for value in schema.values():
        for item in (value if isinstance(value, list) else [value]):
            if isinstance(item, dict):
                yield from _walk(item)


@pytest.mark.parametrize("steps", [0, 1, 5])
def test_the_schema_has_no_free_string_and_bounds_every_integer(steps):
    schema = answer_schema(steps)
    kinds = {node.get("type") for node in _walk(schema)}
    assert "string" not in kinds and "integer" not in kinds and "number" not in kinds
    positions = [alt["properties"] for alt in schema["properties"]["findings"]["items"]["anyOf"]]
    allowed = {k: v["enum"] for p in positions for k, v in p.items() if k in ("step", "missing_after")}
    assert allowed.get("step", []) == list(range(1, steps + 1))
    assert allowed["missing_after"] == list(range(steps + 1))


def test_the_schema_is_a_grammar_that_admits_no_string():
    from runtime.llm.json_grammar import json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(answer_schema(5))
    root = gbnf.split("\n")
    used = " ".join(line.split("::=", 1)[1] for line in root if "::=" in line and not line.startswith("char"))
    assert " char" not in used  # no rule of the answer reaches a string's characters


def _brute_force(steps: int, max_findings: int) -> int:
    """Every (grade, flags, findings set) that the validator accepts and that is coherent — what
    the critic's answer is once asked again or settled."""
    positions = [{"step": k} for k in range(1, steps + 1)] + [{"missing_after": k} for k in range(steps + 1)]
    findings = [{**p, "flag": f, "aspect": a} for p in positions for f in ERROR_CODES for a in ASPECTS]
    count = 0
    for bits in itertools.product((False, True), repeat=6):
        errors = dict(zip(ERROR_CODES, bits))
        for grade in GRADES:
            for j in range(max_findings + 1):
                for chosen in itertools.combinations(findings, j):
                    try:
                        a = valid({"grade": grade, "errors": errors, "findings": list(chosen)}, steps)
                    except ValidationError:
                        continue
                    count += a.incoherent() is None
    return count


def test_the_capacity_counts_exactly_the_answers_the_validator_accepts():
    assert channel.answers(0, 1, len(ASPECTS)) == _brute_force(0, 1)
    assert channel.answers(1, 1, len(ASPECTS)) == _brute_force(1, 1)


def test_capacity_figures():
    assert channel.answers(5, 0, len(ASPECTS)) == 316  # 1 + 63 × 5
    assert channel.bits(5, 0, len(ASPECTS)) == round(math.log2(316), 2)
    assert channel.bits(5, MAX_FINDINGS, len(ASPECTS)) == round(math.log2(max_answers(5)), 2)
    assert channel.bits(4, MAX_FINDINGS, len(ASPECTS)) < channel.bits(5, MAX_FINDINGS, len(ASPECTS))


class Replies:
    """A chat model answering from a list, keeping what it was sent."""

    def __init__(self, *answers: str):
        self.answers = list(answers)
        self.sent: list[list[dict]] = []

    def complete(self, messages, tools=None, json_schema=None, **kwargs):
        self.sent.append(messages)
        return ChatReply(content=self.answers.pop(0))


@pytest.fixture(scope="module")
def task():
    from envs.tau2 import Tau2Environment
    from evrcore.plan import Plan

    view, supervision = Tau2Environment().load("airline", "1")
    plan = Plan.from_apb({"plan": "p", "tool_chain": [{"name": "get_user_details"}, {"name": "cancel_reservation"}]})
    return view.model_copy(update={"opening_request": "I want to cancel a trip."}), supervision, plan


def test_an_answer_outside_the_schema_is_asked_again_then_fails_the_critique(task):
    view, supervision, plan = task
    outside = json.dumps({**answer([]), "EHGLP3_field": "cancel EHGLP3"})
    critic = Replies(outside, outside, outside)
    with pytest.raises(SealedAnswerRefused, match="sealed schema") as refused:
        SealedCritic(critic).critique(view, supervision, plan)
    assert len(critic.sent) == 3 and isinstance(refused.value, CriticError)
    assert "EHGLP3" not in str(refused.value) and "input_value" not in str(refused.value)
    assert "a field the schema does not have" in str(refused.value)


def test_a_retried_answer_goes_through_and_the_writer_never_sees_the_supervision(task):
    view, supervision, plan = task
    good = json.dumps(answer([{"missing_after": 2, "flag": "E2", "aspect": "missing_step"}]))
    critic, writer = Replies('{"grade": 0.6}', good), Replies(json.dumps({"rationale": "Add the last step."}))
    result = SealedCritic(critic, writer=writer, options=SealedOptions(writer="tested")).critique(
        view, supervision, plan)
    assert result.critique.rationale == "Add the last step." and result.critique.errors.E2
    assert result.channel["critic_attempts"] == 2 and result.channel["findings"] == [
        {"missing_after": 2, "flag": "E2", "aspect": "missing_step"}]
    assert 0 < result.channel["used_bits"] < result.channel["max_bits"]
    sent_to_writer = json.dumps(writer.sent)
    hidden = supervision.supervision_only_values(view)
    assert hidden and not [v for v in hidden if v in sent_to_writer]
    assert "hidden_reference" not in sent_to_writer and "hidden_reference" in json.dumps(critic.sent)
    types = [p.annotation for p in inspect.signature(write_rationale).parameters.values()]
    assert not any("Supervision" in str(t) for t in types) and Supervision not in types


def test_an_incoherent_answer_is_asked_again_then_settled_by_its_flags(task):
    view, supervision, plan = task
    stray = json.dumps(answer([{"step": 1, "flag": "E5", "aspect": "argument"},
                               {"step": 2, "flag": "E2", "aspect": "termination"}], grade=1.0))
    critic = Replies(stray, stray, stray)
    result = SealedCritic(critic).critique(view, supervision, plan)
    assert len(critic.sent) == 3 and "unset flag" in result.note
    assert result.critique.grade == 0.8  # E2 set: at most 0.8
    assert result.channel["findings"] == [{"step": 2, "flag": "E2", "aspect": "termination"}]


def test_the_default_rationale_is_the_counted_answer_rendered_with_no_model(task):
    view, supervision, plan = task
    good = json.dumps(answer([{"step": 2, "flag": "E2", "aspect": "termination"}]))
    critic = Replies(good)
    result = SealedCritic(critic).critique(view, supervision, plan)
    assert len(critic.sent) == 1  # the critic's call alone: no writer call
    closed = valid(json.loads(good), steps=2).canonical()
    assert result.critique.rationale == render_rationale(plan, closed)  # a function of the answer
    assert "cancel_reservation" in result.critique.rationale and "termination" in result.critique.rationale
    assert result.channel["writer"] == "rendered" and result.channel["writer_attempts"] == 0
    assert result.channel["max_findings"] == SealedOptions().findings
    assert "critic_answers" not in result.channel  # the critic's raw answers are not kept


@pytest.mark.parametrize("bad", [
    "[" * 200_000 + "]" * 200_000,                                        # nested past any parser
    json.dumps({**answer([]), "findings": [[[[[[{"step": 1}]]]]]]}),      # nested past the schema
    json.dumps({**answer([]), "pad": "EHGLP3 " * 500_000}),               # huge (3.5 MB)
    "The reservation is EHGLP3, cancel it.",                              # no JSON
    "1e999999",                                                           # JSON, not an object
])
def test_a_nested_huge_or_non_json_answer_is_asked_again_then_refused_never_internal(task, bad):
    view, supervision, plan = task
    critic = Replies(bad, bad, bad)
    with pytest.raises(SealedAnswerRefused) as refused:
        SealedCritic(critic).critique(view, supervision, plan)
    assert len(critic.sent) == 3
    message = str(refused.value)
    assert "EHGLP3" not in message and len(message) < 400
    from runtime.episode.failures import classify

    assert classify(refused.value) == {"kind": "model_output", "cause": "malformed_output"}


def test_the_findings_cap_bounds_the_schema_the_answer_and_the_capacity(task):
    view, supervision, plan = task
    three = [{"step": 1, "flag": "E2", "aspect": a} for a in ("goal", "order", "argument")]
    critic = Replies(json.dumps(answer(three)), json.dumps(answer(three[:2])))
    result = SealedCritic(critic, options=SealedOptions(findings=2)).critique(view, supervision, plan)
    assert len(critic.sent) == 2 and len(result.channel["findings"]) == 2  # 3 > K: asked again
    assert answer_schema(2, 2)["properties"]["findings"]["maxItems"] == 2
    assert result.channel["max_bits"] == channel.bits(2, 2, len(ASPECTS))
    assert channel.bits(5, 2, len(ASPECTS)) < 6 * math.log2(36) < channel.bits(5, 6, len(ASPECTS))
    with pytest.raises(ValidationError):
        SealedOptions(findings=7)


class Auditor:
    """A leak auditor that names fixed spans, keeping what it read."""

    def __init__(self, spans):
        self.spans, self.read = spans, []

    def audit(self, supervision, rationale):
        from critique.guard.guard_outcome import LeakFinding

        self.read.append(rationale)
        return [LeakFinding(kind="auditor", text=s, written=s) for s in self.spans if s in rationale]


def test_the_guard_and_auditor_only_measure_a_sealed_rationale(task):
    view, supervision, plan = task
    good = json.dumps(answer([{"step": 1, "flag": "E2", "aspect": "missing_step"}]))
    auditor = Auditor(["missing step", "step 1"])
    result = SealedCritic(Replies(good), auditor=auditor).critique(view, supervision, plan)
    assert auditor.read and result.guard.fired and result.guard.action == "measured"
    assert {f.text for f in result.guard.auditor_findings} == {"missing step", "step 1"}
    assert result.critique.rationale == auditor.read[0] and "[redacted]" not in result.critique.rationale


def test_a_guard_asked_to_act_replaces_the_whole_text_and_the_bit_is_counted(task):
    view, supervision, plan = task
    good = json.dumps(answer([{"step": 1, "flag": "E2", "aspect": "missing_step"}]))
    written = "Step one misses the ZZTOP1 check; otherwise fine."
    options = SealedOptions(writer="tested", guard="replace")
    result = SealedCritic(Replies(good), writer=Replies(json.dumps({"rationale": written})),
                          auditor=Auditor(["ZZTOP1"]), options=options).critique(view, supervision, plan)
    closed = valid(json.loads(good), steps=2).canonical()
    assert result.critique.rationale == render_rationale(plan, closed) and result.guard.action == "replaced"
    assert result.channel["replaced"] and result.channel["max_bits"] == channel.bits(2, 2, len(ASPECTS)) + 1
    measured = SealedCritic(Replies(good), writer=Replies(json.dumps({"rationale": written})),
                            auditor=Auditor(["ZZTOP1"]), options=SealedOptions(writer="tested"))
    kept = measured.critique(view, supervision, plan)
    assert kept.critique.rationale == written and kept.guard.action == "measured"
    assert kept.channel["max_bits"] == channel.bits(2, 2, len(ASPECTS))  # measuring adds nothing


def test_no_option_puts_the_writer_on_the_critics_model():
    from runtime.llm.roles import PURPOSES
    from runtime.validate import parser

    assert PURPOSES["writer"].role == "model"
    with pytest.raises(ValidationError):
        SealedOptions(writer="critic")
    with pytest.raises(SystemExit) as refused:
        parser().parse_args(["--sealed-writer", "critic"])
    assert refused.value.code == 2
