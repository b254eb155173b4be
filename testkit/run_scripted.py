"""``python -m testkit.run_scripted [options] -- <command options>``

A real command (``validate``, ``ablate`` or ``table3``) in a process where scripted roles are
registered: ``scripted/roles`` (planner, critic and reviser answer fixed JSON; executor and user
replay τ²'s reference), ``scripted/plan-follower`` (plan-dependent controls, see
``testkit.plan_follower``) and ``scripted/stochastic`` (episodes succeed with known per-task
probabilities, see ``testkit.stochastic``). For tests, control runs and benchmarks that need a separate
process. It proves plumbing, never a model.
"""

from __future__ import annotations

import argparse
import functools

from runtime import validate
from runtime.backends import add_worker_setup
from testkit import scripted, stochastic
from testkit.gold import GoldReplay
from testkit.plan_follower import PlanFollowingRoles
from testkit.roles import ScriptedRoles


def register(latency: float = 0.0, sabotage: bool = False, noise: float = 0.0,
             wrong_share: float = 1.0, disguised: bool = False, effect: float = 0.1,
             icc: float = 0.45, spread: float = 0.0) -> None:
    """Register ``scripted/roles``, ``scripted/plan-follower`` and ``scripted/stochastic`` (the
    known-truth benchmark of ``testkit.stochastic``) in this process."""
    ScriptedRoles(act=GoldReplay(drop_last_write=sabotage)).model_name("roles")
    PlanFollowingRoles(noise=noise, wrong_share=wrong_share, disguised=disguised).model_name("plan-follower")
    stochastic.register(stochastic.StochasticBenchmark(effect=effect, icc=icc, spread=spread))
    scripted.set_latency(latency)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testkit.run_scripted")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every reply")
    parser.add_argument("--sabotage", action="store_true", help="drop the last state-changing write")
    parser.add_argument("--noise", type=float, default=0.0,
                        help="plan-follower: chance an episode's executor drops its last step")
    parser.add_argument("--wrong-share", type=float, default=1.0,
                        help="plan-follower: share of tasks whose p0 leaves out a needed write")
    parser.add_argument("--disguised-critic", action="store_true",
                        help="plan-follower: the critic tells the reference in disguise (anti-leak control)")
    parser.add_argument("--effect", type=float, default=0.1,
                        help="scripted/stochastic: the treatment's shift of every task's success probability")
    parser.add_argument("--icc", type=float, default=0.45, help="scripted/stochastic: intra-task correlation")
    parser.add_argument("--spread", type=float, default=0.0,
                        help="scripted/stochastic: how much the effect differs between tasks (±)")
    parser.add_argument("--command", choices=["validate", "ablate", "table3"], default="validate")
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    setup = functools.partial(register, latency=args.latency, sabotage=args.sabotage,
                              noise=args.noise, wrong_share=args.wrong_share,
                              disguised=args.disguised_critic, effect=args.effect, icc=args.icc,
                              spread=args.spread)
    setup()
    add_worker_setup(setup)  # Ray workers are other processes: they register the same roles
    if args.command == "ablate":
        from runtime import ablate

        return ablate.main(rest)
    if args.command == "table3":
        from runtime import table3

        return table3.main(rest)
    return validate.main(rest)


if __name__ == "__main__":
    from runtime.cli.process_end import end

    end(main())  # as the commands end: without the interpreter's teardown
