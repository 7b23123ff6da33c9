"""A crash the hang detector saw first (pure, the recorded 3-rank crash with the hang a loaded
run named): rank 2 raised in its step 5; under load the listener named a hang while rank 2
had ended and ranks 0 and 1 waited in DDP's all-reduce of step 5, before the failures came.
The verdict is still the crash, never an uneven end (seen once in the full suite on 2 cores).
A rank whose failure is a collective's timeout after its loop still finished (the other side)."""

from __future__ import annotations

import dataclasses

from ddp_viz.kinds.watched.checks import uneven_end, verdict
from ddp_viz.kinds.watched.events import WatchHang
from ddp_viz.model.timeline import record
from tests.conftest import load_recording

RAISES = "watched-raises-3-ranks.jsonl"  # rank 2 of 3 raises in its step 5 (tests/data/README)


def with_hang():  # type: ignore[no-untyped-def]
    events = load_recording(RAISES)
    first = next(i for i, e in enumerate(events) if e.kind == "watch_failure")
    assert events[first].rank == 2 and events[first].step == 5
    bucket = {"seq": 9, "op": "all_reduce", "site": "raises.py:30 in main", "bucket": 0, "step": 4}
    hang = WatchHang(
        run=1,
        stalled_s=2.1,
        threshold_s=2.0,
        ranks=[
            {"rank": 0, "state": "inside", "step": 5, "inside": bucket},
            {"rank": 1, "state": "inside", "step": 5, "inside": bucket},
            {"rank": 2, "state": "ended", "step": 4},
        ],
    )
    return [*events[: first + 1], hang, *events[first + 1 :]]


def test_the_rank_that_raised_is_the_verdict_though_a_hang_saw_it_end() -> None:
    rec = record(with_hang())
    assert uneven_end(rec) is None
    assert verdict(rec).startswith("ddp-viz verdict: rank 2 is the root cause: RuntimeError")


def test_a_rank_whose_barrier_timed_out_after_its_loop_did_finish() -> None:
    """The other side (extra-batch.py under the real doctor): rank 2 finished its 4 steps and
    waits in the script's closing barrier, whose timeout fails it; the ranks still in step 5's
    all-reduce make that an uneven end, the failure notwithstanding."""
    barrier = {"seq": 5, "op": "barrier", "site": "raises.py:33 in main"}
    events = []
    for e in with_hang():
        if e.kind == "watch_failure" and e.rank == 2:
            e = dataclasses.replace(e, inside=barrier, message="Timed out in barrier")
        if e.kind == "watch_hang":
            ranks = [*e.ranks[:2], {"rank": 2, "state": "inside", "step": 4, "inside": barrier}]
            e = dataclasses.replace(e, ranks=ranks)
        events.append(e)
    found = uneven_end(record(events))
    assert found is not None and (found.done_rank, found.done, found.entered) == (2, 4, 5)
    said = verdict(record(events))
    assert said.startswith("ddp-viz verdict: uneven inputs, or a collective only rank 2 makes: ")
    assert (
        "rank 0 entered step 5 while rank 2, after 4 steps, waits in barrier #5 at raises.py"
        in said
    )
