"""Critique strategies: who critiques p0, whether they see the supervision, whether they use
the E1–E6 taxonomy. Every strategy produces p1 from the same p0, so their execution scores
compare the critique and nothing else.

| name | who critiques | sees the supervision | taxonomy |
| --- | --- | --- | --- |
| none | — (p1 = p0, the negative control) | – | – |
| self-nometric | the tested model | no | no |
| self-metric | the tested model | no | yes |
| critic-nometric | the critic model | no | no |
| critic-metric | the critic model | no | yes |
| anti-leak (default Refine) | the critic model | yes, through the leak guard | yes |
| leaky (UPPER BOUND, positive control) | the critic model | yes, and may reveal it | yes |
| sealed | the critic model, in enums only; rendered without a model (or worded by the tested model) | yes, through a closed schema | yes |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from critique.critic_settings import CriticSettings
from evrcore.critique import Reviewer

if TYPE_CHECKING:  # the critic (and its leak guard) is imported when a strategy makes one
    from critique.critic import Critic
    from critique.sealed import SealedCritic

DEFAULT_STRATEGY = "anti-leak"


@dataclass(frozen=True)
class Strategy:
    name: str
    critic_role: Literal["model", "critic_model"] | None
    settings: CriticSettings | None
    upper_bound: bool = False
    summary: str = ""

    @property
    def label(self) -> str:
        return f"{self.name} (upper bound)" if self.upper_bound else self.name

    @property
    def reviewer(self) -> Reviewer:
        """Who the reviser is told critiqued its plan."""
        if self.critic_role == "model":
            return "self"
        return "critic-with-reference" if self.settings and self.settings.sees_supervision else "critic"

    def critic(self, model, auditor=None, writer=None, sealed=None) -> Critic | SealedCritic | None:
        """The strategy's critic; ``auditor`` (a ``LeakAuditor``) is used only where the
        rationale is guarded (on a sealed arm it only measures); ``writer`` (a client of the
        *tested* model) words a sealed critique under ``sealed.writer == "tested"``; ``sealed``
        (``critique.sealed_options.SealedOptions``) defaults to the rendered writer."""
        if self.settings is None:
            return None
        if self.settings.sealed:
            from critique.sealed import SealedCritic

            return SealedCritic(model, writer=writer, auditor=auditor, options=sealed)
        from critique.critic import Critic

        return Critic(model, self.settings, auditor=auditor)


STRATEGIES: dict[str, Strategy] = {s.name: s for s in [
    Strategy("none", None, None, summary="negative control: p1 = p0"),
    Strategy("self-nometric", "model", CriticSettings(sees_supervision=False, taxonomy=False, guarded=False),
             summary="the tested model critiques its own plan in free text"),
    Strategy("self-metric", "model", CriticSettings(sees_supervision=False, taxonomy=True, guarded=False),
             summary="the tested model critiques its own plan with grade and E1–E6"),
    Strategy("critic-nometric", "critic_model", CriticSettings(sees_supervision=False, taxonomy=False, guarded=False),
             summary="the critic model, without the reference, in free text"),
    Strategy("critic-metric", "critic_model", CriticSettings(sees_supervision=False, taxonomy=True, guarded=False),
             summary="the critic model, without the reference, with grade and E1–E6"),
    Strategy("anti-leak", "critic_model", CriticSettings(),
             summary="the critic model sees the reference; its rationale passes the leak guard"),
    Strategy("leaky", "critic_model", CriticSettings(sees_supervision=True, taxonomy=True, guarded=False, may_reveal=True),
             upper_bound=True, summary="UPPER BOUND: the critic may reveal the reference"),
    Strategy("sealed", "critic_model", CriticSettings(sealed=True),
             summary="the critic sees the reference but answers in enums only (grade, E1–E6, findings "
             "pointing into p0); the rationale is rendered from that answer with no model"),
]}


def resolve(names: str | list[str]) -> list[Strategy]:
    """Strategies by name; ``all`` for every one. Unknown names raise ``ValueError``."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if names == ["all"]:
        return list(STRATEGIES.values())
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown or not names:
        raise ValueError(f"unknown critique strategy {', '.join(unknown) or '(none given)'}; "
                         f"accepted: all, {', '.join(STRATEGIES)}")
    return [STRATEGIES[n] for n in names]
