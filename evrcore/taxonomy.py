"""E1–E6, the Agent Planning Benchmark's error taxonomy: written once, here, for the plan judge,
the critic and the reviser.

APB's released holistic judge (``evaluation/apb_eval/prompts.py`` of
Mikivishy/AgentPlanningBenchmark) names the six categories without defining them, and its older
per-dataset judges (``legacy_reference/holistic/offline_judge_all.py``) define them in ways
that conflict. So each definition below follows the APB paper's category (arXiv:2606.04874:
its name and what it covers, with the note that a valid alternative path is no logic error),
and each edge case says which of the per-dataset judges it follows and, where they disagree,
which reading was chosen and why. ``source`` is that trail, kept beside the words it explains.
"""

from __future__ import annotations

from dataclasses import dataclass

PAPER = "APB paper (arXiv:2606.04874), error taxonomy"
LEGACY = "APB legacy per-dataset judges (legacy_reference/holistic/offline_judge_all.py)"


@dataclass(frozen=True)
class ErrorDefinition:
    code: str
    name: str
    definition: str
    source: str

    def text(self) -> str:
        return f"{self.name}: {self.definition}"


DEFINITIONS: tuple[ErrorDefinition, ...] = (
    ErrorDefinition(
        "E1", "goal understanding",
        "the plan pursues a different goal than the one the user asked for (it misreads the "
        "request's intent, or solves another problem); harmless extra steps after the goal is "
        "reached are not E1",
        f"{PAPER}: E1 goal understanding; the harmless-extra-steps exemption from {LEGACY}, "
        "AgentNet rubric. Hard-coding the answer is filed under E6, not E1 (see E6)."),
    ErrorDefinition(
        "E2", "premature conclusion / task incompleteness",
        "the plan ends before the task is done: a significant, distinct part of the request is "
        "left out or the plan concludes before the goal is reached (a minor, non-critical "
        "omission lowers the grade instead of setting E2)",
        f"{PAPER}: E2 premature conclusion / task incompleteness; 'significant, distinct part' "
        f"and the minor-omission rule from {LEGACY}, GAIA rubric (E2_INCOMPLETE_COVERAGE)."),
    ErrorDefinition(
        "E3", "constraint violation",
        "the plan breaks an explicit constraint of the user or a rule of the policy (acting "
        "without a confirmation the policy requires, an option the user ruled out, a limit the "
        "policy sets)",
        f"{PAPER}: E3 constraint violation; explicit-constraint scope as in every judge of "
        f"{LEGACY}. The FrameThinker and GTA rubrics also file hard-coded answers here; this "
        "project does not (see E6), so E3 stays about stated constraints."),
    ErrorDefinition(
        "E4", "logic error",
        "the chain of causality is broken: a step needs data that no earlier step and no user "
        "turn provides, steps depend on each other in a circle, or a step is impossible in the "
        "state the plan has reached. A valid alternative path to the goal is not E4, even when "
        "it differs from the reference; nor are redundant, re-checking or inefficient steps, or "
        "an optimistic assumption about what a tool will return",
        f"{PAPER}: E4 logic error, with its note that a valid alternative path is no error; "
        f"broken dependency / circular / impossible action from {LEGACY}, FrameThinker and GTA "
        "rubrics; the optimistic-assumption and redundancy exemptions from its GAIA rubric."),
    ErrorDefinition(
        "E5", "tool-use error",
        "an offered tool is used for something outside what it can do, or a fundamentally "
        "wrong tool or wrong kind of argument is chosen (an order id where a user id is "
        "required); parameter syntax, formatting, invented parameter names that convey the "
        "right intent, or suboptimal values are not E5",
        f"{PAPER}: E5 tool-use error; 'fundamentally wrong' and the syntax exemption from "
        f"{LEGACY}, GAIA and FrameThinker rubrics. Its AgentNet rubric counts 'wrong parameter "
        "types' as E5: read here as a wrong kind of argument, not a type's spelling."),
    ErrorDefinition(
        "E6", "hallucination",
        "the plan relies on something that does not exist or is not yet known: a tool that is "
        "not among the available tools, or a value, name, result or final answer that could "
        "only be known after running the tools, stated as already known (a value the user or "
        "the policy gave is not a hallucination)",
        f"{PAPER}: E6 hallucination; fake tools from {LEGACY}, FrameThinker rubric; values "
        "known only after execution from its GAIA and GTA rubrics (a value in the user's words "
        "is not E6, GTA). Hard-coded answers are filed here because the answer is a value the "
        "plan cannot know yet; the rubrics disagree (AgentNet: E1, FrameThinker: E3)."),
)

ERROR_CODES: dict[str, str] = {d.code: d.text() for d in DEFINITIONS}
"""E1–E6 as the prompts and the reviser read them: ``"name: definition"``."""


def definitions_text(numbered: bool = False) -> str:
    """The six definitions as one block for a prompt: the same words in judge and critic."""
    return "\n".join(f"{i}. {d.code} {d.text()}" if numbered else f"{d.code} {d.text()}"
                     for i, d in enumerate(DEFINITIONS, 1))
