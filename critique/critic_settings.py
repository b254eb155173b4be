"""What a critic is told to do: see the supervision or not, use the E1–E6 taxonomy or not, pass
its rationale through the leak guard or not, and whether it may reveal the reference.

Apart from ``critique.critic`` so the strategy table (``critique.strategies``), which every
command's option parser reads, does not import the leak guard and its word lists.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CriticSettings:
    sees_supervision: bool = True
    taxonomy: bool = True
    guarded: bool = True
    may_reveal: bool = False
    sealed: bool = False
    """Answer in the closed schema of ``critique.sealed``; the rationale is rendered from it
    (``critique.sealed_options``)."""
