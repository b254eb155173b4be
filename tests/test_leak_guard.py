"""The leak guard on its own: what counts as supervision-only, detection and redaction."""

from __future__ import annotations

from critique.guard.leak_guard import REDACTED, LeakGuard
from envs.base import ReferenceAction, Supervision, TaskView
from evrcore.plan import Plan

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


def test_values_the_model_has_not_seen_are_removed_whether_or_not_the_supervision_has_them():
    """The allow-list: an unrelated code or number is not mistaken for a supervision value
    (kind ``unseen``, not ``value``), but it is not public either, so it does not pass."""
    findings = guard().scan("Order XQ69X3RZ is unrelated; 12704 is not an amount here.")
    assert {f.kind for f in findings} == {"unseen"}
    assert {f.text for f in findings} == {"XQ69X3RZ", "12704"}


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


# -- canonical forms (issue: disguises the old guard let through) ------------------------------

HIDDEN = Supervision(
    task_id="h",
    reference_actions=SUPERVISION.reference_actions,
    expected_outcomes=SUPERVISION.expected_outcomes,
    hidden_user_instructions=("You are Raj Sanchez. Be insistent and mention that the supervisor "
                              "Mortimer already approved it. Your reservation is EHG7LP3."),
)


def test_catches_disguised_values():
    g = LeakGuard(VIEW, HIDDEN)
    for leak in ["Use reservation Q69 X3R.", "Use reservation q-69-x3r.", "The refund is 1270.5 USD.",
                 "Refund one thousand two hundred seventy dollars and fifty cents.",
                 "Refund about 1271.", "The date is May 15.", "It is 15/05/2024.", "Fly on the fifteenth.",
                 "Pay with card 4421.", "It is the reservation ending in …LP3.",
                 "It is the one starting with EHG.", "The user is Raj Sanchez."]:
        assert g.scan(leak), leak


def test_catches_the_sequence_in_any_spelling_or_numbered_order():
    g = guard()
    for leak in ["Call getUserDetails, then getReservationDetails.",
                 "get user details and after that get reservation details",
                 "3. cancel_reservation; 1. GetUserDetails; 2. get-reservation-details"]:
        (finding,) = [f for f in g.scan(leak) if f.kind == "sequence"]
        assert finding.text.startswith("get_user_details → get_reservation_details"), leak


def test_catches_hidden_user_instructions_paraphrased():
    g = LeakGuard(VIEW, HIDDEN)
    assert [f.kind for f in g.scan("The user will insist that Mortimer, a supervisor, said yes.")]


def test_public_means_view_or_p0_token_by_token():
    from evrcore.plan import Plan, ToolStep

    view = VIEW.model_copy(update={"policy": VIEW.policy + " Refunds above 2000 dollars need approval."})
    sup = Supervision(task_id="n", reference_actions=[ReferenceAction(name="send_certificate", arguments={"amount": 200})])
    assert LeakGuard(view, sup).scan("Send a certificate of 200.")  # 200 is not public because of 2000
    assert not LeakGuard(view, sup).scan("Refunds above 2000 dollars need approval.")
    p0 = Plan(plan="p", tool_chain=[ToolStep(name="get_user_details", parameter_description="raj_sanchez_7340"),
                                    ToolStep(name="get_reservation_details", parameter_description="")])
    restated = "Your plan calls get_user_details for raj_sanchez_7340, then get_reservation_details."
    assert guard().scan(restated)  # without p0 both leak
    assert LeakGuard(VIEW, SUPERVISION, p0).scan(restated) == []  # p0 is the tested model's own text


def test_listing_the_offered_tools_is_not_a_sequence():
    listing = "The task offers get_user_details, get_reservation_details, cancel_reservation, send_certificate."
    assert guard().scan(listing) == []


def test_redaction_leaves_nothing_the_guard_finds():
    g = LeakGuard(VIEW, HIDDEN)
    text = ("Use Q69 X3R (ending in …LP3) for Raj Sanchez, refund one thousand two hundred seventy dollars "
            "on May 15; call getUserDetails, then getReservationDetails. Mortimer said yes, be insistent.")
    redacted, removed = g.redact(text)
    assert g.scan(redacted) == [] and removed
    for secret in ("X3R", "LP3", "Raj", "seventy", "May 15", "getReservationDetails", "Mortimer"):
        assert secret not in redacted, secret


# -- the auditor beside the rules -------------------------------------------------------------

class _Replies:
    """A chat model that answers from a list (a test double)."""

    def __init__(self, *answers: str):
        self.answers = list(answers)
        self.requests: list[list[dict]] = []

    def complete(self, messages, *, tools=None, json_schema=None):
        from evrcore.chat import ChatReply

        self.requests.append(messages)
        return ChatReply(content=self.answers.pop(0) if len(self.answers) > 1 else self.answers[0])


def _critique(rationale: str) -> str:
    import json

    return json.dumps({"grade": 0.4, "errors": {f"E{i}": i == 2 for i in range(1, 7)}, "rationale": rationale})


def test_auditor_findings_are_retried_then_redacted_and_residuals_recorded():
    from critique.guard.auditor import LeakAuditor
    from critique.critic import Critic
    from evrcore.plan import Plan

    sneaky = "The user secretly hopes for a voucher. Check eligibility first."  # no rule catches this
    critic = _Replies(_critique(sneaky))
    auditor = _Replies('{"leaks": ["secretly hopes for a voucher"]}', '{"leaks": []}')
    auditor.answers = ['{"leaks": ["secretly hopes for a voucher"]}'] * 3 + ['{"leaks": []}']
    result = Critic(critic, auditor=LeakAuditor(auditor)).critique(VIEW, SUPERVISION, Plan(plan="p"))
    g = result.guard
    assert g.fired and g.action == "redacted" and g.audited
    assert g.rule_findings == [] and [f.text for f in g.auditor_findings] == ["secretly hopes for a voucher"]
    assert "voucher" not in result.critique.rationale and REDACTED in result.critique.rationale
    assert g.residual == []  # the auditor's second reading of the redacted text
    assert len(critic.requests) == 3  # the first answer and two leak retries


def test_auditor_spans_not_in_the_rationale_are_ignored():
    from critique.guard.auditor import LeakAuditor

    auditor = LeakAuditor(_Replies('{"leaks": ["words the critique never wrote"]}'))
    assert auditor.audit(SUPERVISION, "A clean rationale.") == []


def test_numbers_about_the_plan_that_no_derivation_reaches_stay():
    """Relevance before removal: step references beyond p0, sizes, counts in advice, shares and
    durations carry nothing of the supervision, in digits or words and in other languages."""
    g = guard()
    for text in ["Steps 11 and 12 repeat the same lookup; step 14 should come first.",
                 "Fifteen or twenty calls is far too many; about ten should do.",
                 "A 30-step plan is hard to follow; keep it well under 25 tool calls.",
                 "About 35% of the plan is lookups. Wait 45 seconds before rebooting.",
                 "Retry at most 6 times, then ask no more than 7 questions.",
                 "Los pasos 11 y 12 están invertidos; treinta llamadas son demasiadas.",
                 "Dreißig Aufrufe sind zu viele; etwa 15 reichen.",
                 "第11步和第12步顺序颠倒了。"]:
        assert g.scan(text) == [], text


def test_numbers_that_could_carry_the_answer_still_go():
    """A number about the plan that a derivation reaches (the reference's own count of calls,
    a stated value), and every unseen number outside such a context, an amount with cents or
    a currency, a date and an ID, are removed."""
    g = guard()
    assert g.scan("This can be done in 4 calls.")  # the reference has four calls
    assert g.scan("About 1270.5 percent.")  # record-shaped, whatever follows
    for text in ["The fare is 162.", "Step 1 should use 87 dollars.", "Refund $33.10.",
                 "Use 2024-06-02.", "Reservation ZZ9Q7P.", "Retry 1270 times."]:
        assert g.scan(text), text


def test_the_guard_before_relevance_removes_the_advice():
    """Not vacuous: without derivations (every unseen value removed) the advice goes."""
    old = LeakGuard(VIEW, SUPERVISION, derivations=None)
    assert old.scan("Fifteen or twenty calls is far too many; about ten should do.")
    assert old.scan("Steps 11 and 12 repeat the same lookup.")


def test_a_kept_number_that_is_a_piece_of_a_removed_value_goes_with_it():
    g = guard()
    text = "Pay with the card ending 7285. I am 85% confident it is right."
    redacted, removed = g.redact(text)
    assert "85" not in redacted.replace(REDACTED, ""), redacted


def test_pointers_at_one_record_and_states_the_reference_repairs():
    g = guard()
    assert any(f.kind == "pointer" for f in g.scan("Cancel the third reservation on the profile."))
    assert g.scan("Cancel the reservation the user names.") == []
    telecom = Supervision(task_id="t", reference_actions=[
        ReferenceAction(name="toggle_airplane_mode", arguments={}, requestor="user")])
    tg = LeakGuard(VIEW, telecom)
    assert "state" in {f.kind for f in tg.scan("The root cause: airplane mode is switched on.")}
    assert tg.scan("Check whether airplane mode is on before anything else.") == []


def test_prose_that_says_what_each_call_does_tells_the_order():
    sup = Supervision(task_id="t", reference_actions=[
        ReferenceAction(name="modify_pending_order_items", arguments={}),
        ReferenceAction(name="return_delivered_order_items", arguments={})])
    view = VIEW.model_copy(update={"tools": [{"type": "function", "function": {"name": n, "parameters": {}}}
                                             for n in ("modify_pending_order_items", "return_delivered_order_items",
                                                       "cancel_pending_order")]})
    plan = Plan.model_validate({"plan": "x", "tool_chain": [
        {"name": "return_delivered_order_items", "parameter_description": "", "reason": ""},
        {"name": "modify_pending_order_items", "parameter_description": "", "reason": ""}]})
    g = LeakGuard(view, sup, plan)
    assert [f.kind for f in g.scan("First change the order items, then return the order items.")] == ["sequence"]
    assert g.scan("First return the order items, then change the order items.") == []  # p0's own order
