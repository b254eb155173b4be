"""The commands' shared plumbing: what every command does around its own job.

``args`` builds the parsers (errors in one line, exit 2; the budget options several commands
share), ``lifecycle`` runs a command's body (bad input → one line, a progress bar, Ctrl-C → a
resume line, the end-of-run summary, the exit codes), ``process_end`` ends the process without
the interpreter's slow teardown. Nothing here runs an episode: the parts that do are imported
when a run starts, so ``--help`` and bad input answer at once.

May import ``runtime.compose`` and ``runtime.folder`` (and, when a run starts, the layers below);
never the commands above it.
"""
