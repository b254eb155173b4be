"""The executable-validation runtime: state machine, executor, model layer, CLI, results.

Importing litellm fetches a price map from the network unless told to use its bundled copy;
every entry point imports this package first, so set that here, before anything imports litellm.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
