"""Embeddings for a benchmark's own retrieval (τ³ banking's dense search), through litellm.

An env server asks for vectors (``embed_turn``) naming the release's model in litellm's
spelling (``openai/text-embedding-3-large``); this answers through ``litellm.embedding`` with
the model layer's key rules: keys come from the environment only (never from a setting, never
written), an ``api_base`` server without its provider's key gets the layer's placeholder, and
a provider's error is scrubbed before it is raised. ``--embeddings-model`` replaces the
release's model; ``--embeddings-api-base`` names the endpoint.
"""

from __future__ import annotations

import threading
from typing import Any

from runtime.folder.scrub import scrub


class EmbeddingsError(RuntimeError):
    """The embeddings endpoint failed; the message is scrubbed."""


class EmbeddingsEndpoint:
    """An ``envs.Embed``: (model the benchmark names, texts) → vectors."""

    def __init__(self, api_base: str | None = None, model: str | None = None, timeout: float = 300.0):
        self.api_base = api_base
        self.model = model
        self.timeout = timeout
        self.calls = 0
        self.texts = 0
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """Endpoint and model, as recorded (never a key): names the env server's vector cache."""
        return f"{self.model or 'the benchmark model'} at {self.api_base or 'the provider'}"

    def setting(self) -> dict[str, Any]:
        return {"model": self.model, "api_base": self.api_base}

    def __call__(self, model: str, texts: list[str]) -> list[list[float]]:
        import litellm

        from runtime.llm.layer import PLACEHOLDER_KEY

        name = self.model or model
        kwargs: dict[str, Any] = {"model": name, "input": list(texts), "timeout": self.timeout}
        if self.api_base:
            kwargs["api_base"] = self.api_base
            try:
                if not litellm.validate_environment(model=name).get("keys_in_environment", True):
                    kwargs["api_key"] = PLACEHOLDER_KEY
            except Exception:  # noqa: BLE001 - a provider litellm cannot check gets no placeholder
                pass
        try:
            response = litellm.embedding(**kwargs)
        except Exception as exc:  # noqa: BLE001 - one scrubbed line, never the provider's stack
            raise EmbeddingsError(scrub(f"embeddings {name}: {type(exc).__name__}: {exc}")[:500]) from None
        vectors = [list(item["embedding"]) for item in sorted(response.data, key=lambda d: d["index"])]
        if len(vectors) != len(texts):
            raise EmbeddingsError(f"embeddings {name}: {len(vectors)} vectors for {len(texts)} texts")
        with self._lock:
            self.calls += 1
            self.texts += len(texts)
        return vectors
