"""The executable-validation runtime: runs the episodes and the commands around them.

The top level holds only the commands (``python -m runtime.<command>``): ``validate``,
``ablate``, ``table3``, ``report``, ``envs``, ``planners``, ``leak_eval``. Below them, one
sub-package a job, top to bottom (an import-linter contract checks the order): ``cli/`` the
commands' shared plumbing (parsers, lifecycle, exit codes, process end); ``compose/`` settings,
the early checks, the settings fingerprint and the composition root (``build``); ``backends/``
the executors (threads, Ray); ``batch/`` the one owner of pending / retry / stop / writing the
run folder; ``episode/`` one episode (its ``RunSpec``, services, state machine, executor,
simulated user, failure kinds); ``llm/`` the model layer; ``folder/`` the run folder's record
schema, store, scrubber and log sinks. ``reports/`` reads a run folder.

May import: ``critique``, ``planners``, ``evrcore`` and ``envs``; never ``testkit``.

Importing litellm fetches a price map from the network unless told to use its bundled copy;
every entry point imports this package first, so that is settled here
(``envs.use_bundled_price_map``), before anything imports litellm.
"""

from envs import use_bundled_price_map

use_bundled_price_map()
