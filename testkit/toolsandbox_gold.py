"""A scripted executor + user pair that plays ToolSandbox scenarios the right (or a wrong) way.

What it proves: the plumbing — the runtime's executor path, the env-server protocol, our agent
and user roles inside ToolSandbox's ``Scenario.play``, and ToolSandbox's ``Evaluation`` agree:
the reference call sequence scores similarity 1.0, a wrong one scores lower, and inventing
information in an insufficient-information scenario trips a minefield (0). It proves nothing
about a model.

ToolSandbox has no reference action list (its milestones describe states and messages), so the
sequences below were written by hand from the milestones. One script serves a base scenario and
all its tool-augmentation variants: calls are written with execution-facing names and mapped to
the agent-facing (possibly scrambled) names of the task being played.

Both roles are stateless: the agent's step is the number of assistant messages so far, the
user's line the number of its own turns since its (last) system prompt.

    python -m testkit.toolsandbox_gold --mode refine --tasks cellular_off,wifi_off
runs ``python -m runtime.validate --env toolsandbox`` with this script as every model.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, Union

from envs.toolsandbox import convert
from testkit.scripted import register_script, text, tool_call

FREDRIK = "9e137f06-916a-5310-8174-cf0b7e9f7054"
JOHN = "a22e1984-6c6c-530c-8831-c3ea3b5138e7"
ALBUM = "How's the new album coming along"
Args = Union[dict[str, Any], Callable[[list[Any]], dict[str, Any]]]


@dataclass(frozen=True)
class Step:
    """One agent turn: a tool call (``name`` set) or a message to the user."""

    name: Optional[str] = None
    args: Args = field(default_factory=dict)
    say: Optional[str] = None


def call(tool: str, args: Args | None = None, /, **kwargs: Any) -> Step:
    return Step(name=tool, args=args if args is not None else kwargs)


def say(words: str | Callable[[list[Any]], str]) -> Step:
    return Step(say=words)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Script:
    agent: tuple[Step, ...]
    user: tuple[str, ...] = ()


def script(*agent: Step, user: Sequence[str] = ()) -> Script:
    return Script(agent=tuple(agent), user=tuple(user))


_SEND_TO_FREDRIK = (
    call("search_contacts", name="Fredrik Thordendal"),
    call("set_cellular_service_status", on=True),
    call("send_message_with_phone_number", phone_number="+12453344098", content=ALBUM),
    say(f"Your message to Fredrik Thordendal has been sent saying: {ALBUM}"),
)
_REMOVE_FREDRIK = (
    call("search_contacts", phone_number="+12453344098"),
    call("remove_contact", person_id=FREDRIK),
    say("Phone number +12453344098 has been removed from your contact"),
)
_FRIENDS_TO_ENEMIES = (
    call("search_contacts", relationship="friend"),
    call("modify_contact", person_id=FREDRIK, relationship="enemy"),
    call("modify_contact", person_id=JOHN, relationship="enemy"),
)

GOLD: dict[str, Script] = {
    # single tool call
    "cellular_off": script(call("set_cellular_service_status", on=False), say("Cellular service is turned off")),
    "wifi_off": script(call("set_wifi_status", on=False), say("Wifi is turned off")),
    "get_cellular": script(call("get_cellular_service_status"), say("Cellular service is on")),
    "search_name_with_relationship": script(call("search_contacts", relationship="boss"),
                                            say("Your boss is Homer S")),
    "search_relationship_with_phone_number": script(call("search_contacts", phone_number="+10000000000"),
                                                    say("+10000000000 is your boss")),
    "add_contact_with_name_and_phone_number": script(
        call("add_contact", name="Stephen Sondheim", phone_number="+19876543210"),
        say("Stephen Sondheim has been added to your contact")),
    "remove_contact_with_id": script(call("remove_contact", person_id=FREDRIK),
                                     say(f"{FREDRIK} has been removed from your contact")),
    "update_contact_with_id_and_phone_number": script(
        call("modify_contact", person_id=FREDRIK, phone_number="+19876543210"),
        say(f"{FREDRIK}'s  phone number have been updated to +19876543210")),
    "search_sender_phone_number_with_content": script(call("search_messages", content="GPU"),
                                                      say("+18307976530 asked you if you want some GPUs")),
    "send_message_with_phone_number_and_content": script(
        call("send_message_with_phone_number", phone_number="+12453344098", content=ALBUM),
        say(f"Your message to +12453344098 has been sent saying: {ALBUM}")),
    "find_thanksgiving_timestamp": script(call("search_holiday", holiday_name="Thanksgiving"),
                                          say(lambda r: f"Thanksgiving is at timestamp {r[-1]}")),
    # multiple tool calls, state dependency
    "remove_contact_by_phone": script(*_REMOVE_FREDRIK),
    "remove_contact_by_phone_alt": script(*_REMOVE_FREDRIK),
    "update_contact_relationship_with_relationship": script(
        *_FRIENDS_TO_ENEMIES, say("All your friends are now your enemies")),
    "update_contact_relationship_with_relationship_alt": script(*_FRIENDS_TO_ENEMIES, say("Done.")),
    "turn_on_cellular_low_battery_mode": script(
        call("set_low_battery_mode_status", on=False), call("set_cellular_service_status", on=True),
        say("Cellular service has been turned on.")),
    "turn_on_cellular_low_battery_mode_implicit": script(
        call("set_low_battery_mode_status", on=False), call("set_cellular_service_status", on=True),
        say("Cellular service has been turned on.")),
    "send_message_with_contact_content_cellular_off": script(*_SEND_TO_FREDRIK),
    "send_message_with_contact_content_cellular_off_alt": script(*_SEND_TO_FREDRIK),
    # multiple user turns
    "remove_contact_by_phone_multiple_user_turn": script(
        say("Sure. Which contact should I delete?"), *_REMOVE_FREDRIK,
        user=["The one with phone number +12453344098"]),
    "remove_contact_by_phone_multiple_user_turn_alt": script(
        call("search_contacts", phone_number="+12453344098"), say("That is Fredrik Thordendal."),
        call("remove_contact", person_id=FREDRIK),
        say("Fredrik Thordendal has been removed from your contact"),
        user=["Please delete him from my contacts"]),
    "send_message_with_contact_content_cellular_off_multiple_user_turn": script(
        say("Who should I send it to, and what should it say?"), *_SEND_TO_FREDRIK,
        user=[f"To Fredrik Thordendal, saying: {ALBUM}"]),
    "update_contact_relationship_with_relationship_multiple_user_turn": script(
        call("search_contacts", relationship="friend"),
        say("Your friends are Fredrik Thordendal and John Petrucci."),
        call("modify_contact", person_id=FREDRIK, relationship="enemy"),
        call("modify_contact", person_id=JOHN, relationship="enemy"),
        say("Fredrik Thordendal and John Petrucci are now your enemies"),
        user=["Make them both my enemies"]),
    # insufficient information: the right move is to say what is missing
    "remove_contact_by_phone_no_remove_contact_insufficient_information": script(
        say("I cannot remove the phone number from your contact , because I don't have the tools available.")),
    "remove_contact_by_phone_no_search_contacts_insufficient_information": script(
        say("I cannot look up which contact has that phone number, so I cannot remove it.")),
    "find_days_till_holiday_insufficient_information": script(
        say("I cannot tell today's date with the tools I have, so I cannot count the days.")),
    "send_message_with_contact_content_cellular_off_insufficient_information": script(
        say("I cannot find Fredrik Thordendal's phone number with the tools I have.")),
}

WRONG: dict[str, Script] = {
    # a wrong value: cellular turned on instead of off
    "cellular_off": script(call("set_cellular_service_status", on=True), say("Cellular service is turned off")),
    # the wrong contact removed
    "remove_contact_by_phone": script(call("search_contacts", phone_number="+12453344098"),
                                      call("remove_contact", person_id=JOHN),
                                      say("Phone number +12453344098 has been removed from your contact")),
    # a missed state dependency: sending with cellular off fails
    "send_message_with_contact_content_cellular_off": script(
        call("search_contacts", name="Fredrik Thordendal"),
        call("send_message_with_phone_number", phone_number="+12453344098", content=ALBUM),
        say(f"Your message to Fredrik Thordendal has been sent saying: {ALBUM}")),
    # insufficient information, but the agent makes up what it lacks
    "find_days_till_holiday_insufficient_information": script(
        call("search_holiday", holiday_name="Christmas Day"),
        call("timestamp_diff", lambda r: {"timestamp_0": 1700000000.0, "timestamp_1": r[-1]}),
        say(lambda r: f"It is {r[-1]['days']} days till Christmas Day")),
    "send_message_with_contact_content_cellular_off_insufficient_information": script(
        call("set_cellular_service_status", on=True),
        call("send_message_with_phone_number", phone_number="+12453344098", content=ALBUM),
        say(f"Your message to Fredrik Thordendal has been sent saying: {ALBUM}")),
}

END = "end_conversation"


class ToolSandboxGold:
    """Callable as a ``testkit.scripted`` script (purposes ``executor`` and ``user``).

    ``name_map(task_id)`` gives the task's agent-facing → execution-facing tool names (from
    ``ToolSandboxEnvironment.task_info``); ``wrong=True`` plays :data:`WRONG` instead.
    """

    def __init__(self, name_map: Callable[[str], dict[str, str]], wrong: bool = False):
        self.name_map = name_map
        self.scripts = WRONG if wrong else GOLD

    def model_name(self, name: str = "toolsandbox-gold") -> str:
        return register_script(name, self)

    def script_for(self, task_id: str) -> Script:
        base = convert.base_name(task_id, self.scripts)
        if base not in self.scripts:
            raise KeyError(f"no scripted play for ToolSandbox scenario {task_id!r}")
        return self.scripts[base]

    def __call__(self, request: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
        task_id, purpose = context["task_id"], context.get("purpose")
        play = self.script_for(task_id)
        messages = [m for m in request["messages"] if m.get("role") != "system"]
        if purpose == "executor":
            return self._agent(play, task_id, messages)
        if purpose == "user":
            return self._user(play, request["messages"])
        raise ValueError(f"the ToolSandbox gold plays executor and user, not {purpose!r}")

    def _agent(self, play: Script, task_id: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        index = sum(1 for m in messages if m.get("role") == "assistant")
        if index >= len(play.agent):
            return text("Is there anything else I can help with?")
        step, results = play.agent[index], tool_results(messages)
        if step.name is None:
            words = step.say(results) if callable(step.say) else step.say
            return text(words)
        to_agent = {v: k for k, v in self.name_map(task_id).items()}
        args = step.args(results) if callable(step.args) else step.args
        return tool_call(to_agent.get(step.name, step.name), args)

    @staticmethod
    def _user(play: Script, messages: list[dict[str, Any]]) -> dict[str, Any]:
        last_system = max(i for i, m in enumerate(messages) if m.get("role") == "system")
        turns = sum(1 for m in messages[last_system + 1:] if m.get("role") == "assistant")
        index = turns - 1  # its first turn is the scenario's scripted opening
        if 0 <= index < len(play.user):
            return text(play.user[index])
        return tool_call(END, {})


def tool_results(messages: list[dict[str, Any]]) -> list[Any]:
    """Tool outputs so far, as Python values where they parse (ToolSandbox prints ``repr``)."""
    out = []
    for m in messages:
        if m.get("role") == "tool":
            try:
                out.append(ast.literal_eval(m.get("content") or ""))
            except (ValueError, SyntaxError):
                out.append(m.get("content"))
    return out


def register_roles(name: str, name_maps: dict[str, dict[str, str]], wrong: bool = False) -> str:
    """Register ``scripted/<name>``: the fixed roles with this script as executor and user, for
    the tasks in ``name_maps`` (task id -> agent-facing -> execution-facing names). Plain data
    in, so ``functools.partial(register_roles, ...)`` can register the same model in Ray workers."""
    from testkit.roles import ScriptedRoles

    return ScriptedRoles(act=ToolSandboxGold(name_maps.__getitem__, wrong=wrong)).model_name(name)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m runtime.validate --env toolsandbox`` with this script as every model."""
    from envs.toolsandbox import ToolSandboxEnvironment
    from runtime import validate
    from testkit.roles import ScriptedRoles

    env = ToolSandboxEnvironment(max_servers=1)
    gold = ToolSandboxGold(lambda task_id: env.task_info("default", task_id)["tool_name_map"],
                           wrong="--wrong" in (argv or sys.argv[1:]))
    args = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--wrong"]
    model = ScriptedRoles(act=gold).model_name("toolsandbox-gold-roles")
    if "--tasks" not in args and "--task-ids" not in args:
        args += ["--tasks", ",".join(gold.scripts)]
    try:
        return validate.main(["--env", "toolsandbox", "--model", model, *args])
    finally:
        env.close()


if __name__ == "__main__":
    sys.exit(main())
