"""The executable-validation runtime: runs the episodes and the commands around them.

Lives here: the episode state machine (``graph``), the runner and its episode matrix
(``runner``), what kind of failure ended an episode (``failures``), the executor and the simulated user's turn (``executor``, ``simulated_user``),
records and the run folder (``records``, ``store``), settings (``config``), the composition root
(``build``), the shared command helper (``cli``) and the commands (``validate``, ``ablate``,
``table3``, ``report``, ``envs``, ``planners``); ``llm/`` is the model layer, ``reports/`` what
a run folder says.

May import: ``critique``, ``planners``, ``evrcore`` and ``envs``; never ``testkit``.

Importing litellm fetches a price map from the network unless told to use its bundled copy;
every entry point imports this package first, so set that here, before anything imports litellm.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
