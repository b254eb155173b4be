"""The leak guard on its own: what counts as supervision-only, detection and redaction."""

from __future__ import annotations

from critique.leak_guard import REDACTED, LeakGuard
from envs.base import ReferenceAction, Supervision, TaskView

VIEW = TaskView(
    env="tau2", domain="airline", task_id="t", opening_request="I want to cancel my trip to JFK.",
    policy="Cancellations within 24 hours of booking are refunded. Baggage costs $50.",
    tools=[{"type": "function", "function": {"name": n, "parameters": {}}} for n in
           ("get_user_details", "get_reservation_details", "cancel_reservation", "send_certificate")],
)
SUPERVISION = Supervision(
    task_id="t",
    reference_actions=[
        ReferenceAction(name="get_user_details", arguments={"user_id": "raj_sanchez_7340"}),
        ReferenceAction(name="get_reservation_details", arguments={"reservation_id": "Q69X3R"}),
        ReferenceAction(name="cancel_reservation", arguments={"reservation_id": "Q69X3R", "refund": 1270.5}),
        ReferenceAction(name="send_certificate", arguments={"amount": 50, "date": "2024-05-15", "ok": True}),
    ],
    expected_outcomes=["The agent tells the user: the refund is 1270.50 dollars to card_4421"],
)


def guard() -> LeakGuard:
    return LeakGuard(VIEW, SUPERVISION)


def test_supervision_only_values_exclude_what_the_view_already_shows():
    values = SUPERVISION.supervision_only_values(VIEW)
    assert {"raj_sanchez_7340", "Q69X3R", "1270.5", "2024-05-15", "card_4421"} <= values
    assert "50" not in values  # the policy states $50
    assert "JFK" not in values and "True" not in values


def test_clean_critique_passes_unchanged():
    text = ("The plan cancels before checking whether the booking is within the refundable "
            "window, and it never confirms with the user (E3).")
    assert guard().scan(text) == []
    assert guard().redact(text) == (text, [])


def test_catches_ids_amounts_dates_and_codes():
    g = guard()
    for leak, value in [("Look up reservation q69x3r first.", "Q69X3R"),
                        ("The refund must be $1,270.50.", "1270.5"),
                        ("Use the date 2024-05-15.", "2024-05-15"),
                        ("The user is raj_sanchez_7340.", "raj_sanchez_7340"),
                        ("Refund to card_4421.", "card_4421")]:
        findings = g.scan(leak)
        assert [f.text for f in findings if f.kind == "value"] == [value], leak


def test_does_not_flag_substrings_of_other_tokens():
    assert guard().scan("Order XQ69X3RZ is unrelated; 12704 is not an amount here.") == []


def test_catches_the_reference_call_sequence_but_not_single_tool_names():
    g = guard()
    sequence = "First call get_user_details, then get_reservation_details, then cancel_reservation."
    (finding,) = g.scan(sequence)
    assert finding.kind == "sequence"
    assert finding.text == "get_user_details → get_reservation_details → cancel_reservation"
    assert g.scan("The plan never calls cancel_reservation.") == []
    # out of order is not the reference sequence
    assert g.scan("cancel_reservation, get_reservation_details, get_user_details") == []


def test_redaction_removes_every_leak_and_reports_it():
    text = "Cancel Q69X3R for raj_sanchez_7340: call get_user_details, get_reservation_details, cancel_reservation."
    redacted, removed = guard().redact(text)
    assert guard().scan(redacted) == []
    assert "Q69X3R" in removed and "raj_sanchez_7340" in removed
    assert "get_reservation_details" in removed and "cancel_reservation" in removed
    assert redacted.count(REDACTED) == len(removed)
    assert "get_user_details" in redacted  # the first step alone tells nothing of the order
