"""The run folder and what goes into it: the record schema (``records``), the append-only store
with atomic writes (``store``), the scrubber every written or printed byte passes (``scrub``), and
the sinks of ``run.log`` (``logs``).

Only the batch layer writes the folder (an import-linter contract keeps ``runtime.episode`` from
importing ``store``); everything else reads records. The lowest layer of the runtime: it imports
nothing else of it.
"""
