"""Finding a planner: by import path (``pkg.module:Class``) or by entry point in the group
``runtime.planners``, so a developer tests their planner with no change to this project.

A planner factory is called with one argument, the tested model (a ``ChatModel``: the planner
may use it or ignore it), and must return an object with ``plan(view)`` and
``revise(view, plan, critique)``; either may be ``async``. ``adapt`` wraps what it returns so
the runtime always sees a synchronous ``Planner`` that returns ``Plan`` objects.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from importlib.metadata import entry_points
from typing import Any, Callable

from evrcore.critique import AnyCritique, Reviewer
from envs.base import TaskView
from evrcore.chat import ChatModel
from evrcore.plan import Plan

GROUP = "runtime.planners"
BUILTIN = {"llm": "planners.llm:LLMPlanner"}


class PlannerLoadError(ValueError):
    """A planner could not be found or does not satisfy the protocol."""


def available() -> dict[str, str]:
    """Planner name → import path, built-ins first, then installed entry points."""
    found = dict(BUILTIN)
    for ep in entry_points(group=GROUP):
        found[ep.name] = ep.value
    return found


def load(spec: str) -> Callable[[ChatModel], Any]:
    """The factory named by ``spec``: an entry-point name, a built-in name, or ``module:attr``."""
    target = available().get(spec, spec)
    if ":" not in target:
        raise PlannerLoadError(
            f"unknown planner {spec!r}; give an import path 'package.module:Class' or one of: "
            f"{', '.join(available())}"
        )
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise PlannerLoadError(f"planner {spec!r}: cannot import module {module_name!r} ({exc})") from exc
    except Exception as exc:  # noqa: BLE001 - a module that fails while importing is a load error
        raise PlannerLoadError(f"planner {spec!r}: importing module {module_name!r} raised "
                               f"{type(exc).__name__}: {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise PlannerLoadError(f"planner {spec!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise PlannerLoadError(f"planner {spec!r}: {target} is not a class or factory")
    return obj


def build(factory: Callable[..., Any], model: ChatModel, name: str = "planner") -> "AdaptedPlanner":
    """Instantiate a planner (with the model if its factory takes an argument) and check it."""
    try:
        takes_model = bool(inspect.signature(factory).parameters)
    except (TypeError, ValueError):
        takes_model = True
    try:
        instance = factory(model) if takes_model else factory()
    except Exception as exc:  # noqa: BLE001 - a planner that cannot be built is a load error
        raise PlannerLoadError(
            f"planner {name!r} does not satisfy the Planner protocol: constructing it raised "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    missing = [m for m in ("plan", "revise") if not callable(getattr(instance, m, None))]
    if missing:
        raise PlannerLoadError(
            f"planner {name!r} does not satisfy the Planner protocol: missing {', '.join(missing)}() "
            "(a planner needs plan(view) and revise(view, plan, critique))"
        )
    return AdaptedPlanner(instance, name)


class AdaptedPlanner:
    """A user planner seen through the protocol: sync calls, ``Plan`` results, clear errors."""

    def __init__(self, inner: Any, name: str):
        self.inner = inner
        self.name = name

    def plan(self, view: TaskView) -> Plan:
        return self._checked("plan", self._call(self.inner.plan, view), view)

    def revise(self, view: TaskView, plan: Plan, critique: AnyCritique,
               reviewer: Reviewer = "critic-with-reference") -> Plan:
        extra = {"reviewer": reviewer} if _accepts(self.inner.revise, "reviewer") else {}
        return self._checked("revise", self._call(self.inner.revise, view, plan, critique, **extra), view)

    @staticmethod
    def _call(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        result = method(*args, **kwargs)
        if inspect.isawaitable(result):
            result = asyncio.run(_await(result))
        return result

    def _checked(self, method: str, result: Any, view: TaskView) -> Plan:
        if isinstance(result, dict):
            try:
                result = Plan.from_apb(result)
            except (KeyError, TypeError, ValueError) as exc:
                raise PlannerLoadError(
                    f"planner {self.name!r}.{method}() returned a dict that is not an APB plan: {exc}"
                ) from exc
        if not isinstance(result, Plan):
            raise PlannerLoadError(
                f"planner {self.name!r}.{method}() returned {type(result).__name__}; expected a "
                "planners.Plan or an APB dict {'plan': str, 'tool_chain': [...]}"
            )
        return result.checked_against(view)


def _accepts(method: Callable[..., Any], name: str) -> bool:
    """Whether ``method`` takes a keyword ``name`` (older planners' ``revise`` does not)."""
    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


async def _await(awaitable: Any) -> Any:
    return await awaitable
