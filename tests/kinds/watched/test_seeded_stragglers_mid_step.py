"""Who the others waited for, asked after every single event as the page asks every frame:
while the newest step still waits for a rank's timings it counts for no one, and once the
last rank's arrive it counts for its last rank. A tally that froze the newest step while it
was incomplete never counted it (pure: the history's hand-made 3-rank feed, whose expected
last rank and wait per step are written by hand there)."""

from __future__ import annotations

from ddp_viz.kinds.watched.steps import stragglers_with_waits
from ddp_viz.model import protocol
from tests.kinds.watched.test_history import RANKS, rank_events, start, who_waited

STEPS = 12


def test_each_step_counts_for_its_last_rank_once_every_ranks_timing_is_in() -> None:
    rec = start()
    done: list[int] = []  # steps every rank sent its timings for
    asked = 0
    for step in range(STEPS):
        for r in range(RANKS):
            for e in rank_events(step, r):
                rec.apply(e)
                if isinstance(e, protocol.Timing) and r == RANKS - 1:
                    done.append(step)
                want: dict[int, tuple[int, float]] = {}
                for s in done:
                    rank, wait = who_waited(s)
                    n, total = want.get(rank, (0, 0.0))
                    want[rank] = (n + 1, total + wait)
                got = stragglers_with_waits(rec, len(rec.steps) - 1, 0)
                assert {s.rank: (s.count, s.count * s.mean_wait_s) for s in got} == want, (
                    step,
                    r,
                    type(e).__name__,
                )
                asked += 1
    assert asked > 3 * STEPS and len(done) == STEPS
