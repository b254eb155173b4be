"""One ToolSandbox scenario end to end on each provider's wire (``--mode all``, every role on the
provider's loopback fake, the hand-written gold play): similarity 1.0 and no request refused.
Skipped, with the reason printed, where ToolSandbox is not set up (tests/conftest.py).
"""

from __future__ import annotations

import pytest

from tests.conftest import read_records
from tests.provider_fakes import FAKES
from tests.provider_fakes.gold import ToolSandboxGoldScript
from tests.test_provider_e2e import every_role

SCENARIO = "cellular_off"


@pytest.fixture(scope="module")
def ts_ready(ts_python):
    return ts_python


@pytest.mark.parametrize("provider", sorted(FAKES))
def test_one_scenario_scores_one_on_every_provider(provider, ts_ready, ts_env, tmp_path, monkeypatch):
    from runtime import validate

    for name in ("GEMINI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DASHSCOPE_API_KEY"):
        monkeypatch.setenv(name, "test-key-000")
    name_map = ts_env.task_info("default", SCENARIO)["tool_name_map"]
    out = tmp_path / "run"
    with FAKES[provider](ToolSandboxGoldScript(SCENARIO, name_map)) as fake:
        code = validate.main(["--env", "toolsandbox", "--mode", "all", "--task-ids", SCENARIO,
                              *every_role(provider, fake.api_base), "--out", str(out),
                              "--no-cache", "--max-error-rate", "1"])
    assert code == 0
    assert not fake.refusals, [(r.rule, r.message) for r in fake.refusals]
    records = read_records(out)
    assert sorted(r["key"]["mode"] for r in records) == ["direct", "plan-first", "refine"]
    for r in records:
        assert (r["status"], r["score"]) == ("ok", 1.0), r.get("error")
