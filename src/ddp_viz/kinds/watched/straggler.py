"""The straggler verdict (pure): which rank the others waited for at the all-reduce, how often
and how long, and whether that is more than the machine's noise and chance.
"""

from __future__ import annotations

import math

from ddp_viz.kinds.watched.steps import Straggler, stragglers_with_waits, typical_step_s
from ddp_viz.model.timeline import RunRecord

# A straggler: last to the all-reduce in at least STRAGGLER_SHARE of at least MIN_STEPS steps
# (the first left out), the others waiting for it on average at least STRAGGLER_S and at least
# STRAGGLER_OF_STEP of a typical step. Someone is always last: a rank last half the time by
# 0.1 ms is noise. Eight ranks on two cores take turns on them, and one of them came out last
# in 3 of 5 steps by 174 ms of second-long steps by chance alone; in 8 steps, being last in 5
# by chance is a 1-in-100 event at 8 ranks (binomial, p = 1/8, over all 8 ranks), and a wait
# under a tenth of a step is within what the machine's scheduling moves a step by.
STRAGGLER_SHARE = 0.6
# ... and last more often than chance explains: with no rank doing extra work each is last
# with chance 1/world, and one of 2 ranks last in 48 of 80 steps has a chance of about 1 in
# 11 (a 3 ms wait was called a straggler so). A rank is named only when some rank being last
# that often by chance alone is under 1 in 100 (a binomial tail, for any of the ranks).
STRAGGLER_CHANCE = 0.01
# ... or under 1 in 20 when the others, on the steps they were last, kept it waiting less than
# half as long: a rank doing extra work is late by its work (10 of 11 steps by 31 ms, the other
# by 1 ms), where chance makes every rank late by alike (48 of 80 steps by 3.2 ms, 32 by 3 ms)
STRAGGLER_CHANCE_CLEAR = 0.05
# 5 ms, not 2: two ranks doing alike on a shared 2-core machine, steps of ~15 ms, made one of
# them last in 10 of 11 steps by 3.6 ms on average (the scheduler's, not the script's)
STRAGGLER_S = 0.005
STRAGGLER_OF_STEP = 0.1
MIN_STEPS = 8
SAY_FROM = 4  # steps with a last rank before the page says anything (too few to tell: said)


def chance_of_last(k: int, n: int, world: int) -> float:
    """The chance that some rank of ``world`` is last in at least ``k`` of ``n`` steps when
    each is last with chance 1/world (the binomial tail, times the ranks: an upper bound)."""
    lp, lq = math.log(1.0 / world), math.log1p(-1.0 / world)

    def term(i: int) -> float:  # in logs: comb(2000, 1000) overflows a float
        log_comb = math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
        return math.exp(log_comb + i * lp + (n - i) * lq)

    return min(1.0, world * sum(term(i) for i in range(k, n + 1)))


def beyond_chance(found: list[Straggler], steps: int, world: int) -> bool:
    """Whether the rank last most often is last more often than chance (see above)."""
    top, others = found[0], found[1:]
    chance = chance_of_last(top.count, steps, world)
    if chance <= STRAGGLER_CHANCE:
        return True
    n = sum(s.count for s in others)
    their_wait = sum(s.count * s.mean_wait_s for s in others) / n if n else 0.0
    return chance <= STRAGGLER_CHANCE_CLEAR and top.mean_wait_s >= 2 * their_wait


def straggler_text(rec: RunRecord) -> str | None:
    """Who the others waited for at the all-reduce, how often and how long; a straggler if
    that rank was last consistently over enough steps by more than noise (see above)."""
    upto = len(rec.steps) - 1
    found = stragglers_with_waits(rec, upto, first=1)  # step 1: one-off costs
    steps = sum(s.count for s in found)
    if steps < SAY_FROM:
        return None
    top = found[0]
    said = (
        f"rank {top.rank} was the last to reach the all-reduce in {top.count} of {steps} "
        f"steps; the others waited {top.mean_wait_s * 1e3:.1f} ms for it on average "
        f"({top.count * top.mean_wait_s:.2f} s in all)"
    )
    step_s = typical_step_s(rec, upto)
    floor = max(STRAGGLER_S, STRAGGLER_OF_STEP * step_s) if step_s else STRAGGLER_S
    if steps < MIN_STEPS:
        return f"no straggler yet: {said}; {MIN_STEPS} steps tell a straggler from noise"
    if top.count / steps < STRAGGLER_SHARE:
        return f"no straggler: {said}, in under {STRAGGLER_SHARE:.0%} of the steps: noise"
    world = max(rec.world_size, 2)
    if not beyond_chance(found, steps, world):
        return f"no straggler: {said}, as often as chance makes one of {world} ranks last: noise"
    if top.mean_wait_s < floor:
        why = (
            f"{STRAGGLER_S * 1e3:.0f} ms"
            if floor == STRAGGLER_S
            else f"a tenth of a step ({step_s * 1e3:.1f} ms)"
        )
        return f"no straggler: {said}, under {why}: noise"
    return f"✗ straggler: {said}"
