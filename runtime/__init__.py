"""The executable-validation runtime: runs the episodes and the commands around them.

Lives here, top to bottom (an import-linter contract checks the order): the commands
(``validate``, ``ablate``, ``table3``, ``report``, ``envs``, ``planners``) with their parser
builder (``args``) and shared helper (``cli``); settings (``config``) and the composition root
(``build``); the executors (``backends/``: threads, Ray); the batch layer (``batch/``, the one
owner of pending / retry / stop / the run folder); one episode (``episode/``: its ``RunSpec``,
services, state machine, executor and simulated user); the model layer (``llm/``). Beside them:
records and the run folder (``records``, ``store``), failure kinds (``failures``), secret
scrubbing (``scrub``), loguru's sinks (``logs``) and what a run folder says (``reports/``).

May import: ``critique``, ``planners``, ``evrcore`` and ``envs``; never ``testkit``.

Importing litellm fetches a price map from the network unless told to use its bundled copy;
every entry point imports this package first, so that is settled here
(``envs.use_bundled_price_map``), before anything imports litellm.
"""

from envs import use_bundled_price_map

use_bundled_price_map()
