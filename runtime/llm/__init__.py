"""The model layer: every model call of every role goes through here to litellm.

``layer`` (specs per role, retries, the response cache, token and cost accounting),
``local_provider`` (the embedded offline model behind litellm), ``json_grammar`` (JSON schema →
llama.cpp grammar) and ``embedded_weights`` (finding and checking the default weights).
"""
