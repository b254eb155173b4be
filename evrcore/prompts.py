"""Prompt templates stored as Markdown files beside the code that uses them.

Placeholders are ``{{name}}``, filled in one pass over the template: a filled-in value (a user's
request, a policy, a tool schema) is never read again as template syntax, so text such as
``{{order}}`` in a value is kept as written. Plain replacement (not ``str.format``) because
policies and tool schemas are full of braces and dollar signs.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

PLACEHOLDER = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}")


@lru_cache(maxsize=None)
def _load(package: str, name: str) -> str:
    return resources.files(package).joinpath("prompts", f"{name}.md").read_text(encoding="utf-8")


def render(package: str, name: str, **values: str) -> str:
    """The template with each ``{{key}}`` replaced by ``values[key]``; a placeholder of the
    template with no value is a ``KeyError`` (checked on the template, never on the values)."""
    text = _load(package, name)
    missing = sorted({m for m in PLACEHOLDER.findall(text) if m not in values})
    if missing:
        raise KeyError(f"prompt {package}/{name} has an unfilled placeholder "
                       f"{', '.join('{{' + m + '}}' for m in missing)}")
    return PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), text)
