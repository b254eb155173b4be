"""Composing a run: the settings a user gives, checked; the run built from them.

``config`` is the settings (one pydantic model for flags and YAML alike), ``preflight`` refuses
bad input from facts remembered by earlier commands before the heavy imports, ``fingerprint``
says which settings make two runs the same experiment, and ``build`` is the composition root
that turns settings into a ``Run``: the run spec, the services, the run folder.

May import the executors (``runtime.backends`` only as types), ``runtime.batch``,
``runtime.episode``, ``runtime.llm``, ``runtime.folder`` and the packages below the runtime.
"""
