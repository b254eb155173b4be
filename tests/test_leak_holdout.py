"""The held-out leak corpus: deterministic, every class in every domain, planted values written
in the rationale, and clean cases public by a check made here from the task view itself."""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("tau2")

from leakbench import holdout_corpus as leak_holdout  # noqa: E402
from leakbench.holdout.facts import all_facts  # noqa: E402
from envs.base import scalar_values  # noqa: E402
from envs.tau2 import Tau2Environment  # noqa: E402

LEAKY = {"encoding", "language", "fragment", "derived", "sequence", "hidden", "semantic"}


@pytest.fixture(scope="module")
def corpus():
    facts = all_facts()
    return facts, leak_holdout.build(0, facts)


@pytest.fixture(scope="module")
def tasks():
    env, cache = Tau2Environment(), {}

    def load(domain, task_id):
        if (domain, task_id) not in cache:
            cache[domain, task_id] = env.load(domain, task_id)
        return cache[domain, task_id]

    return load


def public_text(case, tasks) -> str:
    view, _ = tasks(case["domain"], case["task_id"])
    return "\n".join([view.text(), case["opening_request"], json.dumps(case["p0"])]).lower()


def ascii_digits(text: str) -> str:
    return "".join(str(unicodedata.digit(c)) if c.isdigit() else c for c in unicodedata.normalize("NFKC", text))


def test_build_is_deterministic_and_matches_the_data_file(corpus):
    facts, cases = corpus
    assert leak_holdout.build(0, facts) == cases
    assert leak_holdout.build(1, facts) != cases
    path = leak_holdout.OUT
    if path.exists():
        assert [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] == cases


def test_size_balance_and_class_coverage(corpus):
    _, cases = corpus
    assert 600 <= len(cases) <= 1000
    assert sum(not c["leak"] for c in cases) / len(cases) >= 0.35
    per = Counter((c["class"], c["domain"]) for c in cases if c["leak"])
    for cls in LEAKY:
        for domain in ("airline", "retail", "telecom"):
            assert per[cls, domain] >= 10, (cls, domain)
    assert len({c["id"] for c in cases}) == len(cases)


def test_planted_values_are_written_and_secret(corpus, tasks):
    _, cases = corpus
    types = {"id", "amount", "date", "time", "name", "count", "sequence", "text"}
    for c in cases:
        if not c["leak"]:
            continue
        assert c["planted"], c["id"]
        public = public_text(c, tasks)
        for p in c["planted"]:
            assert p["type"] in types
            assert p["written"] in c["rationale"], c["id"]
            if p["type"] not in ("count", "sequence", "text"):
                assert p["value"].lower() not in public, (c["id"], p["value"])


def test_clean_cases_are_public(corpus, tasks):
    _, cases = corpus
    for c in cases:
        if c["leak"]:
            continue
        public = public_text(c, tasks)
        _, sup = tasks(c["domain"], c["task_id"])
        for cited in c["cited"]:
            assert cited["value"].lower() in public and cited["written"] in c["rationale"], c["id"]
        text = ascii_digits(c["rationale"])
        for run in re.findall(r"\d+", text):
            assert int(run) <= 12 or run in public, (c["id"], run)
        flat = re.sub(r"[^0-9a-z]", "", text.lower())
        for action in sup.reference_actions:
            for value in scalar_values(action.arguments):
                v = value.lower()
                if len(v) < 4 or v in public:
                    continue
                squeezed = re.sub(r"[^0-9a-z]", "", v)
                assert v not in text.lower() and (len(squeezed) < 5 or squeezed not in flat), (c["id"], value)
