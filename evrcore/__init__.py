"""The shared contracts, below both ``planners`` and ``critique``.

Lives here: the chat-model protocol every role speaks (``evrcore.chat``), the plan in APB's
holistic format (``evrcore.plan``), the critique types a critic returns and a reviser reads
(``evrcore.critique``), prompt rendering (``evrcore.prompts``), and the option parser every
command builds on (``evrcore.args``: one-line errors, ``--version``).

May import: ``envs`` (the boundary types) and third-party libraries; never ``planners``,
``critique`` or ``runtime``, so no import runs back up the layers.
"""
