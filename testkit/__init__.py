"""Honest test doubles and kits for testing with this runtime.

Nothing here stands in for a model a user would evaluate: scripted models replay what a test
tells them (e.g. a task's reference actions) to prove the plumbing, not a model's ability.
Lives here: scripted models behind litellm (``scripted``), the gold replay, plan-following
controls, the planner conformance kit, and ``run_scripted`` (a real command with scripted roles).

May import: every layer below it (``runtime``, ``critique``, ``planners``, ``evrcore``, ``envs``);
nothing of the project imports ``testkit``.
"""

from envs import use_bundled_price_map

use_bundled_price_map()  # before ``scripted`` imports litellm
