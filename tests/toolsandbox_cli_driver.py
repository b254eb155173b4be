"""Plays scenarios with ToolSandbox's OWN command-line loop and roles; runs in ToolSandbox's venv.

    python tests/toolsandbox_cli_driver.py BASE_URL OUT_DIR PLAY[:SCENARIO] ...

For each ``PLAY:SCENARIO`` it calls ToolSandbox's ``run_sandbox`` (what its CLI ``main`` calls,
minus argument parsing) with its stock OpenAI agent and OpenAI user (``GPT_4_o_2024_05_13``),
whose clients are pointed at ``BASE_URL/<play>/<scenario>/<agent|user>/v1`` instead of
api.openai.com — the only change, made by wrapping the ``OpenAI`` class the two role modules
use. Scenarios are built as the CLI builds them (``random.seed(42)``, then ``resolve_scenarios``).
Prints one JSON line per play: ToolSandbox's own per-scenario result from its
``result_summary.json``. Only stdlib and ToolSandbox are imported: nothing of the runtime.
"""

from __future__ import annotations

import copy
import json
import random
import sys
from pathlib import Path

import openai
from tool_sandbox.cli import run_sandbox
from tool_sandbox.cli.utils import RoleImplType, resolve_scenarios
from tool_sandbox.common.tool_discovery import ToolBackend
from tool_sandbox.roles import openai_api_agent, openai_api_user

ROLE = RoleImplType.GPT_4_o_2024_05_13


def point_clients_at(base: str) -> None:
    """Make ToolSandbox's OpenAI agent and user talk to ``base/<agent|user>/v1``."""
    for module, role in ((openai_api_agent, "agent"), (openai_api_user, "user")):
        def client(*args, _role=role, **kwargs):
            kwargs["base_url"] = f"{base}/{_role}/v1"
            return openai.OpenAI(*args, **kwargs)

        module.OpenAI = client


def main(argv: list[str]) -> int:
    base, out, plays = argv[0].rstrip("/"), Path(argv[1]), [a.split(":", 1) for a in argv[2:]]
    random.seed(42)  # as ToolSandbox's CLI does before building its scenarios
    scenarios = resolve_scenarios(desired_scenario_names=sorted({s for _, s in plays}),
                                  preferred_tool_backend=ToolBackend.DEFAULT)
    for play, name in plays:
        point_clients_at(f"{base}/{play}/{name}")
        folder = out / play / name
        run_sandbox(agent_type=ROLE, user_type=ROLE, name_to_scenario={name: copy.deepcopy(scenarios[name])},
                    processes=1, output_base_dir=folder)
        (summary,) = folder.glob("*/result_summary.json")
        (result,) = json.loads(summary.read_text())["per_scenario_results"]
        print(json.dumps({"play": play, **result}, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
