"""The leak guard measured with an auditor model behind it: ``leakbench.evaluate`` plus a model.

    python -m runtime.leak_eval --auditor-model openai/gpt-4o-mini [--corpus adversary] [--sample N]

The measuring code is ``leakbench.evaluate``; this command only builds the auditor's model
through the runtime's model layer (retries, accounting, keys from the environment), which the
``critique`` package may not import.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from leakbench.evaluate import parser, run

if TYPE_CHECKING:  # the auditor and the model layer are imported once the arguments are read
    from critique.guard.auditor import LeakAuditor


def make_auditor(model: str) -> LeakAuditor:
    from critique.guard.auditor import LeakAuditor
    from runtime.episode.services import register_providers
    from runtime.llm.layer import Meter, ModelLayer, ModelSpec, check_credentials

    spec = ModelSpec(model=model)
    check_credentials(spec)
    register_providers({"auditor_model": spec})
    layer = ModelLayer({"auditor_model": spec})
    return LeakAuditor(layer.client("auditor_model", "auditor", Meter()))


def main(argv: list[str] | None = None) -> int:
    p = parser("python -m runtime.leak_eval")
    p.add_argument("--auditor-model", required=True, help="a litellm model for the leak auditor")
    args = p.parse_args(argv)
    return run(args, make_auditor(args.auditor_model))


if __name__ == "__main__":
    sys.exit(main())
