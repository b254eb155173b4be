"""Planners: make a plan from a ``TaskView``, revise it from a ``Critique``.

The planner interface (``planners.base``), the default LLM planner (``planners.llm``), the
plug-in registry (``planners.registry``) and their prompts. ``Plan`` itself lives in
``evrcore.plan`` and is re-exported here for plug-in authors.

May import: ``evrcore`` and ``envs``; never ``critique`` or ``runtime``. A planner never
receives a ``Supervision``.
"""

from evrcore.plan import Plan, ToolStep

__all__ = ["Plan", "ToolStep"]
