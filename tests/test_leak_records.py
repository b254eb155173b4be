"""References only the database resolves: the records the τ² adapter hands the guard, and the
guard resolving pointers, ranks, states and options against them; the order told as a
constraint; a fault of the task's initial state."""

from __future__ import annotations

from critique.guard.leak_guard import LeakGuard
from critique.guard.order_words import meant_order
from envs.base import ReferenceAction, Supervision, TaskView
from envs.tau2.records import RecordIndex

DB = {
    "users": {"ana_7": {"user_id": "ana_7", "orders": ["#W1", "#W2", "#W3"],
                        "payment_methods": {"gift_card_1": {"id": "gift_card_1", "source": "gift_card", "balance": 80},
                                            "gift_card_2": {"id": "gift_card_2", "source": "gift_card", "balance": 20}}}},
    "orders": {"#W1": {"order_id": "#W1", "user_id": "ana_7", "status": "pending"},
               "#W2": {"order_id": "#W2", "user_id": "ana_7", "status": "cancelled"},
               "#W3": {"order_id": "#W3", "user_id": "ana_7", "status": "delivered"}},
    "products": {"p1": {"name": "T-Shirt", "product_id": "p1", "variants": {
        "v1": {"item_id": "v1", "options": {"color": "blue", "size": "M"}, "price": 10.0},
        "v2": {"item_id": "v2", "options": {"color": "purple", "size": "L"}, "price": 30.0},
        "v3": {"item_id": "v3", "options": {"color": "green", "size": "S"}, "price": 20.0}}}},
    "flights": {"HAT001": {"flight_number": "HAT001", "dates": {"2024-05-01": {"status": "landed"}}}},
}
ACTIONS = [ReferenceAction(name="get_order_details", arguments={"order_id": "#W3"}),
           ReferenceAction(name="exchange_delivered_order_items",
                           arguments={"order_id": "#W3", "item_ids": ["v1"], "new_item_ids": ["v2"],
                                      "payment_method_id": "gift_card_2"})]
VIEW = TaskView(env="tau2", domain="retail", task_id="t", policy="Only delivered orders can be exchanged.",
                opening_request="Hi, I am ana_7 and I want to exchange a shirt.",
                tools=[{"type": "function", "function": {"name": n, "parameters": {}}}
                       for n in ("get_order_details", "exchange_delivered_order_items")])


def guard(actions=ACTIONS, extra=()) -> LeakGuard:
    records = RecordIndex(DB).around(actions) + list(extra)
    return LeakGuard(VIEW, Supervision(task_id="t", reference_actions=actions, records=records))


def test_the_adapter_hands_over_the_acted_on_records_and_those_around_them():
    records = {(r["table"], r["id"]): r for r in RecordIndex(DB).around(ACTIONS)}
    acted = {k for k, r in records.items() if r["acted_on"]}
    assert acted == {("orders", "#W3"), ("products.variants", "v1"), ("products.variants", "v2"),
                     ("users.payment_methods", "gift_card_2")}
    assert {("orders", "#W1"), ("orders", "#W2"), ("users", "ana_7"), ("products", "p1"),
            ("products.variants", "v3")} <= set(records)  # the owner, its list, the product's variants
    assert records[("orders", "#W3")]["owner"] == {"table": "users", "id": "ana_7", "field": "orders"}
    assert not any(t.startswith("flights.") for t, _ in records)  # a flight's days are no records


def test_a_pointer_counts_only_when_it_resolves_to_the_acted_on_record():
    g = guard()
    for leak in ("Work on the most recent order.", "It is the third order on the account.",
                 "Exchange for the most expensive t-shirt.", "Pay with the gift card with the smallest balance.",
                 "Es geht um die letzte Bestellung."):
        assert any(f.kind == "pointer" for f in g.scan(leak)), leak
    for other in ("Start from the first order on the account.", "The second-cheapest t-shirt is not the one.",
                  "Pay with the gift card with the largest balance."):
        assert not any(f.kind == "pointer" for f in g.scan(other)), other


def test_a_state_or_an_option_of_the_acted_on_record_told_is_a_finding_a_question_is_not():
    g = guard()
    for leak in ("The order is already delivered.", "Swap it for the purple one in L.",
                 "They'll want purple, size L."):
        assert any(f.kind == "record" for f in g.scan(leak)), leak
    for clean in ("Check whether the order is delivered before acting.",
                  "If the order is delivered, an exchange applies.",
                  "Only delivered orders can be exchanged.", "Ask the user which colour they want."):
        assert not g.scan(clean), clean


def test_the_order_told_as_a_constraint_is_read_in_the_order_it_means():
    text = "Don't do B until you have done A, please."
    assert [m[2] for m in meant_order(text, [(0, 9, "b"), (10, 33, "a")])] == ["a", "b"]
    assert [m[2] for m in meant_order("Before you do B, do A.", [(11, 15, "b"), (16, 21, "a")])] == ["a", "b"]
    assert [m[2] for m in meant_order("Do A, then do B.", [(0, 4, "a"), (6, 15, "b")])] == ["a", "b"]
    g = guard()
    assert any(f.kind == "sequence" for f in g.scan(
        "Don't exchange the delivered order items until you have looked up the order details."))
    assert not any(f.kind == "sequence" for f in g.scan("Don't exchange anything until the user confirms."))


def test_a_fault_of_the_initial_state_is_a_setting_the_guard_guards():
    fault = {"table": "initial_state", "id": "user:break_apn_settings", "acted_on": True,
             "record": {"env_type": "user", "func_name": "break_apn_settings", "arguments": {}}}
    g = guard(actions=[ReferenceAction(name="transfer_to_human_agents", arguments={})], extra=[fault])
    assert any(f.kind == "state" for f in g.scan("I'd bet the APN settings are misconfigured."))
    assert not any(f.kind == "state" for f in g.scan("Check whether the APN settings are misconfigured."))
