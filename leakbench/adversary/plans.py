"""The tested model's first plan (``p0``), written from the view alone, and plain-English names
for tools and arguments that critiques (leaky or clean) use."""

from __future__ import annotations

import random

from leakbench.adversary.canon import Public

_LABELS = {
    "reservation_id": "the reservation", "user_id": "the user id", "order_id": "the order",
    "payment_id": "the payment method", "payment_method_id": "the payment method",
    "item_ids": "the item", "new_item_ids": "the replacement item", "product_id": "the product",
    "flight_number": "the flight", "date": "the date", "customer_id": "the customer id",
    "line_id": "the line", "gb_amount": "the refuel amount", "amount": "the amount",
    "first_name": "the first name", "last_name": "the last name", "zip": "the zip code",
    "email": "the email", "cabin": "the cabin", "origin": "the origin", "destination": "the destination",
}


def phrase_of(key: str) -> str:
    return _LABELS.get(key, "the " + key.replace("_", " "))


_VERBS = {
    "get": "look up", "find": "find", "search": "search for", "cancel": "cancel", "update": "update",
    "book": "book", "modify": "change", "exchange": "exchange", "return": "return", "send": "send",
    "list": "list", "calculate": "work out", "transfer": "hand over to", "enable": "turn on",
    "disable": "turn off", "suspend": "suspend", "resume": "resume", "refuel": "add data to",
    "toggle": "flip", "reset": "reset", "reboot": "restart", "grant": "grant", "set": "set",
    "reseat": "reseat", "check": "check", "turn": "turn",
}


def prose(tool: str) -> str:
    """'get_reservation_details' -> 'look up the reservation details' (no tool name in it)."""
    parts = tool.split("_")
    verb = _VERBS.get(parts[0], parts[0])
    rest = " ".join(p for p in parts[1:] if p not in ("by", "id", "details") or len(parts) < 3)
    noun = rest.replace("pending order", "order").replace("delivered order", "order") or "it"
    return f"{verb} the {noun}".replace("the the", "the")


def _description(action, public: Public) -> str:
    bits = []
    for key, value in action.arguments.items():
        label = phrase_of(key)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool) and public.has(str(value)):
            bits.append(f"{key}={value} ({label}, from the user's message)")
        else:
            bits.append(f"{key}: {label}, to be confirmed with the user or read from a lookup")
    return "; ".join(bits) or "no arguments"


def make_p0(view, sup, public: Public, rng: random.Random) -> dict:
    """A plausible but imperfect plan: the reference's assistant calls with non-public values
    left as descriptions, then one or two typical mistakes (a step dropped, two swapped)."""
    tools = set(view.tool_names)
    actions = [a for a in sup.reference_actions if a.requestor == "assistant" and a.name in tools]
    if not actions:
        first = [n for n in view.tool_names if n.startswith(("get_", "find_"))][:1]
        chain = [{"name": n, "parameter_description": "the identifier the user gives",
                  "reason": "start from the user's account"} for n in first]
    else:
        chain = [{"name": a.name, "parameter_description": _description(a, public),
                  "reason": f"to {prose(a.name)}"} for a in actions]
    if len(chain) >= 3 and rng.random() < 0.5:
        del chain[rng.randrange(1, len(chain))]
    elif len(chain) >= 2 and rng.random() < 0.6:
        i = rng.randrange(len(chain) - 1)
        chain[i], chain[i + 1] = chain[i + 1], chain[i]
    elif len(chain) >= 2:
        chain.pop()
    steps = "; ".join(f"({i}) {prose(c['name'])}" for i, c in enumerate(chain, 1))
    plan = rng.choice([
        "Verify the user's identity, then {s}. Confirm with the user before any change.",
        "Plan: {s}. Ask for explicit confirmation before writing anything.",
        "I will {s}, following the policy and confirming each action.",
    ]).format(s=steps or "gather the account details")
    return {"plan": plan, "tool_chain": chain}
