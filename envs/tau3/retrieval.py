"""τ³ banking_knowledge's retrieval configurations, as data the runtime can check before it
starts a server: which run offline, and why the others cannot run here.

The names are tau2-bench 1.0.1's (``tau2.domains.banking_knowledge.retrieval``); the server
checks the chosen one against the installed release again when it starts.
"""

from __future__ import annotations

from envs.base import UnknownTaskError

DOMAIN = "banking_knowledge"
DEFAULT = "bm25"
"""The runtime's default: offline, and a real search (τ³'s own default, ``alltools``, needs an
embeddings endpoint)."""

OFFLINE = ("bm25", "bm25_grep", "full_kb", "golden_retrieval", "grep_only", "no_knowledge")
"""Need neither a model nor a service: BM25 or grep over the documents, the whole knowledge base
or the task's required documents in the policy, or no documents at all."""

EMBEDDINGS = ("openai_embeddings", "openai_embeddings_grep", "qwen_embeddings", "qwen_embeddings_grep",
              "alltools", "alltools-qwen", "AllTools")
"""Need an embeddings endpoint and nothing else: they run when the runtime has one configured
(``--embeddings-api-base``, or the provider's key in the environment), their vectors answered
through litellm by the runtime (:mod:`envs.tau3.embeddings`)."""

NOT_HERE = {
    **{name: "needs an embeddings endpoint (OpenAI or OpenRouter embeddings)" for name in EMBEDDINGS},
    **{name: "needs an embeddings endpoint and a reranker model" for name in (
        "openai_embeddings_reranker", "openai_embeddings_reranker_grep", "qwen_embeddings_reranker",
        "qwen_embeddings_reranker_grep")},
    **{name: "needs a reranker model inside the environment" for name in ("bm25_reranker", "bm25_reranker_grep")},
    **{name: "needs Anthropic's sandbox-runtime (srt) and bubblewrap" for name in ("terminal_use", "terminal_use_write")},
}
"""Configurations of the release this runtime does not run: their model calls would bypass the
runtime's model layer (keys, cache, accounting, scrubbing), or they need a sandbox tool."""

SEARCHES = ("bm25", "bm25_grep", "grep_only")
"""Configurations whose tools let the agent look documents up: the whole knowledge base is
public for the leak guard (``TaskView.retrievable``)."""


def check(name: str | None, domain: str | None, embeddings: bool = False) -> str | None:
    """The configuration a run uses (None outside banking); ``UnknownTaskError`` in one line for
    one that cannot run here or does not exist. ``embeddings``: an embeddings endpoint is
    configured, so the configurations that need only that run too."""
    if name is not None and domain not in (None, DOMAIN):
        raise UnknownTaskError(f"--retrieval {name}: retrieval configurations apply to --domain {DOMAIN} only")
    if domain != DOMAIN:
        return None
    name = name or DEFAULT
    if name in OFFLINE or (embeddings and name in EMBEDDINGS):
        return name
    offline = ", ".join(OFFLINE)
    if name in EMBEDDINGS:
        raise UnknownTaskError(f"--retrieval {name} {NOT_HERE[name]} and none is configured: give "
                               f"--embeddings-api-base (its key from the environment); offline "
                               f"configurations: {offline}")
    if name in NOT_HERE:
        raise UnknownTaskError(f"--retrieval {name} {NOT_HERE[name]}, which this runtime does not "
                               f"configure; offline configurations: {offline}")
    raise UnknownTaskError(f"unknown --retrieval {name!r}; offline configurations: {offline}")
