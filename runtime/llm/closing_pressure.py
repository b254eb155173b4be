"""Making a model that loops, or runs out of budget, close its JSON under a grammar.

Why: under a grammar a small model can still repeat one phrase inside a string, or append
array items, until ``max_tokens`` cuts the JSON off (invalid output, then a retry). Boosting
the tokens that close lets it finish in a few tokens while the grammar keeps it valid.
"""

from __future__ import annotations

import llama_cpp
import numpy as np

__all__ = ["ClosingPressure", "closing_tokens"]


def closing_tokens(llm: llama_cpp.Llama) -> tuple[np.ndarray, np.ndarray]:
    """Token ids that close: a string (text starting with a quote) / a container (starting
    with a closing bracket), followed by nothing but closing brackets and whitespace
    Tokens such as ``},`` or ``","`` close one item only to start the
    next, so boosting them made a model under pressure append array items until the budget
    cut the JSON off."""
    quote, bracket = [], []
    for tok in range(llm.n_vocab()):
        piece = llm.detokenize([tok])
        if not piece or piece[1:].strip(b" \t\n}]"):
            continue
        if piece[:1] == b'"':
            quote.append(tok)
        elif piece[:1] in (b"}", b"]"):
            bracket.append(tok)
    return np.array(quote, dtype=np.intc), np.array(bracket, dtype=np.intc)


class ClosingPressure:
    """Logits processor that makes a looping or out-of-budget model finish its JSON.

    Why: under a grammar a small model can still repeat one phrase inside a
    string until ``max_tokens`` cuts the JSON off (invalid output). Once the
    output starts looping, or only ``reserve`` tokens of the budget are left,
    we boost tokens starting with ``"`` (ends the current string) and, less,
    ``}``/``]`` (ends the current container). The grammar still masks every
    token that would be invalid, so the boost only picks among valid
    continuations and the JSON closes in a few tokens. The boost grows while the pressure
    lasts, so closing a container eventually beats opening another array item.
    """

    def __init__(self, closers: tuple[np.ndarray, np.ndarray], max_tokens: int) -> None:
        self.quote, self.bracket = closers
        self.max_tokens = max_tokens
        self.reserve = max(16, min(96, max_tokens // 4))
        self.prompt_len: int | None = None
        self.active = False
        self.pressed = 0

    @staticmethod
    def looping(tokens: np.ndarray, min_span: int = 24, max_period: int = 32) -> bool:
        """True if the tail is one token pattern repeated >= 3 times over >= ``min_span`` tokens."""
        for period in range(1, max_period + 1):
            reps = max(3, -(-min_span // period))
            if len(tokens) < period * reps:
                break
            tail = tokens[len(tokens) - period * reps :].reshape(reps, period)
            if (tail == tail[0]).all():
                return True
        return False

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if self.prompt_len is None:
            self.prompt_len = len(input_ids)
        generated = input_ids[self.prompt_len :]
        if not self.active:
            self.active = len(generated) >= self.max_tokens - self.reserve or self.looping(generated)
        if self.active:
            # The boost grows with every token under pressure: a fixed one lost to ``,`` and
            # the model appended empty array items until the budget cut the JSON off.
            self.pressed += 1
            scores[self.quote] += 40.0 + 10.0 * self.pressed
            scores[self.bracket] += 20.0 + 10.0 * self.pressed
        return scores
