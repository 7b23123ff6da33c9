"""A rank the others timed out waiting for (pure: events made here). When every rank that
raised timed out in a collective and the others raised nothing and were still running when
torchrun stopped them, those are the cause: the ranks that timed out waited for them. Each
case has its twin where another end (a crash, a lost connection, a kill, a hang) keeps the
diagnosis it had."""

from __future__ import annotations

from ddp_viz.kinds.watched.checks import findings, rank_ends, verdict
from ddp_viz.kinds.watched.events import WatchExit, WatchFailure, WatchHang, WatchRankLost
from ddp_viz.kinds.watched.failures import End
from ddp_viz.kinds.watched.monitored import timed_out, waited_ms
from tests.watch.made_runs import GONE, run

RECV = "[unbound_buffer.cc:78] Timed out waiting 4000ms for recv operation to complete"
SEND = "[unbound_buffer.cc:129] Timed out waiting 4000ms for send operation to complete"
SITE = "train.py:25 in main"


def timeout(rank: int, at: float, message: str = RECV, step: int = 0) -> list:
    return [
        WatchFailure(1, rank, step, at, "RuntimeError", message, SITE),
        WatchRankLost(1, rank, 100 + rank, step),
        WatchExit(1, rank, 100 + rank, 1, ""),
    ]


def stopped(rank: int) -> WatchExit:
    """torchrun's SIGTERM to a rank that never connected (it never built its DDP)."""
    return WatchExit(1, rank, 100 + rank, -15, "SIGTERM")


def lines(rec) -> list[str]:  # type: ignore[no-untyped-def]
    return [line for _, said in findings(rec) for line in said]


def test_the_rank_the_others_timed_out_waiting_for_is_the_cause() -> None:
    rec = run(*timeout(1, 4.0), *timeout(0, 4.01, SEND), stopped(2))
    assert [(r.rank, r.end) for r in rank_ends(rec)] == [
        (2, End.STOPPED),
        (1, End.RAISED),  # the ranks that timed out, by when
        (0, End.RAISED),
    ]
    words = (
        f"ranks 0, 1 waited 4000 ms for it at {SITE} and timed out; it raised nothing and was "
        "still running when torchrun stopped it"
    )
    assert verdict(rec) == (
        "ddp-viz verdict: rank 2 is the root cause: it never reached the collective the others "
        f"timed out in ({words})"
    )
    said = lines(rec)
    head = "✗ crash: rank 2 never reached the collective the others timed out in"
    assert said[0] == f"{head}: {words} (the cause)"
    assert said[2].endswith("because rank 2 had not arrived")


def test_twin_a_crash_beside_the_timeouts_stays_the_cause() -> None:
    crash = WatchFailure(1, 3, 0, 3.0, "ValueError", "bad shard", "train.py:12 in load")
    rec = run(crash, *timeout(1, 4.0), *timeout(0, 4.01), stopped(2), world=4)
    assert verdict(rec).startswith("ddp-viz verdict: rank 3 is the root cause: ValueError")


def test_a_lost_connection_beside_a_timeout_is_that_timeouts_doing() -> None:
    """gloo closes a timed-out rank's sockets before its error reaches Python, so the peer's
    "Connection closed by peer" can come first by the clock: it is no cause (it was named as
    the root cause of a real run, file_lock.py with a 4 s process-group timeout)."""
    rec = run(*timeout(1, 4.0, GONE), *timeout(0, 4.01), stopped(2))
    assert verdict(rec) == (
        "ddp-viz verdict: rank 2 is the root cause: it never reached the collective the others "
        f"timed out in (rank 0 waited 4000 ms for it at {SITE} and timed out; it raised nothing "
        "and was still running when torchrun stopped it)"
    )  # the rank that lost its connection did not wait for it: it is not in the words
    assert [(r.rank, r.end) for r in rank_ends(rec)] == [
        (2, End.STOPPED),
        (1, End.RAISED),
        (0, End.RAISED),
    ]
    said = lines(rec)
    assert any("rank 1 failed" in line and line.endswith("because rank 2 had not arrived")
               for line in said)  # fmt: skip


def test_twin_lost_connections_with_no_timeout_blame_no_one_absent() -> None:
    rec = run(*timeout(1, 4.0, GONE), *timeout(0, 4.01, GONE), stopped(2))
    assert "never reached" not in verdict(rec)
    assert not timed_out(GONE) and timed_out(RECV) and timed_out("wait timeout after 30000ms")
    assert not timed_out("Connection refused while waiting: timed out")  # a peer gone, first


def test_twin_a_crash_beside_a_timeout_and_a_lost_connection_stays_the_cause() -> None:
    crash = WatchFailure(1, 3, 0, 4.2, "ValueError", "bad shard", "train.py:12 in load")
    rec = run(*timeout(1, 4.0, GONE), *timeout(0, 4.01), crash, stopped(2), world=4)
    assert verdict(rec).startswith("ddp-viz verdict: rank 3 is the root cause: ValueError")


def test_twin_a_killed_rank_keeps_its_place() -> None:
    killed = WatchExit(1, 2, 102, -9, "SIGKILL")
    rec = run(*timeout(1, 4.0), *timeout(0, 4.01), killed)
    assert verdict(rec).startswith("ddp-viz verdict: rank 2 is the root cause: killed by SIGKILL")


def test_twin_a_hang_named_live_is_the_diagnosis() -> None:
    hang = WatchHang(1, 3.0, 2.0, [{"rank": 0, "state": "outside", "quiet_s": 3.0}])
    rec = run(hang, *timeout(1, 4.0), *timeout(0, 4.01), stopped(2))
    assert "never reached" not in verdict(rec)
    assert verdict(rec).startswith("ddp-viz verdict: hang")
    # the hang says where each rank was; the timeouts after it are no guess at an absent rank
    assert not [line for line in lines(rec) if "reach" in line and "timed out in" in line]


def test_several_ranks_that_raised_nothing_are_named_together() -> None:
    rec = run(*timeout(0, 4.0), *timeout(1, 4.01), stopped(2), stopped(3), world=4)
    assert verdict(rec) == (
        "ddp-viz verdict: ranks 2, 3 are the root cause: they never reached the collective the "
        f"others timed out in (ranks 0, 1 waited 4000 ms for at least one of them at {SITE} and "
        "timed out; they raised nothing and were still running when torchrun stopped them)"
    )


def test_the_wait_is_read_from_the_words_when_they_give_it() -> None:
    def f(message: str) -> WatchFailure:
        return WatchFailure(1, 0, 0, 1.0, "RuntimeError", message, SITE)

    assert waited_ms([f(RECV), f("Socket Timeout")]) == 4000
    assert waited_ms([f("wait timeout after 30000ms, keys: /x")]) == 30000
    assert waited_ms([f("Socket Timeout")]) == 0
    rec = run(*timeout(1, 4.0, "Socket Timeout"), stopped(2), world=3)
    assert f"rank 1 waited for it at {SITE} and timed out" in verdict(rec)


def test_the_place_named_is_the_first_timeout_by_time_whoever_sent_it() -> None:
    late = [WatchFailure(1, 0, 0, 4.5, "RuntimeError", RECV, "train.py:40 in evaluate")]
    early = [WatchFailure(1, 1, 0, 4.0, "RuntimeError", SEND, "train.py:25 in main")]
    rec = run(*late, *early, stopped(2))
    assert "waited 4000 ms for it at train.py:25 in main" in verdict(rec)
    # the same moment: the lower rank's
    tie = [WatchFailure(1, r, 0, 4.0, "RuntimeError", RECV, f"train.py:{30 + r} in main")
           for r in (1, 0)]  # fmt: skip
    assert "at train.py:30 in main" in verdict(run(*tie, stopped(2)))


def test_ranks_stopped_with_no_timeout_beside_them_are_no_absent_ranks() -> None:
    rec = run(stopped(1), stopped(2), world=3)
    assert "never reached" not in verdict(rec)
    assert [r.end for r in rank_ends(rec)] == [End.STOPPED, End.STOPPED]


def test_a_killed_rank_beside_a_stopped_one_keeps_the_cause() -> None:
    killed = WatchExit(1, 3, 103, -9, "SIGKILL")
    rec = run(*timeout(1, 4.0), *timeout(0, 4.01), stopped(2), killed, world=4)
    assert verdict(rec).startswith("ddp-viz verdict: rank 3 is the root cause: killed by SIGKILL")


def lost_at(rank: int, step: int) -> list:
    """torchrun's SIGTERM to a rank that had begun ``step`` steps."""
    return [WatchRankLost(1, rank, 100 + rank, step), stopped(rank)]


def test_of_the_stopped_ranks_the_one_behind_is_named_not_one_that_waited_too() -> None:
    """file_lock.py, 3 ranks: rank 1 timed out in step 4; torchrun stopped rank 0, which was
    in step 4's all-reduce as well (its timeout not yet raised), and rank 2, held before step
    4 by the lock. Both were named the cause before; rank 0 had only waited."""
    rec = run(*timeout(1, 4.0, step=4), *lost_at(0, 4), *lost_at(2, 3))
    assert verdict(rec).startswith(
        "ddp-viz verdict: rank 2 is the root cause: it never reached the collective the others "
        f"timed out in (rank 1 waited 4000 ms for it at {SITE}"
    ), verdict(rec)
    assert [(r.rank, r.end) for r in rank_ends(rec)] == [
        (2, End.STOPPED),
        (1, End.RAISED),
        (0, End.STOPPED),
    ]


def test_twin_stopped_ranks_in_the_same_step_are_named_together() -> None:
    rec = run(*timeout(1, 4.0, step=4), *lost_at(0, 4), *lost_at(2, 4))
    assert verdict(rec).startswith(
        "ddp-viz verdict: ranks 0, 2 are the root cause: they never reached the collective"
    )
