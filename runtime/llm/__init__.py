"""The model layer: every model call of every role goes through here to litellm.

``layer`` (specs per role, retries, the response cache, token and cost accounting),
``local_provider`` (the embedded offline model behind litellm) with its helpers
``json_grammar`` (JSON schema → llama.cpp grammar), ``grammar_gate`` (greedy decoding that
checks the top token before masking), ``closing_pressure`` (closing JSON near the budget),
``state_cache`` (saved prompt states, bounded in bytes), ``call_trace`` (per-call timings for
profiling), and ``embedded_weights`` (finding and checking the default weights).
"""
