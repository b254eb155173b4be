"""Everything that may see the ``Supervision``: the anti-leak critic (free text), the sealed
critic and its counted channel, the plan judge, the critique strategies, provenance, with their
prompts; and the free-text guard as one room of its own (``critique.guard``).

May import: ``evrcore`` (the critique types, the plan, the chat protocol), ``planners`` and
``envs``; never ``runtime``. Import submodules directly (``critique.critic``,
``critique.guard.leak_guard``); the critique *types* live in ``evrcore.critique`` and are
re-exported here for convenience.
"""

from evrcore.critique import ERROR_CODES, GRADES, Critique, ErrorFlags

__all__ = ["Critique", "ERROR_CODES", "ErrorFlags", "GRADES"]
