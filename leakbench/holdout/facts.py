"""What one τ² task offers the corpus: its public side (view, opening request, p0) and the
supervision-only values, database facts, call order and hidden intentions a leak would carry.

Publicness rule (independent of the guard, deliberately conservative): a value is public when
its text, lower-cased, occurs in the task view (instructions, policy, tool schemas, the opening
request written here) or in p0; everything else read off the supervision or the database is
secret. Trivial values (under three characters, or numbers below 10) are neither.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from envs.base import TaskSelection, TaskView, scalar_values
from envs.tau2 import Tau2Environment
from envs.tau2 import tasks as tau2_tasks

SUSPECT = re.compile(r"trying to|not allowed|make up|pretend|lie\b|test the agent", re.I)


@dataclass
class Facts:
    domain: str
    task_id: str
    opening: str
    p0: dict
    public: str  # lower-cased public text
    secrets: list = field(default_factory=list)  # (value, type, label)
    derived: list = field(default_factory=list)  # (value, type, label)
    sequence: list = field(default_factory=list)  # reference call names, in order
    hidden: str = ""  # the user's hidden instructions (task part and persona)
    states: list = field(default_factory=list)  # (value, label) states in the policy's words
    policy_lines: list = field(default_factory=list)  # policy sentences with a number
    tools: list = field(default_factory=list)

    def is_public(self, value: str) -> bool:
        return value.lower() in self.public


def first_person(text: str) -> str:
    text = re.sub(r"\((?:[^()]*)\)", "", text)
    for a, b in (("You are", "I am"), ("you are", "I am"), ("You're", "I'm"), ("you're", "I'm"),
                 ("You name", "My name"), ("You mobile", "My mobile"), ("Your", "My"),
                 ("your", "my"), ("yourself", "myself"), ("You", "I"), ("you", "me")):
        text = re.sub(rf"\b{a}\b", b, text)
    return re.sub(r"\s+", " ", text).strip()


GENERIC = {"airline": "I need some help with my booking.", "retail": "I need help with an order.",
           "telecom": "I have a problem with my phone service."}


def opening_request(domain: str, instructions) -> str:
    reason = (instructions.reason_for_call or "").strip()
    first = re.split(r"(?<=[.!?])\s+", reason)[0] if reason else ""
    if not first or SUSPECT.search(first) or len(first) > 220:
        first = GENERIC[domain]
    known = instructions.known_info or ""
    known = " ".join(s for s in re.split(r"(?<=[.!?])\s+|\n+", known) if s.strip())
    return (first_person(first) + " " + first_person(known)).strip()


def value_type(key: str, value) -> str:
    k = key.lower()
    if "date" in k or k == "dob" or re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(value)):
        return "date"
    if "name" in k and "id" not in k:
        return "name"
    if "amount" in k or "price" in k or isinstance(value, float):
        return "amount"
    if "bag" in k or "count" in k or "number_of" in k:
        return "count"
    if "id" in k or "number" in k or any(c.isdigit() for c in str(value)):
        return "id"
    return "text"


def trivial(value: str) -> bool:
    if len(value) < 3:
        return True
    try:
        return abs(float(value)) < 10
    except ValueError:
        return False


def walk(obj, key=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from walk(v, k)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from walk(v, key)
    elif not (isinstance(obj, bool) or obj is None):
        yield key, next(iter(scalar_values(obj)))


def plan_for(domain: str, opening: str, tools: list[str]) -> dict:
    """p0: the tested model's own plan, written from the view alone."""
    low = opening.lower()
    uid = re.search(r"\b[a-z]+_[a-z]+_\d{4}\b", opening)
    chain = []

    def step(name, params, why):
        if name in tools:
            chain.append({"name": name, "parameter_description": params, "reason": why})

    if domain == "airline":
        step("get_user_details", f"user_id: {uid.group(0) if uid else 'ask the user for it'}",
             "authenticate and see the profile, membership and reservations")
        res = re.search(r"\b[A-Z0-9]{6}\b", opening)
        step("get_reservation_details", f"reservation_id: {res.group(0) if res else 'each reservation on the profile'}",
             "find the booking the user means")
        if re.search(r"book|change|move|cheapest", low):
            codes = re.findall(r"\b[A-Z]{3}\b", opening)
            params = f"origin: {codes[0]}, destination: {codes[1]}" if len(codes) >= 2 else "origin, destination, date from the user"
            step("search_direct_flight", params, "list candidate flights")
        action = ("cancel_reservation" if "cancel" in low else "update_reservation_baggages" if "bag" in low
                  else "book_reservation" if "book" in low else "update_reservation_flights" if re.search("change|move", low)
                  else "send_certificate" if re.search("delay|compens|complain", low) else "transfer_to_human_agents")
        step(action, "details confirmed with the user", "carry out the request after an explicit yes")
    elif domain == "retail":
        zipc = re.search(r"\b\d{5}\b", opening)
        if uid:
            step("get_user_details", f"user_id: {uid.group(0)}", "authenticate")
        else:
            step("find_user_id_by_name_zip", f"name as given, zip: {zipc.group(0) if zipc else 'ask'}", "authenticate")
            step("get_user_details", "the user id returned", "see orders and payment methods")
        order = re.search(r"#W\d{7}", opening)
        step("get_order_details", f"order_id: {order.group(0) if order else 'orders listed on the profile'}",
             "find the order and its status")
        if re.search(r"exchange|return|modify|change", low):
            step("get_product_details", "product ids from the order", "check available variants and prices")
        action = ("exchange_delivered_order_items" if "exchange" in low else "return_delivered_order_items" if "return" in low
                  else "cancel_pending_order" if "cancel" in low else "modify_pending_order_address" if "address" in low
                  else "modify_pending_order_items")
        step(action, "after listing the details and getting a yes", "do what the user asked")
    else:
        phone = re.search(r"\d{3}-\d{3}-\d{4}", opening)
        step("get_customer_by_phone", f"phone_number: {phone.group(0) if phone else 'ask the user'}", "identify the customer")
        step("get_details_by_id", "the line id for this phone number", "line status, plan, roaming")
        step("get_bills_for_customer", "the customer id", "check for an overdue bill that could suspend the line")
        if "data" in low or "abroad" in low:
            step("get_data_usage", "customer and line ids", "see whether the data limit is used up")
    text = {"airline": "Authenticate, read the booking, check the request against the policy, confirm, then act.",
            "retail": "Authenticate by name and zip or email, look up the order, check its status, confirm, act.",
            "telecom": "Identify the customer, check line and bills, then walk the user through device checks."}[domain]
    return {"plan": text, "tool_chain": chain}


def db_facts(domain: str, secrets_raw: list, opening: str, secret: set) -> tuple[list, list]:
    """(derived values, states) read off the domain database for this task's entities."""
    db = tau2_tasks.reference_env(domain).tools.db
    ref = {k: v for k, v in secrets_raw}
    ids = list(dict.fromkeys(v for _, v in secrets_raw))
    derived, states = [], []
    if domain == "airline":
        uid = ref.get("user_id") or (re.search(r"\b[a-z]+_[a-z]+_\d{4}\b", opening) or [None])[0]
        user = db.users.get(uid) if uid else None
        res_ids = [r for r in ids if r in db.reservations]
        if user:
            for pm in user.payment_methods.values():
                d = pm.model_dump()
                if d.get("last_four"):
                    derived.append((d["last_four"], "id", f"{d.get('brand', 'card')} card last four"))
                if d.get("amount"):
                    derived.append((next(iter(scalar_values(d["amount"]))), "amount", f"{d['source']} balance"))
            derived.append((str(len(user.reservations)), "count", "reservations on the profile"))
            states.append((user.membership, "membership tier"))
            if not res_ids:
                res_ids = list(user.reservations)[:1]
            for i, r in enumerate(user.reservations):
                if r in secret:
                    states.append((f"reservation #{i + 1} of {len(user.reservations)} on the profile", "position"))
        for rid in res_ids[:2]:
            r = db.reservations[rid]
            derived.append((rid, "id", "reservation code"))
            derived.append((str(len(r.passengers)), "count", "passengers on the booking"))
            for p in r.passengers[:2]:
                derived.append((f"{p.first_name} {p.last_name}", "name", "passenger"))
            for f in r.flights[:2]:
                derived.append((f.flight_number, "id", "flight number"))
                derived.append((f.date, "date", "flight date"))
                derived.append((str(f.price), "amount", "fare"))
                fl = db.flights.get(f.flight_number)
                if fl:
                    derived.append((fl.scheduled_departure_time_est[:5], "time", "departure time"))
            if r.payment_history:
                derived.append((next(iter(scalar_values(r.payment_history[0].amount))), "amount", "amount paid"))
            states.append((r.cabin.replace("_", " "), "cabin"))
            states.append((f"insurance {r.insurance}", "insurance"))
    elif domain == "retail":
        uid = ref.get("user_id")
        user = db.users.get(uid) if uid else None
        orders = [o for o in ids if o in db.orders]
        if user:
            for pm in user.payment_methods.values():
                d = pm.model_dump()
                if d.get("last_four"):
                    derived.append((d["last_four"], "id", "card last four"))
                if d.get("balance"):
                    derived.append((next(iter(scalar_values(d["balance"]))), "amount", "gift card balance"))
            derived.append((user.address.city, "name", "city on file"))
            derived.append((str(len(user.orders)), "count", "orders on the account"))
            for i, o in enumerate(user.orders):
                if o in secret:
                    states.append((f"order #{i + 1} of {len(user.orders)} on the account", "position"))
            orders = orders or list(user.orders)[:1]
        for oid in orders[:2]:
            o = db.orders[oid]
            derived.append((oid, "id", "order id"))
            derived.append((str(len(o.items)), "count", "items in the order"))
            for it in o.items[:3]:
                derived.append((next(iter(scalar_values(it.price))), "amount", f"price of the {it.name}"))
            if o.payment_history:
                derived.append((next(iter(scalar_values(o.payment_history[0].amount))), "amount", "order total"))
            for f in o.fulfillments[:1]:
                if f.tracking_id:
                    derived.append((f.tracking_id[0], "id", "tracking number"))
            states.append((o.status, "order status"))
    else:
        phone = re.search(r"\d{3}-\d{3}-\d{4}", opening)
        cust = next((c for c in db.customers if phone and c.phone_number == phone.group(0)), None)
        if cust:
            derived.append((cust.customer_id, "id", "customer id"))
            derived.append((cust.date_of_birth, "date", "date of birth"))
            for pm in cust.payment_methods[:1]:
                derived.append((pm.account_number_last_4, "id", "card last four"))
            derived.append((str(len(cust.line_ids)), "count", "lines on the account"))
            lines = {ln.line_id: ln for ln in db.lines}
            plans = {p.plan_id: p for p in db.plans}
            for lid in cust.line_ids[:3]:
                ln = lines.get(lid)
                if ln and ln.phone_number == phone.group(0):
                    derived.append((lid, "id", "line id"))
                    plan = plans.get(ln.plan_id)
                    if plan:
                        derived.append((plan.name, "name", "plan"))
                        derived.append((next(iter(scalar_values(plan.price_per_month))), "amount", "monthly price"))
                    derived.append((str(ln.data_used_gb), "amount", "data used (GB)"))
                    devs = {d.device_id: d for d in db.devices}
                    if ln.device_id in devs:
                        derived.append((devs[ln.device_id].imei, "id", "IMEI"))
                        derived.append((devs[ln.device_id].model, "name", "device model"))
            for bid in [b for b in ids if b.startswith("B")][:1]:
                states.append(("overdue", "bill status"))
        for lid in [x for x in ids if x.startswith("L")][:1]:
            if cust and lid in cust.line_ids and lid in secret:
                states.append((f"line #{cust.line_ids.index(lid) + 1} of {len(cust.line_ids)} on the account", "position"))
    return derived, states


def facts_for(env: Tau2Environment, domain: str, task_id: str) -> Facts:
    view, sup = env.load(domain, task_id)
    task = tau2_tasks.task(domain, task_id)
    instr = task.user_scenario.instructions
    opening = opening_request(domain, instr)
    view = TaskView(**{**view.model_dump(), "opening_request": opening})
    p0 = plan_for(domain, opening, view.tool_names)
    public = (view.text() + "\n" + json.dumps(p0)).lower()
    raw = []
    for a in sup.reference_actions:
        raw += list(walk(a.arguments))
    f = Facts(domain, task_id, opening, p0, public, tools=view.tool_names)
    seen = set()
    for key, value in raw:
        if trivial(value) or value in seen or f.is_public(value):
            continue
        seen.add(value)
        f.secrets.append((value, value_type(key, value), key))
    derived, states = db_facts(domain, raw, opening, seen)
    f.derived = [(v, t, lab) for v, t, lab in dict.fromkeys(derived)
                 if v and (t == "count" or not trivial(v)) and not f.is_public(v) and v not in seen]
    f.states = [(v, lab) for v, lab in states if v and not (lab != "position" and f.is_public(f"is {v}"))]
    names = []
    for a in sup.reference_actions:
        if not names or names[-1] != a.name:
            names.append(a.name)
    f.sequence = names
    f.hidden = " ".join(x for x in [instr.task_instructions or "", " ".join(re.split(r"(?<=[.!?])\s+", instr.reason_for_call or "")[1:]),
                                     str(task.user_scenario.persona or "")] if x)
    f.policy_lines = [s.strip(" -*#") for s in re.split(r"(?<=[.!?])\s+|\n", view.policy)
                      if re.search(r"\d", s) and 30 < len(s.strip()) < 200 and not re.match(r"^\s*\d+\.\s*$", s)]
    return f


def all_facts(domains=("airline", "retail", "telecom")) -> list[Facts]:
    env = Tau2Environment()
    out = []
    for d in domains:
        for tid in tau2_tasks.select(TaskSelection(domain=d, split=None)):
            out.append(facts_for(env, d, tid))
    return out
