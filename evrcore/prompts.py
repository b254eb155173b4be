"""Prompt templates stored as Markdown files beside the code that uses them.

Placeholders are ``{{name}}``; plain replacement (not ``str.format``) because policies and
tool schemas are full of braces and dollar signs.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=None)
def _load(package: str, name: str) -> str:
    return resources.files(package).joinpath("prompts", f"{name}.md").read_text(encoding="utf-8")


def render(package: str, name: str, **values: str) -> str:
    text = _load(package, name)
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    if "{{" in text:
        missing = text[text.index("{{") : text.index("}}", text.index("{{")) + 2]
        raise KeyError(f"prompt {package}/{name} has an unfilled placeholder {missing}")
    return text
