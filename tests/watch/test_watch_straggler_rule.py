"""The straggler verdict against scheduling noise (pure: synthetic timings of N ranks, as a
watched run sends them). Eight ranks on two cores take turns on the cores, and a rank came out
last in 3 of 5 steps by 174 ms by chance: the verdict waits for enough steps, asks for one rank
last in most of them, and for a wait that is more than a tenth of a step. A rank slow every step
is still named (and in ``test_watch_doctor.py``, on a real torchrun run)."""

from __future__ import annotations

import random

import pytest

from ddp_viz.kinds.watched.straggler import straggler_text
from ddp_viz.model import protocol
from ddp_viz.model.timeline import RunRecord


def watched(lates: list[dict[int, float]], world: int, step_s: float = 1.0) -> RunRecord:
    """``lates[i]``: how long after the first each late rank of step ``i`` reached the
    all-reduce (ranks not named arrive first, together)."""
    rec = RunRecord()
    params = [{"name": "w", "shape": [4]}]
    rec.apply(protocol.RunStarted(1, world, 0, {"watched": True}, params=params))
    for step, late in enumerate(lates):
        t = step * step_s
        end = t + 0.02 + max(late.values(), default=0.0)
        for r in range(world):
            at = t + 0.01 + late.get(r, 0.0)
            bucket = {"index": 0, "params": ["w"], "bytes": 16, "launched": at, "finished": end}
            spans = {"forward": [[t, t + 0.005]], "allreduce": [[at, end]]}
            rec.apply(protocol.Timing(1, step, r, spans, buckets=[bucket]))
    return rec


def test_last_in_3_of_5_steps_at_8_ranks_is_too_few_to_call() -> None:
    lates = [{2: 0.1}, {6: 0.174}, {3: 0.174}, {6: 0.174}, {1: 0.174}, {6: 0.174}]
    said = straggler_text(watched(lates, 8))
    assert said is not None and said.startswith("no straggler yet: rank 6 was the last"), said
    assert "in 3 of 5 steps" in said


def test_a_different_rank_last_each_step_is_noise_however_long_they_wait() -> None:
    pick = random.Random(7)
    lates = [{pick.randrange(8): 0.2} for _ in range(25)]
    said = straggler_text(watched(lates, 8))
    assert said is not None and said.startswith("no straggler: "), said
    assert said.endswith("in under 60% of the steps: noise")


def test_a_rank_last_in_most_steps_by_a_third_of_a_step_is_the_straggler() -> None:
    lates = [{r % 8: 0.3} for r in range(5)] + [{6: 0.3}] * 16
    said = straggler_text(watched(lates, 8))
    assert said is not None and said.startswith(
        "✗ straggler: rank 6 was the last to reach the all-reduce in 16 of 20 steps"
    ), said


def test_always_last_by_a_twentieth_of_a_step_is_noise() -> None:
    said = straggler_text(watched([{1: 0.05}] * 10, 2))
    assert said is not None and said.startswith("no straggler: rank 1 was the last"), said
    assert said.endswith("under a tenth of a step (1000.0 ms): noise")
    # the same wait in steps of a third of a second is a straggler
    said = straggler_text(watched([{1: 0.05}] * 10, 2, step_s=0.3))
    assert said is not None and said.startswith("✗ straggler: rank 1"), said


def test_a_step_a_crashed_rank_never_reached_counts_for_nobody() -> None:
    """Rank 1 of 3 raised before its 12th all-reduce: ranks 0 and 2 reached it, rank 2 later.
    The terminal counted rank 2 last in that step too (16 of 40 where the page said 15 in
    39); nobody was last in a step one rank never reached."""
    from ddp_viz.model.arrivals import last_to_arrive

    lates = [{2: 0.3}, {0: 0.3}, {2: 0.3}, {1: 0.3}, {2: 0.3}] * 2 + [{0: 0.3}]  # 11 steps
    rec = watched(lates, 3)
    t = len(lates) * 1.0  # the 12th step: rank 1 never comes
    for r, at in ((0, t + 0.01), (2, t + 0.31)):
        bucket = {"index": 0, "params": ["w"], "bytes": 16, "launched": at, "finished": None}
        rec.apply(
            protocol.Timing(1, len(lates), r, {"forward": [[t, t + 0.005]]}, buckets=[bucket])
        )
    assert last_to_arrive(rec.steps[len(lates)], 3) is None
    assert last_to_arrive(rec.steps[0], 3) == (2, pytest.approx(0.3))
    # steps 2–11 (step 1 left out: one-off costs): rank 2 last in steps 3, 5, 6, 8 and 10
    said = straggler_text(rec)
    assert said is not None
    assert "rank 2 was the last to reach the all-reduce in 5 of 10 steps" in said, said
