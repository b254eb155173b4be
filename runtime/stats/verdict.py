"""What a Δ and its interval say, in one plain sentence, given the size the run could detect.

"CI covers 0" alone reads as *no effect*; it means that only when the run could have seen the
effect. So a Δ whose interval covers 0 is told apart by its detectable size: below it the run
shows neither an effect nor its absence; with the interval inside ± the detectable size the run
rules out effects that large.
"""

from __future__ import annotations

import math


def verdict(delta: float, low: float, high: float, mde: float, *, digits: int = 2,
            scale: float = 1.0) -> str:
    def f(x: float, signed: bool = True) -> str:
        return f"{x * scale:+.{digits}f}" if signed else f"{x * scale:.{digits}f}"

    if not math.isfinite(mde):
        return "too few tasks to detect anything"
    floor = f"detectable from ±{f(mde, False)}"
    if low > 0 or high < 0:
        side = "better" if low > 0 else "worse"
        return f"{floor}; {f(delta)} [{f(low)}, {f(high)}] excludes 0: the treatment scores {side}"
    if -mde < low and high < mde:
        return (f"{floor}; {f(delta)} [{f(low)}, {f(high)}] covers 0 and excludes ±{f(mde, False)}: "
                "no effect that large")
    if abs(delta) < mde:
        return f"{floor}; {f(delta)} is below it: this run shows neither an effect nor its absence"
    return (f"{floor}; {f(delta)} [{f(low)}, {f(high)}] covers 0: this run shows neither an effect "
            "nor its absence")
