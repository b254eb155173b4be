"""The provenance audit's fast paths read exactly what the plain reading does.

The audit runs once an episode, over the whole view (a policy of thousands of words) and every
tool result; its first version read the view twice an episode and compared every token with
every date and number before it. The faster code (the view's shared part read once a process,
span look-ups by bisection, ASCII text not normalised) must give the same keys and words, or the
records would change. The oracle below is that first version, kept here verbatim.
"""

from __future__ import annotations

import json
import re
import unicodedata

import pytest

from critique import provenance
from critique.provenance import Observed, text_keys, text_values
from envs.base import TaskSelection, TaskView
from envs.tau2 import Tau2Environment
from envs.tau2 import tasks as tau2_tasks


# ---- the oracle: the audit's first, plain reading ------------------------------------------------

def _plain_fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def _plain_inside(span, taken) -> bool:
    return any(a <= span[0] and span[1] <= b for a, b in taken)


def _plain_text_values(text: str):
    text = _plain_fold(text)
    found, taken = [], []
    for match, key in provenance._dates(text):
        found.append((match.start(), match.group(0), {key}))
        taken.append(match.span())
    for match in provenance._NUMBER.finditer(text):
        if not _plain_inside(match.span(), taken) and (keys := provenance.scalar_keys(match.group(0))):
            found.append((match.start(), match.group(0), keys))
            taken.append(match.span())
    for match in provenance._ID.finditer(text):
        token = match.group(0)
        if _plain_inside(match.span(), taken) or provenance._number(token) is not None:
            continue
        if any(ch.isdigit() for ch in token) or "_" in token:
            if (key := provenance._id_key(token)) is not None:
                found.append((match.start(), token, {key}))
    return [(span, keys) for _, span, keys in sorted(found, key=lambda f: f[0])]


def _plain_words(text: str) -> str:
    return " " + " ".join(provenance._WORD.findall(_plain_fold(text).lower())) + " "


def _plain_observed(text: str) -> tuple[set, list[str]]:
    return {k for _, keys in _plain_text_values(text) for k in keys}, [_plain_words(text)]


# ---- texts to read -------------------------------------------------------------------------------

CRAFTED = [
    "",
    "Reservation #W2378156 for $1,270.50 on 2024-05-15; refund 1270.5 USD by May 15th, 2024.",
    "dates 2024-05-15 2024-05-16, 15 May 2024, May 16 and the 3rd of June; ids HAT001 t-800 a.b.c",
    "numbers inside dates: 2024-05-15T10:30 and 05/15, ranges 10-20, 1,234,567.89 and 1.2.3",
    "non-ASCII: ﬁve ＄１２３ café Ｗ２３７８ soft\u00adhyphen zero\u200bwidth ΟΔΟΣ Σ final sigma",
    "\u0301 starts with a combining mark; user_id raj_sanchez_7340 and item 8384507844",
    "version 1.2.3-beta.4 costs 12.5, codes ABC/123 and x:y:z 44.",
]


def _db_text(domain: str, limit: int = 40_000) -> str:
    from tau2.utils import DATA_DIR

    path = DATA_DIR / "tau2" / "domains" / domain / "db.json"
    return path.read_text(encoding="utf-8")[:limit]  # thousands of dates, amounts and ids


@pytest.mark.parametrize("text", CRAFTED)
def test_text_values_agree_with_the_plain_reading_on_crafted_text(text):
    assert text_values(text) == _plain_text_values(text)
    assert provenance._words(text) == _plain_words(text)


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_text_values_agree_with_the_plain_reading_on_tau2_data(domain):
    policy, tools = tau2_tasks.policy_and_tools(domain)
    for text in (policy, json.dumps(tools, sort_keys=True), _db_text(domain)):
        assert text_values(text) == _plain_text_values(text)


def _view(policy: str, request: str | None, tools: list | None = None) -> TaskView:
    return TaskView(env="tau2", domain="mock", task_id="t", instructions="Help the user.",
                    policy=policy, tools=tools if tools is not None else
                    [{"type": "function", "function": {"name": "get_order", "parameters": {}}}],
                    opening_request=request)


@pytest.mark.parametrize("view", [
    _view("Flights leave on May", "15 2024, order #W123 for Σ"),
    _view("Refunds within 24 hours.", "\u0301combining first, then 2024-05-15"),
    _view("policy", None),
    _view("policy", ""),
    _view("policy ending in a date 2024-01-01", "order W2378156\nsecond line 99"),
    _view("no tools", "hello 123", tools=[]),
])
def test_the_view_read_in_two_parts_is_the_view_read_whole(view):
    seen = Observed.of_view(view)
    assert (seen.keys, seen.texts) == _plain_observed(view.text())


@pytest.mark.parametrize("domain", ["mock", "airline", "retail"])
def test_every_tau2_view_read_in_two_parts_is_the_view_read_whole(domain):
    env = Tau2Environment()
    for task_id in env.select(TaskSelection(domain=domain))[:25]:
        view, _ = env.load(domain, task_id)
        view = view.model_copy(update={"opening_request": f"Hi, order #{task_id}99 on May 3."})
        seen = Observed.of_view(view)
        assert (seen.keys, seen.texts) == _plain_observed(view.text()), task_id


def test_text_keys_is_the_union_of_the_values_keys():
    text = CRAFTED[1]
    assert text_keys(text) == {k for _, keys in _plain_text_values(text) for k in keys}
    assert ("id", "w2378156") in text_keys(text) and ("num", 1270.5) in text_keys(text)


def test_only_format_characters_are_dropped_from_non_ascii_text():
    assert provenance._fold("a\u200bb\u00adc café") == "abc café"
    assert provenance._fold("plain ascii") == "plain ascii"
    assert re.fullmatch(r"\d+", provenance._fold("１２３"))
