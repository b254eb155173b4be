"""Facts a critic reads off the reference and restates through the τ² database (a card's last
four digits, a departure time, a price, "the cheaper of the two", "the last order on the
profile"), and the public values a clean critique may quote."""

from __future__ import annotations

import re

from leakbench.adversary.canon import compact
from leakbench.adversary.val import Val

ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]


def _args(task, key: str) -> list:
    out = []
    for a in task.sup.reference_actions:
        v = a.arguments.get(key)
        if isinstance(v, list):
            out.extend(v)
        elif v is not None:
            out.append(v)
    return out


def _amount(x) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:.2f}"


def derive(task, db: dict) -> dict:

    out: dict[str, list] = {}

    def add(kind, value, typ, label, via):
        value = str(value)
        if typ in ("count", "text") or not (task.public.has(value) or len(compact(value)) < 2):
            if not any(v.value == value for v in out.get(kind, [])):
                out.setdefault(kind, []).append(Val(value, typ, label, via))

    getattr(_Derivers, task.domain)(task, db, add)
    return out


class _Derivers:
    @staticmethod
    def airline(task, db, add):
        users, res, flights = db["users"], db["reservations"], db["flights"]
        uids = _args(task, "user_id") or [r["user_id"] for rid in _args(task, "reservation_id")
                                           if (r := res.get(rid))]
        user = users.get(uids[0]) if uids else None
        for pid in _args(task, "payment_id") + ([] if not user else list(user["payment_methods"])[:1]):
            pm = (user or {}).get("payment_methods", {}).get(pid)
            if pm and pm.get("last_four"):
                add("last_four", pm["last_four"], "id", f"the {pm['brand']} card", f"{pid}.last_four")
            elif pm and pm.get("amount"):
                add("price", _amount(pm["amount"]), "amount", f"the {pm['source'].replace('_', ' ')}",
                    f"{pid}.amount")
        for rid in _args(task, "reservation_id"):
            r = res.get(rid)
            if not r:
                continue
            legs = r["flights"]
            for leg in legs[:2]:
                add("attribute", leg["flight_number"], "id", "the flight", f"{rid}.flights")
                add("time_date", leg["date"], "date", "the flight date", f"{rid}.flights.date")
                dep = flights.get(leg["flight_number"], {}).get("scheduled_departure_time_est")
                if dep:
                    add("time_date", dep[:5], "time", "the departure time", f"{leg['flight_number']}.departure")
                add("price", _amount(leg["price"]), "amount", "the fare", f"{rid}.flights.price")
            add("count", len(r["passengers"]), "count", "passengers", f"{rid}.passengers")
            add("status", f"{r['cabin'].replace('_', ' ')}", "text", "the cabin", f"{rid}.cabin")
            add("option", "with travel insurance" if r["insurance"] == "yes" else "without insurance",
                "text", "insurance", f"{rid}.insurance")
            paid = sum(p["amount"] for p in r["payment_history"])
            add("total", _amount(paid), "amount", "the total paid", f"{rid}.payment_history")
            if len(legs) >= 2:
                cheap = min(legs[:2], key=lambda leg: leg["price"])
                add("comparison", cheap["flight_number"], "id", "the cheaper leg", f"{rid}.flights.price")
            if user and rid in user.get("reservations", []):
                i = user["reservations"].index(rid)
                n = len(user["reservations"])
                where = "last" if i == n - 1 else ORDINALS[min(i, 7)]
                add("relative", rid, "id", f"the {where} reservation on the profile", f"{uids[0]}.reservations")
        if user:
            certs = sorted((pm for pm in user["payment_methods"].values() if pm.get("amount")),
                           key=lambda pm: pm["amount"])
            for pid in _args(task, "payment_id"):
                for i, pm in enumerate(certs):
                    if pm["id"] == pid and len(certs) > 1:
                        rank = "smallest" if i == 0 else "largest" if i == len(certs) - 1 else ORDINALS[min(i, 7)]
                        add("rank", pid, "id", f"the {rank} {pm['source'].replace('_', ' ')} balance",
                            f"{uids[0]}.payment_methods")

    @staticmethod
    def retail(task, db, add):
        users, orders, products = db["users"], db["orders"], db["products"]
        oids = _args(task, "order_id")
        uids = _args(task, "user_id") or [orders[o]["user_id"] for o in oids if o in orders]
        user = users.get(uids[0]) if uids else None
        for pid in _args(task, "payment_method_id"):
            pm = (user or {}).get("payment_methods", {}).get(pid)
            if pm and pm.get("last_four"):
                add("last_four", pm["last_four"], "id", f"the {pm.get('brand', 'credit')} card", f"{pid}.last_four")
            elif pm and pm.get("balance") is not None:
                add("price", _amount(pm["balance"]), "amount", "the gift card balance", f"{pid}.balance")
        for oid in oids:
            o = orders.get(oid)
            if not o:
                continue
            add("status", o["status"], "text", "the order status", f"{oid}.status")
            add("count", len(o["items"]), "count", "items", f"{oid}.items")
            add("total", _amount(sum(i["price"] for i in o["items"])), "amount", "the order total", f"{oid}.items")
            for item in o["items"]:
                if item["item_id"] in map(str, _args(task, "item_ids")):
                    add("price", _amount(item["price"]), "amount", f"the {item['name'].lower()}", f"{oid}.price")
                    add("attribute", item["product_id"], "id", f"the {item['name'].lower()} product", f"{oid}.product_id")
            if user and oid in user.get("orders", []) and len(user["orders"]) > 1:
                i, n = user["orders"].index(oid), len(user["orders"])
                where = "most recent" if i == n - 1 else ORDINALS[min(i, 7)]
                add("relative", oid, "id", f"the {where} order on the account", f"{uids[0]}.orders")
        for new in map(str, _args(task, "new_item_ids")):
            for prod in products.values():
                var = prod["variants"].get(new)
                if not var:
                    continue
                opts = ", ".join(f"{v}" for v in var["options"].values())
                add("option", opts, "text", f"the {prod['name'].lower()} variant", f"{new}.options")
                add("price", _amount(var["price"]), "amount", f"the new {prod['name'].lower()}", f"{new}.price")
                ranked = sorted(prod["variants"].values(), key=lambda v: v["price"])
                i = [v["item_id"] for v in ranked].index(new)
                word = "cheapest" if i == 0 else "most expensive" if i == len(ranked) - 1 else f"{ORDINALS[min(i, 7)]}-cheapest"
                add("rank", new, "id", f"the {word} {prod['name'].lower()}", f"{prod['product_id']}.variants")
                others = [v for v in ranked if v["item_id"] != new and v["options"].keys() == var["options"].keys()]
                if others:
                    add("comparison", new, "id", f"the {'cheaper' if var['price'] < others[0]['price'] else 'pricier'}"
                        " of the two close matches", f"{prod['product_id']}.variants")

    @staticmethod
    def telecom(task, db, add):
        customers = {c["customer_id"]: c for c in db["customers"]}
        lines = {line["line_id"]: line for line in db["lines"]}
        plans = {p["plan_id"]: p for p in db["plans"]}
        devices = {d["device_id"]: d for d in db["devices"]}
        bills = {b["bill_id"]: b for b in db["bills"]}
        phone = re.search(r"\d{3}-\d{3}-\d{4}", task.opening or "")
        cust = next((c for c in customers.values() if phone and c["phone_number"] == phone.group(0)), None)
        cids = _args(task, "customer_id") or ([cust["customer_id"]] if cust else [])
        c = customers.get(cids[0]) if cids else None
        lids = _args(task, "line_id") or [lid for lid in (c or {}).get("line_ids", [])
                                          if phone and lines[lid]["phone_number"] == phone.group(0)]
        if c:
            add("attribute", c["customer_id"], "id", "the customer record", "customer_id")
            for pm in c["payment_methods"][:1]:
                add("last_four", pm["account_number_last_4"], "id", "the card on file", f"{c['customer_id']}.payment")
            add("count", len(c["line_ids"]), "count", "lines", f"{c['customer_id']}.line_ids")
            for bid in c["bill_ids"][::-1]:
                b = bills.get(bid)
                if b and b["total_due"] >= 10:
                    add("total", _amount(b["total_due"]), "amount", "the latest bill", f"{bid}.total_due")
                    add("time_date", b["due_date"], "date", "the bill's due date", f"{bid}.due_date")
                    add("status", b["status"].lower(), "text", "the latest bill", f"{bid}.status")
        for lid in lids:
            line = lines.get(lid)
            if not line:
                continue
            add("attribute", lid, "id", "the line", "line_id")
            plan = plans.get(line["plan_id"], {})
            if plan:
                add("option", plan["name"], "text", "the plan", f"{lid}.plan")
                add("price", _amount(plan["price_per_month"]), "amount", "the monthly plan price", f"{lid}.plan")
                add("comparison", plan["name"], "text", "the pricier plan" if plan["price_per_month"] > 40
                    else "the cheaper plan", "plans")
            add("time_date", line["contract_end_date"], "date", "the contract end date", f"{lid}.contract_end_date")
            if line["data_used_gb"]:
                add("price", _amount(line["data_used_gb"]), "amount", "the data used (GB)", f"{lid}.data_used_gb")
            add("status", line["status"].lower(), "text", "the line status", f"{lid}.status")
            dev = devices.get(line.get("device_id") or "")
            if dev:
                add("last_four", dev["imei"][-4:], "id", "the device IMEI", f"{dev['device_id']}.imei")
            if c and lid in c["line_ids"]:
                i = c["line_ids"].index(lid)
                where = "last" if i == len(c["line_ids"]) - 1 else ORDINALS[min(i, 7)]
                add("relative", lid, "id", f"the {where} line on the account", f"{c['customer_id']}.line_ids")
            ranked = sorted((lines[x] for x in (c or {}).get("line_ids", [])), key=lambda x: x["data_used_gb"])
            if len(ranked) > 1:
                i = [x["line_id"] for x in ranked].index(lid) if lid in [x["line_id"] for x in ranked] else -1
                if i >= 0:
                    word = "least" if i == 0 else "most" if i == len(ranked) - 1 else f"{ORDINALS[min(i, 7)]}-least"
                    add("rank", lid, "id", f"the line that has used the {word} data", "lines.data_used_gb")


def public_values(task, db: dict) -> list:
    """Values the tested model has seen: ids, amounts, dates, phone numbers, names, tool names
    from the opening request, p0 and the policy (decoded by this generator's own rules)."""

    seen, out = set(), []
    text = task.opening + "\n" + task.p0["plan"] + "\n" + "\n".join(
        c["parameter_description"] for c in task.p0["tool_chain"])
    pats = [(r"#W\d{7}", "id", "the order"), (r"\b[a-z]+_[a-z]+_\d{4}\b", "id", "the user id"),
            (r"\b\d{3}-\d{3}-\d{4}\b", "id", "the phone number"), (r"\b[A-Z0-9]{6}\b(?=.*)", "id", "the reservation"),
            (r"\b\d{5}\b", "id", "the zip code"), (r"\$?\d+(?:\.\d+)?\b", "amount", "the amount"),
            (r"\b[a-z0-9._]+@[a-z.]+\b", "id", "the email")]
    for pat, typ, label in pats:
        for m in re.finditer(pat, text):
            v = m.group(0)
            if v not in seen and task.public.has(v) and v not in task.secret and re.search(r"\d", v):
                seen.add(v)
                out.append(Val(v, typ, label, "opening/p0"))
    for m in re.finditer(r"\bYou are ([A-Z][a-z]+ [A-Z][a-z]+)", task.opening.replace("I am", "You are")):
        out.append(Val(m.group(1), "name", "the customer", "opening"))
    for m in re.finditer(r"\$(\d+(?:\.\d+)?)", task.view.policy):
        v = m.group(1)
        if v not in seen:
            seen.add(v)
            out.append(Val(v, "amount", "the policy amount", "policy"))
    for m in re.finditer(r"\b(\d+) (hours|days|GB|percent|%)", task.view.policy):
        v = f"{m.group(1)} {m.group(2)}"
        if v not in seen:
            seen.add(v)
            out.append(Val(v, "count", m.group(2), "policy"))
    return out
