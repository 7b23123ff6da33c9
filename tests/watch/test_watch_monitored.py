"""A monitored barrier's errors, read by the doctor (pure: events made here, no torch). Rank 0's
names the ranks that had not arrived, in the singular or, with ``wait_all_ranks=True``, every
one; the ranks that arrived raise after it. The ranks named are the cause unless a rank raised
an error of its own first. The messages are torch 2.13's, as a real run printed them
(tests/data/watched/faults/monitored_late.py runs them for real)."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.watched import failures as fail
from ddp_viz.kinds.watched.checks import findings, rank_ends, verdict
from ddp_viz.kinds.watched.events import (
    WatchDropped,
    WatchExit,
    WatchFailure,
    WatchHang,
    WatchRankLost,
    WatchSummary,
)
from ddp_viz.kinds.watched.monitored import Late, late
from tests.watch.made_runs import run

SITE = "t.py:20 in main"
ONE = "[Rank 0]: Rank 2 failed to pass monitoredBarrier in 1500 ms\n Original exception: \n[x]"
TWO = "[Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 2000 ms"
ARRIVED = (
    "Rank 1 successfully reached monitoredBarrier, but received errors while waiting for "
    "send/recv from rank 0. Please check rank 0 logs for faulty rank.\n "
)


def raised(rank: int, at: float, message: str, kind: str = "RuntimeError") -> WatchFailure:
    return WatchFailure(1, rank, 5, at, kind, message, SITE)


def stopped(*ranks: int) -> list:
    """torchrun's SIGTERM to ranks it stopped, after their connection closed."""
    lost = [WatchRankLost(1, r, 100 + r, 5) for r in ranks]
    return lost + [WatchExit(1, r, 100 + r, -15, "SIGTERM") for r in ranks]


def said(rec) -> list[str]:  # type: ignore[no-untyped-def]
    return [line for _, lines in findings(rec) for line in lines]


@pytest.mark.parametrize(
    ("message", "ranks", "ms"),
    [
        (ONE, (2,), 1500),
        (TWO, (1, 3), 2000),
        ("Ranks 4 failed to pass monitoredBarrier in 7 ms", (4,), 7),
    ],
)
def test_the_ranks_named_and_the_time_waited_are_read_from_either_form(message, ranks, ms):
    assert late([raised(0, 1.0, message)]) == Late(ranks, ms, SITE, by=0)


def test_the_earliest_barrier_that_named_a_rank_is_read_and_other_errors_are_not() -> None:
    assert late([raised(1, 1.0, ARRIVED), raised(3, 2.0, "Connection closed by peer")]) is None
    first, second = raised(2, 3.0, TWO), raised(0, 2.0, ONE)
    assert late([first, second]).ranks == (2,)  # by time, not by order of arrival
    assert late([raised(1, 2.0, ONE), raised(0, 2.0, TWO)]).by == 0  # a tie: the lower rank


def test_the_named_rank_is_the_cause_and_the_ranks_that_raised_follow_from_it() -> None:
    # the arrived rank's error came first by its clock: still a consequence
    rec = run(raised(1, 4.0, ARRIVED), raised(0, 4.1, ONE), *stopped(2), WatchSummary(1, 1))
    barrier = f"rank 0's dist.monitored_barrier at {SITE} waited 1500 ms for it and named it"
    assert verdict(rec) == (
        f"ddp-viz verdict: rank 2 is the root cause: it never reached the monitored barrier "
        f"({barrier})"
    )
    lines = said(rec)
    assert lines[0] == f"✗ crash: rank 2 never reached the monitored barrier: {barrier} (the cause)"
    assert lines[1].startswith("  then rank 2 was killed by SIGTERM: asked to stop")
    assert lines[2] == (
        f"  then rank 1 failed at {SITE}, in its step 5 (loop index 4): it reached the monitored "
        "barrier, then rank 0's gave up, because rank 2 had not arrived"
    )
    assert lines[3].endswith(
        "its monitored_barrier gave up on the ranks it named, because rank 2 had not arrived"
    )
    assert [r.rank for r in rank_ends(rec)] == [2, 1, 0]


def test_every_rank_named_leads_and_the_later_ones_are_named_too() -> None:
    rec = run(raised(2, 4.0, ARRIVED), raised(0, 4.1, TWO), *stopped(3, 1), WatchSummary(1, 1))
    assert verdict(rec).startswith(
        "ddp-viz verdict: ranks 1, 3 are the root cause: they never reached the monitored barrier"
    )
    assert verdict(rec).endswith("waited 2000 ms for them and named them)")
    lines = said(rec)
    assert lines[0].startswith("✗ crash: ranks 1, 3 never reached the monitored barrier: ")
    assert lines[1].startswith("  then rank 1 was killed by SIGTERM")
    assert lines[2].startswith("  rank 3 was named too; it was killed by SIGTERM")
    assert "because ranks 1, 3 had not arrived" in lines[3]
    assert [r.rank for r in rank_ends(rec)][:2] == [1, 3]


def test_a_named_rank_that_ended_cleanly_after_or_not_at_all_is_still_the_cause() -> None:
    # rank 2 went on to say its last word after 9 steps while the others had already failed
    last = WatchDropped(1, 2, 0, steps=9)
    rec = run(raised(1, 4.0, ARRIVED), raised(0, 4.1, ONE), last, WatchSummary(1, 1))
    first = rank_ends(rec)[0]
    assert (first.rank, first.end, first.step) == (2, fail.End.LEFT, 9)
    lines = said(rec)
    assert lines[0].startswith("✗ crash: rank 2 never reached the monitored barrier")
    assert lines[1].startswith(
        "  then rank 2 ended its training cleanly (its last word, after beginning 9 step(s))"
    )
    # the command still running: nothing yet of how rank 2 ends, and no line for it
    rec = run(raised(1, 4.0, ARRIVED), raised(0, 4.1, ONE))
    first = rank_ends(rec)[0]
    assert (first.rank, first.end, first.step, first.at) == (2, fail.End.LATE, 0, float("inf"))
    lines = said(rec)
    assert lines[0].startswith("✗ crash: rank 2 never reached the monitored barrier")
    assert lines[1].startswith("  then rank 1 failed")


def test_a_rank_that_raised_its_own_error_first_is_the_cause_whatever_the_barrier_named() -> None:
    own = raised(2, 3.0, "boom", kind="ValueError")
    rec = run(own, raised(1, 4.0, ARRIVED), raised(0, 4.1, ONE), WatchSummary(1, 1))
    assert verdict(rec).startswith("ddp-viz verdict: rank 2 is the root cause: ValueError")
    assert all(r.late is None for r in rank_ends(rec))
    # a named rank whose own error only says it lost its peers is still named
    gone = raised(2, 4.2, "Connection closed by peer [127.0.0.1]:1939")
    rec = run(raised(1, 4.0, ARRIVED), raised(0, 4.1, ONE), gone, WatchSummary(1, 1))
    lines = said(rec)
    assert lines[0].startswith("✗ crash: rank 2 never reached the monitored barrier")
    assert lines[1] == (
        f"  then rank 2 failed at {SITE}, in its step 5 (loop index 4) or after it, before it "
        "began any later step: connection closed by a peer"
    )


def test_after_a_hang_the_named_rank_is_said_in_one_line_under_it() -> None:
    place = {"rank": 2, "state": "outside", "quiet_s": 2.0, "stack": ["t.py:19 in main: sleep"]}
    hang = WatchHang(1, 2.0, 1.0, [place])
    rec = run(hang, raised(1, 4.0, ARRIVED), raised(0, 4.1, ONE), *stopped(2), WatchSummary(1, 1))
    assert verdict(rec).startswith("ddp-viz verdict: hang: rank 2 in no communication")
    lines = said(rec)
    named = [line for line in lines if "did not reach the monitored barrier" in line]
    assert named == [
        f"  then rank 2 did not reach the monitored barrier (rank 0's dist.monitored_barrier at "
        f"{SITE} waited 1500 ms for it and named it); it was killed by SIGTERM: asked to stop "
        "(torchrun sends it to the other ranks once one failed), in or after its step 5 (loop "
        "index 4)"
    ]


def test_a_named_rank_with_no_end_seen_gets_no_words_of_how_it_ended() -> None:
    # beside the cause: rank 3 named with rank 1, and nothing yet of how rank 3 ends
    lost = WatchRankLost(1, 1, 101, 5)
    rec = run(raised(2, 4.0, ARRIVED), raised(0, 4.1, TWO), lost)
    lines = said(rec)
    assert "  rank 3 was named too" in lines
    # after a hang: the named rank, with no end seen, in one line that stops at the barrier
    place = {"rank": 2, "state": "outside", "quiet_s": 2.0, "stack": ["t.py:19 in main: sleep"]}
    hang = WatchHang(1, 2.0, 1.0, [place])
    rec = run(hang, raised(1, 4.0, ARRIVED), raised(0, 4.1, ONE))
    assert (
        f"  then rank 2 did not reach the monitored barrier (rank 0's dist.monitored_barrier "
        f"at {SITE} waited 1500 ms for it and named it)"
    ) in said(rec)
    assert verdict(rec).startswith("ddp-viz verdict: hang: rank 2 in no communication")
    assert not any(line.startswith("✗ crash") for line in said(rec))
