"""Everything that may see the ``Supervision``: the anti-leak critic, the plan judge, the leak
guard and the critique strategies, with their prompts.

May import: ``evrcore`` (the critique types, the plan, the chat protocol), ``planners`` and
``envs``; never ``runtime``. Import submodules directly (``critique.critic``,
``critique.leak_guard``); the critique *types* live in ``evrcore.critique`` and are re-exported
here for convenience.
"""

from evrcore.critique import ERROR_CODES, GRADES, Critique, ErrorFlags

__all__ = ["Critique", "ERROR_CODES", "ErrorFlags", "GRADES"]
