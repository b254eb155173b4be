"""τ³ banking's embedders with their vectors answered by the runtime.

The release's dense retrieval (``openai_embeddings*``, ``qwen_embeddings*``, ``alltools*``)
embeds the knowledge base and each query with ``OpenAIEmbedder`` / ``OpenRouterEmbedder``,
which call their providers with a key from the environment. An env server holds no keys (the
runtime strips them from its environment) and must not bypass the model layer, so when the
runtime says it answers embeddings (``$EVR_TAU3_EMBEDDINGS``) the two embedders' calls become
``embed_turn`` callbacks: the model name and the texts are the release's, the pipeline, the
index and the search stay the release's; only the vectors come from the runtime (litellm, its
key rules and scrubbing).

The release keeps document embeddings on disk under ``data/.embeddings_cache`` of the working
directory, keyed by embedder and model but not endpoint: here that cache lives in a folder the
runtime names per endpoint and model (``$EVR_TAU3_EMBEDDINGS_CACHE``), so vectors from one
endpoint are never served as another's.
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any, Callable

EMBEDDINGS_VAR = "EVR_TAU3_EMBEDDINGS"
CACHE_VAR = "EVR_TAU3_EMBEDDINGS_CACHE"


def wanted() -> bool:
    """Whether this server was started to ask the runtime for embeddings."""
    return os.environ.get(EMBEDDINGS_VAR) == "1"


class RuntimeEmbeddings:
    """Stands in for the OpenAI SDK client the release's embedders build: ``embeddings.create``
    asks the runtime (``embed``) under litellm's name for the model (``<provider>/<model>``)."""

    def __init__(self, embed: Callable[[str, list[str]], list[list[float]]], provider: str):
        self._embed = embed
        self._provider = provider
        self.embeddings = self

    def __call__(self, api_key: Any = None, base_url: Any = None, **_: Any) -> "RuntimeEmbeddings":
        return self  # the release's ``OpenAI(api_key=..., base_url=...)``: no key, no URL here

    def create(self, input: list[str], model: str, **_: Any) -> SimpleNamespace:  # noqa: A002
        vectors = self._embed(f"{self._provider}/{model}", list(input))
        return SimpleNamespace(data=[SimpleNamespace(embedding=v) for v in vectors])


def answer_with(embed: Callable[[str, list[str]], list[list[float]]]) -> None:
    """Route the release's embedders to ``embed`` (the connection's ``embed_turn``) for the
    rest of this process, and put their disk cache where the runtime said. The embedders'
    own code (prefixes, batching, retries) is unchanged: only the client they call is."""
    from tau2.knowledge import embeddings_cache
    from tau2.knowledge.embedders import openai_embedder, openrouter_embedder

    openai_embedder.OpenAI = RuntimeEmbeddings(embed, "openai")
    openrouter_embedder.OpenAI = RuntimeEmbeddings(embed, "openrouter")
    folder = os.environ.get(CACHE_VAR)
    if folder:
        embeddings_cache._global_cache = embeddings_cache.EmbeddingsCache(cache_dir=folder)
