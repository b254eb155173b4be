"""Planners: make a plan from a ``TaskView``, revise it from a ``Critique``.

``Plan`` (APB's holistic format) lives here; the default is ``planners.llm.LLMPlanner``.
"""

from planners.plan import Plan, ToolStep

__all__ = ["Plan", "ToolStep"]
