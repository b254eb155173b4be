"""One episode, pure: ``run_episode(spec, services, key, artifacts) -> (record, made)``.

Lives here: the run's settings as plain data (``spec.RunSpec``: re-created whole in any process),
what an episode runs on (``services``: the environment, the model layer, the planner), the
in-memory shared artifacts (``artifacts``: the opening request and ``p0`` made once and reused),
the state machine (``graph``), the plan-conditioned executor and the simulated user's turn
(``executor``, ``simulated_user``), the record an episode ends in (``engine``) and the kind and
cause of a failure it records (``failures``).

An episode never writes the run folder: what it made comes back with its record, and the batch
layer (``runtime.batch``) writes both. May import ``runtime.llm``, ``runtime.folder.records``,
``runtime.folder.scrub``, ``critique``, ``planners``, ``evrcore`` and ``envs``; never
``runtime.batch``, ``runtime.folder.store``, the backends or the commands.
"""
