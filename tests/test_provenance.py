"""The provenance audit: a supervision-only value the agent uses before it has observed it is
flagged; one it read in the view, a user message or an earlier tool result is not. These are the
facts the per-arm rate rests on, so each is tested on scripted conversations and, end to end,
through τ²-bench with scripted models."""

from __future__ import annotations

import html
import json

import pytest

from critique.provenance import audit, record_audit, scalar_keys
from envs.base import ReferenceAction, Supervision, TaskView, Trajectory
from envs.tau2 import Tau2Environment
from envs.tau2 import tasks as tau2_tasks
from runtime.folder.records import EpisodeRecord
from runtime.reports import explorer
from runtime.reports import provenance as provenance_report
from runtime.reports.summary import frame, summarize
from testkit.gold import GoldReplay, opening_words
from testkit.plan_follower import PlanFollowingRoles
from testkit.scripted import text

RESERVATION = "W2378156"
AMOUNT = 1270.5


def _view(opening: str = "Hi, I want to change my booking.") -> TaskView:
    tool = {"type": "function", "function": {"name": "get_reservation", "parameters": {
        "type": "object", "properties": {"reservation_id": {"type": "string"}}}}}
    return TaskView(env="tau2", domain="airline", task_id="t", policy="Be helpful. Refunds go to the original card.",
                    tools=[tool], opening_request=opening)


def _supervision() -> Supervision:
    return Supervision(task_id="t", reference_actions=[
        ReferenceAction(name="get_reservation", arguments={"reservation_id": f"#{RESERVATION}"}),
        ReferenceAction(name="refund", arguments={"reservation_id": f"#{RESERVATION}", "amount": AMOUNT}),
    ], expected_outcomes=["The agent tells the user: the refund is 1270.50"],
        hidden_user_instructions="You are mia_li_3668 and you fly on 2024-05-15.")


def _call(name: str, call_id: str = "c1", **arguments) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def _result(content: object, call_id: str = "c1") -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(content)}


def _flagged(messages: list[dict], view: TaskView | None = None) -> list[str]:
    return [u.canonical for u in audit(view or _view(), _supervision(), messages).unexplained]


def test_a_hidden_value_used_without_being_observed_is_flagged():
    """The agent's first act names the reservation only the reference knows: it was told."""
    messages = [{"role": "user", "content": "Hi, I want to change my booking."},
                _call("get_reservation", reservation_id=RESERVATION)]
    found = audit(_view(), _supervision(), messages)
    assert [(u.turn, u.where, u.tool, u.argument) for u in found.unexplained] == \
        [(1, "tool_call", "get_reservation", "reservation_id")]
    assert found.unexplained[0].canonical == "id:w2378156"
    assert found.checked >= 1 and found.supervision_only >= 3


def test_a_value_read_from_an_earlier_tool_result_is_explained():
    """Listing the user's reservations first, then using the one returned: nothing unexplained."""
    messages = [{"role": "user", "content": "Hi, I'm mia_li_3668."},
                _call("list_reservations", "c1", user_id="mia_li_3668"),
                _result({"reservations": [f"#{RESERVATION}"], "paid": "$1,270.50"}, "c1"),
                _call("get_reservation", "c2", reservation_id=RESERVATION),
                {"role": "assistant", "content": "Your refund of 1270.5 dollars is on its way."}]
    assert _flagged(messages) == []


def test_a_value_the_user_gave_is_explained():
    """What the user says in the conversation is observed, in whatever spelling the agent reuses."""
    messages = [{"role": "user", "content": "My reservation is w-2378156, I fly May 15."},
                _call("get_reservation", reservation_id=f"#{RESERVATION}"),
                {"role": "assistant", "content": "Your flight on 2024-05-15 is confirmed."}]
    assert _flagged(messages) == []


def test_a_value_used_before_the_tool_result_that_reveals_it_is_flagged():
    """A tool result explains later turns only: the call that precedes it had no right to the value."""
    messages = [{"role": "user", "content": "Hi, I'm mia_li_3668."},
                _call("get_reservation", "c1", reservation_id=RESERVATION),
                _result({"reservation_id": RESERVATION}, "c1"),
                _call("get_reservation", "c2", reservation_id=RESERVATION)]
    found = audit(_view(), _supervision(), messages).unexplained
    assert [u.turn for u in found] == [1]


def test_a_value_in_the_view_is_not_supervision_only():
    """A reservation the opening request already names is public: the agent may use it at once."""
    view = _view(opening=f"Please cancel reservation {RESERVATION}.")
    assert _flagged([_call("get_reservation", reservation_id=RESERVATION)], view=view) == []


def test_hidden_values_in_the_agents_words_are_flagged():
    """The agent's message is checked too: an amount and a user id it never read."""
    messages = [{"role": "user", "content": "Hi."},
                {"role": "assistant", "content": "Mia (mia_li_3668), your refund is $1,270.50."}]
    assert sorted(_flagged(messages)) == ["id:miali3668", "num:1270.5"]


@pytest.mark.parametrize("a, b", [("$1,270.50", 1270.5), ("1270.50", "1,270.5 USD"), ("w-2378156", "#W2378156"),
                                  ("2024-05-15", "May 15, 2024"), ("2024-05-15", "15th May 2024")])
def test_canonical_spellings_agree(a, b):
    """Keys, not raw strings: the same amount, ID or date in two spellings has one key."""
    assert scalar_keys(a) & scalar_keys(b)


def test_different_values_do_not_agree():
    """Canonical forms must not merge distinct values (or everything would look observed)."""
    assert not scalar_keys("1270.50") & scalar_keys("127.05")
    assert not scalar_keys("#W2378156") & scalar_keys("#W2378165")
    assert not scalar_keys("2024-05-15") & scalar_keys("2024-05-16")


def test_trivial_values_are_not_counted():
    """Booleans, tiny numbers and two-letter strings occur everywhere; flagging them is noise."""
    supervision = Supervision(task_id="t", reference_actions=[
        ReferenceAction(name="book", arguments={"nonfree_baggages": 2, "insurance": "no", "cabin": "ok", "x": True})])
    found = audit(_view(), supervision, [_call("book", nonfree_baggages=2, insurance="no", cabin="ok", x=True)])
    assert found.supervision_only == 0 and found.unexplained == []


def test_toolsandbox_shaped_messages():
    """ToolSandbox's converter: system prompt, empty-content assistant turns with JSON-string
    arguments, and tool results as Python reprs with single quotes. The person id read from the
    search result explains its use; the phone number no one gave does not."""
    person, phone = "9e137f06-916a-5310-8174-cf0b7e9f7054", "+12453344098"
    supervision = Supervision(task_id="remove_contact", reference_actions=[
        ReferenceAction(name="search_contacts", arguments={"name": "Fredrik Thordendal"}),
        ReferenceAction(name="remove_contact", arguments={"person_id": person})],
        expected_outcomes=[f'the agent tells the user: "Phone number {phone} has been removed"'])
    view = TaskView(env="toolsandbox", domain="toolsandbox", task_id="remove_contact", policy="You are an assistant.",
                    tools=[], opening_request="Remove Fredrik Thordendal from my contacts")
    messages = [
        {"role": "system", "content": "You are an assistant."},
        {"role": "user", "content": "Remove Fredrik Thordendal from my contacts"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "search_contacts", "arguments": json.dumps({"name": "Fredrik Thordendal"})}}]},
        {"tool_call_id": "call_1", "role": "tool", "name": "search_contacts",
         "content": f"[{{'person_id': '{person}', 'name': 'Fredrik Thordendal', 'is_self': False}}]"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_2", "type": "function", "function": {
            "name": "remove_contact", "arguments": json.dumps({"person_id": person})}}]},
        {"tool_call_id": "call_2", "role": "tool", "name": "remove_contact", "content": "None"},
        {"role": "assistant", "content": f"Phone number {phone} has been removed from your contacts"},
    ]
    found = audit(view, supervision, messages).unexplained
    assert [(u.turn, u.where, u.canonical) for u in found] == [(6, "message", "num:12453344098")]


def test_the_users_own_device_results_are_not_observed_by_the_agent():
    """τ² records the user's tool calls and their results in the same list; the agent never sees
    them, so a value only a user-side result holds stays unexplained."""
    messages = [{"role": "user", "content": None, "tool_calls": [
                    {"id": "u1", "type": "function", "function": {"name": "check_status", "arguments": "{}"}}]},
                _result({"reservation": RESERVATION}, "u1"),
                _call("get_reservation", "c1", reservation_id=RESERVATION)]
    assert _flagged(messages) == ["id:w2378156"]


def test_unparsable_arguments_are_still_checked():
    """A model that writes broken JSON does not escape the audit."""
    bad = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "get_reservation", "arguments": '{"reservation_id": "W2378156"'}}]}
    assert _flagged([{"role": "user", "content": "hi"}, bad]) == ["id:w2378156"]


def test_record_audit_is_none_before_the_episode_played():
    """An episode that failed before executing has nothing to audit (old records: no field)."""
    assert record_audit(_view(), _supervision(), None) is None
    stored = record_audit(_view(), _supervision(), Trajectory(messages=[], termination="done", turns=0))
    assert stored is not None and stored["unexplained"] == [] and stored["distinct"] == 0


# ---- end to end, through τ²-bench's own environment ---------------------------------------------

GOLD_CLEAN = {"airline": "38", "retail": "0"}
"""Tasks whose reference reads everything it later writes (so a replay learns every value from a
tool result or the user) and that the plan-following control can run."""


class _ToldGold(GoldReplay):
    """The gold replay with a user who, like τ²'s simulator, says what they know (their ids)."""

    def __call__(self, request, context):
        convo = [m for m in request["messages"] if m.get("role") != "system"]
        if context.get("purpose") == "user" and len(convo) == 1:
            task = tau2_tasks.task(context["domain"], context["task_id"])
            return text(f"{opening_words(task)} {task.user_scenario.instructions.known_info or ''}")
        return super().__call__(request, context)


@pytest.mark.parametrize("domain", sorted(GOLD_CLEAN))
def test_gold_replay_that_reads_everything_has_no_unexplained_values(validate, domain):
    """An honest executor — every value read from the user or a tool result first — is not flagged,
    so the audit does not charge agents for doing the task."""
    model = _ToldGold().model_name(f"told-gold-{domain}")
    code, records = validate("--env", "tau2", "--mode", "direct", "--domain", domain,
                             "--task-ids", GOLD_CLEAN[domain], "--model", model)
    assert code == 0 and len(records) == 1
    record = records[0]
    assert record["score"] == 1.0
    assert record["provenance"]["checked"] > 0 and record["provenance"]["supervision_only"] > 0
    assert record["provenance"]["unexplained"] == []


@pytest.mark.parametrize("domain", sorted(GOLD_CLEAN))
def test_an_executor_given_reference_ids_through_the_plan_is_flagged(validate, tmp_path, domain):
    """The earlier plan-following control (``honest=False``): p0 is the reference itself and its
    user never says who they are, so the executor acts on ids it could only have from the plan,
    and the audit says which."""
    model = PlanFollowingRoles(wrong_share=0.0, honest=False).model_name(f"plan-follower-prov-{domain}")
    code, records = validate("--env", "tau2", "--mode", "plan-first", "--domain", domain,
                             "--task-ids", GOLD_CLEAN[domain], "--model", model)
    assert code == 0 and len(records) == 1
    record = records[0]
    assert record["status"] == "ok", record["error"]
    found = record["provenance"]["unexplained"]
    assert found and all(u["where"] == "tool_call" for u in found)
    view, supervision = Tau2Environment().load(domain, GOLD_CLEAN[domain])
    reference = json.dumps([a.arguments for a in supervision.reference_actions])
    assert all(u["value"] in reference for u in found)
    # the summary counts the episode under its arm
    summary = summarize([EpisodeRecord.model_validate(record)])["by_arm"]["plan-first"]
    assert summary["provenance_affected"] == 1 and summary["provenance_rate"] == 1.0
    assert summary["provenance_unexplained"] == len(found)
    # … the report says so, and the explorer lists the values on the episode's panel, labelled hidden
    section = provenance_report.markdown_section(frame([EpisodeRecord.model_validate(record)]))
    assert "## Provenance audit" in section and f"| plan-first | 1 | {len(found)} | 1 | 100.0% |" in section
    explorer.write(tmp_path / "site", [EpisodeRecord.model_validate(record)], "t")
    page = next((tmp_path / "site" / explorer.FOLDER / "tasks").glob("*.html")).read_text()
    panel = page.split('<section class="provenance supervision">', 1)[1].split("</section>", 1)[0]
    assert explorer.SUPERVISION_NOTE in panel
    assert all(html.escape(u["value"]) in panel for u in found)


def test_records_written_before_the_audit_still_load_and_count_as_unaudited():
    """Old run folders must keep loading; their episodes are left out of the rate, not counted clean."""
    old = {"run_id": "r", "key": {"env": "tau2", "domain": "airline", "task_id": "1", "mode": "plan-first",
                                  "model": "m", "trial": 0}, "record_id": "x", "status": "ok", "seed": 0,
           "score": 1.0, "started_at": "t", "finished_at": "t"}
    record = EpisodeRecord.model_validate(old)
    assert record.provenance is None
    row = summarize([record])["by_arm"]["plan-first"]
    assert row["provenance_audited"] == 0 and row["provenance_rate"] is None


@pytest.mark.parametrize("domain", sorted(GOLD_CLEAN))
def test_the_honest_plan_following_control_uses_no_unobserved_value(validate, domain):
    """The control as it runs now: the user says who they are, p0 describes what the planner has
    not seen, and the executor fills it from what the conversation showed — nothing unexplained,
    while it still plays the whole reference (score 1)."""
    model = PlanFollowingRoles(wrong_share=0.0).model_name(f"plan-follower-honest-{domain}")
    code, records = validate("--env", "tau2", "--mode", "plan-first", "--domain", domain,
                             "--task-ids", GOLD_CLEAN[domain], "--model", model)
    assert code == 0 and len(records) == 1 and records[0]["status"] == "ok", records[0]["error"]
    assert records[0]["score"] == 1.0
    assert "not known yet" in json.dumps(records[0]["p0"])  # a value the planner had not seen
    assert records[0]["provenance"]["checked"] > 0 and records[0]["provenance"]["unexplained"] == []


def test_beyond_plan_first_counts_only_what_refine_used_and_its_plan_first_did_not():
    """The paired figure: Refine and Plan-first share p0, so a value only Refine used unexplained
    came from the critique (or chance); one both used is the plan's, not the critique's."""
    import pandas as pd

    from runtime.reports.provenance import beyond_plan_first

    def row(task, mode, keys, trial=0):
        arm = "refine:anti-leak" if mode == "refine" else mode
        return {"env": "tau2", "domain": "airline", "task_id": task, "model": "m", "trial": trial,
                "mode": mode, "arm": arm, "audited": 1, "unexplained_keys": tuple(keys)}

    df = pd.DataFrame([
        row("1", "plan-first", ["q69x3r"]), row("1", "refine", ["q69x3r"]),          # the plan's own
        row("2", "plan-first", []), row("2", "refine", ["w2378156", "1270.5"]),      # the critique's
        row("3", "refine", ["abc123"]),                                               # no pair
    ])
    figures = beyond_plan_first(df)["refine:anti-leak"]
    assert figures == {"provenance_paired": 2, "provenance_beyond_plan_first": 2,
                       "provenance_beyond_affected": 1, "provenance_beyond_rate": 0.5}
