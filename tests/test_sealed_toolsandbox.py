"""The sealed critique on ToolSandbox: a refine episode with scripted roles completes, its record
carries the channel, and the reviser's request holds none of the task's supervision-only values.
Skipped (saying how to set it up) where ToolSandbox is not set up; its CI script runs it."""

from __future__ import annotations

from tests.sealed_run import check, run_sealed


def test_toolsandbox_runs_the_sealed_critique(tmp_path, ts_env):
    from testkit.toolsandbox_gold import ToolSandboxGold

    tasks = ["wifi_off_10_distraction_tools", "remove_contact_by_phone_3_distraction_tools_arg_type_scrambled"]
    maps = {t: ts_env.task_info("default", t)["tool_name_map"] for t in tasks}
    records, sent = run_sealed(tmp_path, ts_env, "default", tasks, ToolSandboxGold(maps.__getitem__), "ts-sealed")
    check(ts_env, "default", records, sent)
