"""Grammar-constrained greedy decoding that checks the model's own choice first.

Why: llama-cpp-python applies a grammar to every token of the vocabulary at every step (49,152
tokens for SmolLM2): profiled on the embedded model that cost about as much as generating the
token itself. Under greedy decoding the answer is the same if we first look at the one token
the model prefers and test only that against the grammar; only when it is not allowed is the
whole vocabulary masked (what llama.cpp's own samplers do). The result is identical to
masking every step, since a valid top token is also the top valid token.

Used as the last logits processor, with no ``grammar=`` given to llama-cpp-python and a
temperature of 0 (sampling at a higher temperature needs the whole mask: the provider keeps
llama-cpp-python's grammar path for it).
"""

from __future__ import annotations

import ctypes

import llama_cpp
import numpy as np

__all__ = ["GrammarGate"]

_TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


class GrammarGate:
    """Logits processor for one completion: keeps the top token if the grammar allows it,
    else masks every token the grammar forbids. Tracks the grammar's state by accepting the
    tokens that were generated since its last call."""

    def __init__(self, vocab: llama_cpp.llama_vocab_p, gbnf: str, n_vocab: int) -> None:
        self._sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), b"root")
        if not self._sampler:
            raise ValueError(f"llama.cpp rejected the grammar:\n{gbnf}")
        self._all = (llama_cpp.llama_token_data * n_vocab)()
        self._view = np.frombuffer(self._all, dtype=_TOKEN_DATA)
        self._view["id"] = np.arange(n_vocab, dtype=np.intc)
        self._all_array = llama_cpp.llama_token_data_array(
            data=ctypes.cast(self._all, llama_cpp.llama_token_data_p), size=n_vocab, selected=-1, sorted=False)
        self._one = llama_cpp.llama_token_data()
        self._one_array = llama_cpp.llama_token_data_array(
            data=ctypes.pointer(self._one), size=1, selected=-1, sorted=False)
        self._prompt_len: int | None = None
        self._accepted = 0
        self.full_masks = 0
        self.checks = 0

    def allows(self, token: int) -> bool:
        self._one.id, self._one.logit, self._one.p = token, 0.0, 0.0
        self._one_array.size, self._one_array.selected = 1, -1
        llama_cpp.llama_sampler_apply(self._sampler, ctypes.byref(self._one_array))
        return self._one.logit != -np.inf

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if self._prompt_len is None:
            self._prompt_len = len(input_ids)
        for token in input_ids[self._prompt_len + self._accepted:]:
            llama_cpp.llama_sampler_accept(self._sampler, int(token))
            self._accepted += 1
        self.checks += 1
        if self.allows(int(np.argmax(scores))):
            return scores
        self.full_masks += 1
        self._view["logit"] = scores
        self._view["p"] = 0.0
        self._all_array.size, self._all_array.selected, self._all_array.sorted = len(scores), -1, False
        llama_cpp.llama_sampler_apply(self._sampler, ctypes.byref(self._all_array))
        scores[:] = self._view["logit"]
        return scores

    def close(self) -> None:
        if self._sampler:
            llama_cpp.llama_sampler_free(self._sampler)
            self._sampler = None

    def __del__(self) -> None:
        self.close()
