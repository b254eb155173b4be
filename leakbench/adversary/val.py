"""A supervision-only value a generator may plant: below the task loader and the derivations,
which both use it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Val:
    """A supervision-only value a critic could plant; ``label`` says what it is in prose."""

    value: str
    type: str
    label: str
    via: str = ""
