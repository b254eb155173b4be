"""Critics, the plan judge and the leak guard: everything that may see the ``Supervision``.

Import submodules directly (``critique.critic``, ``critique.leak_guard``); this package keeps
its top level light so that ``planners`` can import the ``Critique`` type without a cycle.
"""

from critique.schema import ERROR_CODES, GRADES, Critique, ErrorFlags

__all__ = ["Critique", "ERROR_CODES", "ErrorFlags", "GRADES"]
