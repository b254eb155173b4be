"""The adversarial leak corpus (issue 23, item 4): deterministic, every class and kind
represented per domain, planted values really written and really non-public, clean cases free
of supervision-only values, and the fragment-narrowing helpers."""

from __future__ import annotations

import collections
import functools
import json

import pytest

from leakbench import adversary_corpus as leak_adversary
from leakbench.adversary import clean, leaky, records, structural
from leakbench.adversary.canon import Public
from leakbench.fragments import narrowing, surviving_fragments

# Kinds a domain has no material for (retail's DB has no dates or times).
NOT_IN = {("retail", "language", "date_time_words"), ("retail", "derived", "time_date")}


@functools.lru_cache(maxsize=None)
def sample():
    return leak_adversary.build(seed=3, limit=6, scale=0.25)


def _tasks():
    return {(t.domain, t.task_id): t for d in leak_adversary.DOMAINS
            for t in leak_adversary.tasks_for(d, 3, 6)}


@pytest.mark.slow
def test_deterministic_for_a_seed():
    again = leak_adversary.build(seed=3, limit=6, scale=0.25)
    assert json.dumps(again, sort_keys=True) == json.dumps(sample(), sort_keys=True)
    assert json.dumps(leak_adversary.build(seed=4, domains=("retail",), limit=3, scale=0.1)) != json.dumps(sample())


def test_every_class_in_every_domain_and_planted_written():
    cases = sample()
    per = collections.Counter((c["domain"], c["class"]) for c in cases)
    for d in leak_adversary.DOMAINS:
        for cls in list(leaky.KINDS) + ["clean", "structural", "order_after", "record_position"]:
            assert per[(d, cls)] >= 2, (d, cls)
    for d, cls in [("airline", "record_state"), ("retail", "record_state"), ("retail", "record_option"),
                   ("airline", "record_rank"), ("retail", "record_rank"), ("telecom", "device")]:
        assert per[(d, cls)] >= 1, (d, cls)  # each database class where the domain has its material
    kinds = {c["kind"] for c in cases if not c["leak"]}
    assert set(structural.KINDS) <= kinds  # the plan-structural clean classes
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids))
    for c in cases:
        assert c["env"] == "tau2" and set(c["p0"]) == {"plan", "tool_chain"}
        if c["leak"]:
            assert c["planted"] and all(p["written"] in c["rationale"] for p in c["planted"]), c["id"]
            assert all(p["type"] in ("id", "amount", "date", "time", "name", "count", "sequence", "text")
                       for p in c["planted"])
        else:
            assert "planted" not in c


def test_planted_absent_from_public_and_clean_is_clean():
    tasks = _tasks()
    for c in sample():
        task = tasks[(c["domain"], c["task_id"])]
        assert (c["opening_request"], c["p0"]) == (task.opening, task.p0)
        public = task.public  # view text + opening request + p0, in canon's forms
        if c["leak"]:
            for p in c["planted"]:
                if p["type"] in ("id", "amount", "date", "time", "name"):
                    assert not public.has(p["value"]), (c["id"], p)
                assert leaky.absent(p, task)
        else:
            assert clean.is_clean(c["rationale"], task), c["id"]
            assert not any(Public(c["rationale"], joined=True).has(s) for s in task.secret)


def test_the_independent_checks_catch_a_planted_value():
    task = next(iter(_tasks().values()))
    secret = sorted(s for s in task.secret if len(s) >= 4)[0]
    assert not clean.is_clean(f"Use {secret} in step 2.", task)
    assert not clean.is_clean(f"Use {' '.join(secret)} in step 2.", task)  # spaced out
    assert clean.is_clean("Confirm with the user before step 2.", task)


def test_narrowing_and_surviving_fragments():
    universe = {"reservation_id": ["Q69X3R", "Q69AB1", "ZZ1234", "EHGLP3"], "user_id": ["mia_li_3668"]}
    assert narrowing("q69", "Q69X3R", universe) == 2
    assert narrowing("Q-6-9", "Q69X3R", universe) == 2
    assert narrowing("x3r", "q69x3r", universe) == 1
    assert narrowing("36", "mia_li_3668", universe) == 1  # only the user ids count for a user id
    assert narrowing("", "Q69X3R", universe) == 0
    assert surviving_fragments("the one ending in X3R, [REDACTED]", "Q69X3R") == ["x3r"]
    assert "q69" in surviving_fragments("reservation Q 6 9 then", "Q69X3R")
    assert surviving_fragments("nothing here", "Q69X3R") == []
    # a capitalised word of the critique's language is that word; the ID's letters as written count
    assert surviving_fragments("- Se trata de la cuarta reserva.", "SE9KEL") == []
    assert surviving_fragments("the one starting SE, [REDACTED]", "SE9KEL") == ["se"]
    assert surviving_fragments("it starts with se", "SE9KEL") == ["se"]


@pytest.mark.slow
def test_full_corpus_balance_and_committed_file():
    cases = leak_adversary.build(seed=0)
    assert 7000 <= len(cases) <= 8000
    assert sum(not c["leak"] for c in cases) >= 0.3 * len(cases)
    per = collections.Counter((c["domain"], c["class"], c["kind"]) for c in cases)
    for d in leak_adversary.DOMAINS:
        for cls, kinds in list(leaky.KINDS.items()) + [("clean", {**clean.KINDS, **structural.KINDS})]:
            for kind in kinds:
                if (d, cls, kind) not in NOT_IN:
                    assert per[(d, cls, kind)] >= 4, (d, cls, kind)
    committed = [json.loads(line) for line in leak_adversary.OUT.read_text(encoding="utf-8").splitlines()]
    assert committed == json.loads(json.dumps(cases))
