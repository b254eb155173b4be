"""Per-category mean score and turn count, aggregated the way ToolSandbox aggregates its runs.

ToolSandbox's ``get_category_summary`` (``tool_sandbox/cli/utils.py``) averages similarity and
turn count per scenario category, plus ``ALL_CATEGORIES``; a scenario counts once in each of
its categories, except that ``THREE_DISTRACTION_TOOLS`` is skipped for the scrambled variants
(they are built on top of it and would double-count it). This module does the same from our
episode records, separately per mode, so a run summary reports ToolSandbox's own numbers.

Records need ``score``, ``turns`` and ``score_info["categories"]`` (the ToolSandbox adapter puts
its categories and turn count in ``Score.info``). Errored episodes have no score and are left
out (the summary counts them per mode); a scenario that raised inside ToolSandbox is a scored
episode (0, turn count = max), as in ToolSandbox.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable, Iterable

ALL_CATEGORIES = "ALL_CATEGORIES"
THREE_DISTRACTION_TOOLS = "THREE_DISTRACTION_TOOLS"
SCRAMBLED = frozenset({
    "TOOL_NAME_SCRAMBLED", "TOOL_DESCRIPTION_SCRAMBLED", "ARG_DESCRIPTION_SCRAMBLED",
    "ARG_TYPE_SCRAMBLED", "ARG_NAME_SCRAMBLED",
})


def aggregate(results: Iterable[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """``[{categories, similarity, turn_count}]`` → ``{category: {n, similarity, turn_count}}``
    (means), in ToolSandbox's rules. ``ALL_CATEGORIES`` comes first, the rest sorted."""
    lists: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for result in results:
        categories = [str(c) for c in result["categories"]]
        for category in categories:
            if category == THREE_DISTRACTION_TOOLS and SCRAMBLED & set(categories):
                continue
            lists[category]["similarity"].append(float(result["similarity"]))
            lists[category]["turn_count"].append(float(result["turn_count"]))
        lists[ALL_CATEGORIES]["similarity"].append(float(result["similarity"]))
        lists[ALL_CATEGORIES]["turn_count"].append(float(result["turn_count"]))
    order = ([ALL_CATEGORIES] if ALL_CATEGORIES in lists else []) + sorted(c for c in lists if c != ALL_CATEGORIES)
    return {
        c: {"n": len(lists[c]["similarity"]),
            "similarity": sum(lists[c]["similarity"]) / len(lists[c]["similarity"]),
            "turn_count": sum(lists[c]["turn_count"]) / len(lists[c]["turn_count"])}
        for c in order
    }


def _get(record: Any, name: str, default: Any = None) -> Any:
    return record.get(name, default) if isinstance(record, dict) else getattr(record, name, default)


def result_of(record: Any) -> dict[str, Any] | None:
    """One scored record as ToolSandbox's per-scenario result; ``None`` if it has no categories
    or no score (an errored episode)."""
    info = _get(record, "score_info") or {}
    categories = info.get("categories")
    score = _get(record, "score")
    if not categories or score is None or _get(record, "status") == "error":
        return None
    turns = info.get("turn_count", _get(record, "turns"))
    return {"categories": categories, "similarity": score, "turn_count": turns if turns is not None else 0}


def mode_of(record: Any) -> str:
    key = _get(record, "key")
    return _get(key, "mode") if key is not None else _get(record, "mode", "all")


def by_category(records: Iterable[Any], group: Callable[[Any], str] = mode_of
                ) -> dict[str, dict[str, dict[str, float]]]:
    """``{group: {category: {n, similarity, turn_count}}}`` for records that carry categories
    (EpisodeRecord objects or their JSON dicts); ``group`` defaults to the mode (pass e.g. the
    summary's mode+strategy arm). Empty when no record has categories (e.g. τ²-bench)."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        result = result_of(record)
        if result is not None:
            groups[group(record)].append(result)
    return {name: aggregate(results) for name, results in groups.items()}


def category_table(by_cat: dict[str, dict[str, dict[str, float]]], title: str = "per category"):
    """One row per category, a similarity, turn-count and n column per mode; fits the terminal
    (``runtime.reports.fit``)."""
    from runtime.reports.fit import Col, FitTable

    modes = list(by_cat)
    columns = [Col("category", left=True)]
    for mode in modes:
        columns += [Col(f"{mode} score", f"{mode} sc."), Col(f"{mode} turns", f"{mode} t."),
                    Col(f"{mode} n", f"{mode} n")]
    categories: list[str] = []
    for rows in by_cat.values():
        categories += [c for c in rows if c not in categories]
    table_rows = []
    for category in categories:
        cells = [category.lower()]
        for mode in modes:
            row = by_cat[mode].get(category)
            cells += ([f"{row['similarity']:.3f}", f"{row['turn_count']:.1f}", str(row["n"])]
                      if row else ["–", "–", "0"])
        table_rows.append(cells)
    return FitTable(title, columns, table_rows)
