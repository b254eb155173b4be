"""The sealed critique on τ³: a refine episode with scripted roles completes, its record
carries the channel, and the reviser's request holds none of the task's supervision-only values.
Skipped (saying how to set it up) where τ³ is not set up; its CI script runs it."""

from __future__ import annotations

from tests.sealed_run import check, run_sealed


def test_tau3_runs_the_sealed_critique(tmp_path, tau3_env):
    from testkit.tau3_gold import Tau3GoldReplay, reference

    facts = reference(["airline"], ["7", "23"])
    records, sent = run_sealed(tmp_path, tau3_env, "airline", ["7", "23"], Tau3GoldReplay(facts), "tau3-sealed")
    check(tau3_env, "airline", records, sent)
