"""Real τ²-bench tasks as this generator sees them: the view, an opening request in the user's
voice (public parts of the user scenario only), a ``p0`` written from the view alone, and the
supervision-only material a critic could leak (reference values, DB-derived facts, the
reference order, hidden instructions, telecom fault states)."""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

from leakbench.adversary.canon import Public, as_number
from leakbench.adversary import derive
from leakbench.adversary.plans import make_p0, phrase_of
from leakbench.adversary.val import Val
from leakbench.fragments import id_universe
from leakbench.tau2_data import db, environment
from envs.base import Supervision, TaskView

DOMAINS = ("airline", "retail", "telecom")


@dataclass
class Task:
    domain: str
    task_id: str
    view: TaskView
    sup: Supervision
    opening: str
    p0: dict
    public: Public
    values: list[Val] = field(default_factory=list)      # from the reference, not public
    derived: dict[str, list[Val]] = field(default_factory=dict)  # kind -> values via the DB
    chain: list[str] = field(default_factory=list)       # reference order of the assistant's calls
    user_chain: list[str] = field(default_factory=list)  # telecom: what the user must do, in order
    hidden: list[str] = field(default_factory=list)      # hidden-instruction sentences
    faults: list[str] = field(default_factory=list)      # telecom fault keys
    secret: set[str] = field(default_factory=set)        # every supervision-only value (clean check)
    public_values: list[Val] = field(default_factory=list)  # values the tested model has seen
    universe: dict = field(default_factory=dict)         # the domain's ids, by kind




_FIRST_PERSON = [
    (r"\bYou are\b", "I am"), (r"\byou are\b", "I am"), (r"\bYou're\b", "I'm"), (r"\byou're\b", "I'm"),
    (r"\bYou've\b", "I've"), (r"\byou've\b", "I've"), (r"\bYour\b", "My"), (r"\byour\b", "my"),
    (r"\byourself\b", "myself"), (r"\bYou\b", "I"),
    (r"\byou\b(?= (?:want|would|wish|have|had|need|recently|received|were|do|don't|can|cannot|will|"
     r"just|also|prefer|think|only|placed|made|booked|live|remember|'d|are))", "I"),
    (r"\byou\b", "me"),
]


def first_person(text: str) -> str:
    for pattern, repl in _FIRST_PERSON:
        text = re.sub(pattern, repl, text)
    return text


def sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+", text or "")
    return [p.strip() for p in parts if len(p.strip()) > 3]


_CONDITIONAL = re.compile(r"\b(if|unless|only|rather|prefer|do not|don't|refuse|accept|insist|"
                          r"agent|willing|never|otherwise|want to make sure|mention)\b", re.I)


def opening_and_hidden(task_obj: Any, rng: random.Random) -> tuple[str, list[str]]:
    """The user's first message (who they are, the plain request) and what stays hidden."""
    ins = task_obj.user_scenario.instructions
    known = sentences(getattr(ins, "known_info", "") or "")
    reason = sentences(getattr(ins, "reason_for_call", "") or "")
    hidden = sentences(getattr(ins, "task_instructions", "") or "")
    hidden += sentences(getattr(ins, "unknown_info", "") or "")
    said, kept_back = [], []
    for i, s in enumerate(reason):
        (kept_back if (i > 0 and _CONDITIONAL.search(s)) or (i > 1) else said).append(s)
    ids_said = [s for s in known if not (re.search(r"\bid\b|\border\b", s, re.I) and rng.random() < 0.35)]
    hidden = kept_back + hidden + [s for s in known if s not in ids_said]
    greeting = rng.choice(["Hi,", "Hello,", "Hi there.", "Good morning.", ""])
    text = " ".join([greeting] + [first_person(s) for s in ids_said + said]).strip()
    hidden = [s for s in hidden if len(s.split()) >= 4 and s.strip(". ")]
    return text, hidden


def _scalars(obj: Any):
    if isinstance(obj, dict):
        for k, v in obj.items():
            for kk, vv in _scalars(v):
                yield (kk or k), vv
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _scalars(v)
    elif obj is not None and not isinstance(obj, bool):
        yield "", obj


def type_of(key: str, value: Any) -> str:
    k = key.lower()
    if "date" in k or re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(value)):
        return "date"
    if re.search(r"amount|price|total|balance", k):
        return "amount"
    if "name" in k and "app" not in k:
        return "name"
    if k.endswith("id") or k.endswith("ids") or k in ("flight_number", "zip") or re.search(r"\d", str(value)):
        return "id"
    return "text"


def _fmt(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def trivial(value: str) -> bool:
    v = str(value).strip()
    n = as_number(v)
    return len(v) < 3 or (n is not None and abs(n) < 10)


_FAULT_WORDS = {
    "airplane_mode_on": "Airplane Mode is switched on",
    "bad_network_preference": "the network mode preference is stuck on an older-generation mode",
    "data_usage_exceeded": "the line has used up its data allowance",
    "data_mode_off": "mobile data is turned off",
    "unseat_sim_card": "the SIM card is not seated properly",
    "bad_wifi_calling": "Wi-Fi Calling is enabled and gets in the way",
    "user_abroad_roaming_enabled_off": "the customer is abroad with roaming off on the phone",
    "user_abroad_roaming_disabled_on": "roaming is not enabled on the line while abroad",
    "user_abroad_roaming_disabled_off": "roaming is off on both the line and the phone",
    "break_apn_mms_setting": "the APN's MMSC URL is missing",
    "data_saver_mode_on": "Data Saver mode is on",
    "lock_sim_card_pin": "the SIM card is PIN-locked",
    "break_apn_settings": "the APN settings are broken",
    "bad_vpn": "a VPN connection is active",
    "break_app_both_permissions": "the messaging app is missing both the SMS and storage permissions",
    "break_app_storage_permission": "the messaging app is missing the storage permission",
    "break_app_sms_permission": "the messaging app is missing the SMS permission",
    "overdue_bill_suspension": "the line is suspended over an overdue bill",
    "contract_end_suspension": "the line is suspended because its contract has ended",
}


def fault_words(key: str) -> str:
    return _FAULT_WORDS.get(key, key.replace("_", " "))


def load(domain: str, task_id: str, seed: int = 0) -> Task:
    from envs.tau2 import tasks as t2

    view, sup = environment().load(domain, task_id)
    rng = random.Random(f"{seed}:{domain}:{task_id}")
    opening, hidden = opening_and_hidden(t2.task(domain, task_id), rng)
    view = view.model_copy(update={"opening_request": opening})
    base_public = Public(view.text())
    p0 = make_p0(view, sup, base_public, rng)
    public = Public(view.text(), json.dumps(p0), p0["plan"])
    task = Task(domain, task_id, view, sup, opening, p0, public, hidden=hidden)
    task.chain = [a.name for a in sup.reference_actions if a.requestor == "assistant"]
    task.user_chain = [a.name for a in sup.reference_actions if a.requestor != "assistant"]
    seen = set()
    for action in sup.reference_actions:
        for key, value in _scalars(action.arguments):
            v = _fmt(value)
            if v in seen or trivial(v) or public.has(v):
                continue
            seen.add(v)
            task.values.append(Val(v, type_of(key, value), phrase_of(key), via=action.name))
    if domain == "telecom" and "]" in task_id:
        task.faults = [f for f in task_id.split("]", 1)[1].split("[")[0].split("|") if f]
    task.universe = id_universe(domain)
    task.derived = derive.derive(task, db(domain))
    task.secret = _secrets(task)
    task.public_values = derive.public_values(task, db(domain))
    return task


def _secrets(task: Task) -> set[str]:
    """Every supervision-only value: reference scalars, coded tokens of the outcomes and the
    hidden instructions (numbers, ids, capitalised names), and everything derived from the DB."""
    out = {v.value for v in task.values}
    for vals in task.derived.values():
        out.update(v.value for v in vals if v.type not in ("sequence", "text", "count"))
    text = "\n".join(task.sup.expected_outcomes + task.hidden)
    out.update(re.findall(r"[#\w.$-]*\d[\w.-]*", text))
    out.update(re.findall(r"\b[A-Z][a-z]{2,}\b", "\n".join(task.hidden)))
    return {v.rstrip(".").lstrip("$") for v in out
            if not trivial(v.rstrip(".")) and not task.public.has(v.rstrip("."))}
