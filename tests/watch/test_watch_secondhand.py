"""A crash where no rank raised an error of its own (pure: events made here). Every rank that
raised lost a peer or timed out, no rank was killed or left: the first of those errors is no
cause, and the report says so, with who timed out, who lost a peer and how to see where each
rank was. Each case has its twin where something else is the cause. The words are gloo's, as
a real run of ``file_lock.py`` (3 ranks, a 4 s timeout, ``--hang-after 30``) raised them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ddp_viz.kinds.watched.checks import findings, rank_ends, verdict
from ddp_viz.kinds.watched.diagnosis import rank_states
from ddp_viz.kinds.watched.events import WatchExit, WatchFailure, WatchHang
from ddp_viz.kinds.watched.failures import End, RankEnd
from ddp_viz.kinds.watched.secondhand import came_late
from ddp_viz.model.protocol import Timing
from tests.watch.made_runs import run

CB = "Got the following error when running the callback: RuntimeError: "
RESET = CB + "[pair.cc:537] Read error [127.0.0.1]:27850: Connection reset by peer."
TIMEOUT = CB + "[unbound_buffer.cc:78] Timed out waiting 4000ms for recv operation to complete"
CLOSED = CB + "[pair.cc:553] Connection closed by peer [127.0.0.1]:25488."
CALL = {"op": "all_reduce", "seq": 4, "bucket": 0}


def raised(rank: int, at: float, message: str, site: str = "file_lock.py:35 in main"):  # type: ignore[no-untyped-def]
    return WatchFailure(1, rank, 4, at, "RuntimeError", message, site, inside=CALL)


def said(rec) -> list[str]:  # type: ignore[no-untyped-def]
    return [line for _, lines in findings(rec) for line in lines]


def file_lock() -> list:
    """What the real run reported: the reset first by the clock, then the timeout that caused
    it, then the rank let go of the lock, which came late and lost its peers."""
    return [raised(0, 60.479, RESET), raised(1, 60.489, TIMEOUT), raised(2, 60.657, CLOSED)]


def test_lost_peers_and_a_timeout_blame_no_rank() -> None:
    rec = run(*file_lock())
    assert verdict(rec) == (
        "ddp-viz verdict: no rank raised an error of its own: rank 1 timed out and ranks 0, 2 "
        "lost their connections to a peer (the first at file_lock.py:35 in main, in its step 4 "
        "(loop index 3)); the rank they waited for was held outside the collective or came "
        "late to it: run again with --hang-after 2, under the 4 s timeout, to see where each "
        "rank was"
    )
    lines = said(rec)
    assert lines[0].startswith("✗ crash: rank 0 raised RuntimeError: ")
    assert lines[0].endswith(
        "(the first failure, itself a consequence: no rank raised an error of its own)"
    )
    assert "the cause" not in " ".join(lines)
    assert lines[1:] == [
        "  then rank 1 failed inside DDP's gradient all_reduce #4, in its step 4 (loop index 3): "
        "the collective timed out",
        "  then rank 2 failed inside DDP's gradient all_reduce #4, in its step 4 (loop index 3): "
        "connection closed by a peer",
    ]  # no "because rank 0 had failed": it failed no more of its own than they did
    assert [r.secondhand for r in rank_ends(rec)] == [True, False, False]
    # the Processes table calls no rank "failed": none failed of its own
    assert rank_states(rec) == {0: "stopped", 1: "stopped", 2: "stopped"}


@pytest.mark.parametrize(
    ("ms", "advice"),
    [
        (30000, "--hang-after 15, under the 30 s timeout"),
        (1500, "--hang-after 1, under the 1.5 s timeout"),  # never under a second
        (0, "a --hang-after, under the process group's timeout"),  # the words give none
    ],
)
def test_the_advice_is_a_hang_threshold_under_the_timeout_the_words_give(
    ms: int, advice: str
) -> None:
    words = f"Timed out waiting {ms}ms for recv operation to complete" if ms else "Socket Timeout"
    rec = run(raised(0, 1.0, CLOSED), raised(1, 1.2, CB + words), world=2)
    assert f"run again with {advice}, to see where each rank was" in verdict(rec)


def test_lost_peers_alone_say_the_peer_closed_without_an_error_seen() -> None:
    rec = run(raised(1, 2.0, CLOSED), raised(0, 2.1, RESET), raised(2, 2.2, CLOSED))
    assert verdict(rec) == (
        "ddp-viz verdict: no rank raised an error of its own: ranks 0–2 lost their connections "
        "to a peer (the first at file_lock.py:35 in main, in its step 4 (loop index 3)); the "
        "peer they lost closed its connections without an error ddp-viz saw"
    )


def test_twin_an_own_error_after_them_is_the_cause() -> None:
    own = raised(2, 60.7, "bad batch at step 4", site="train.py:12 in check")
    # rank 2 came to the all-reduce past the timeout too: its own error says why, no line more
    rec = run(*steps_then(4.2), *file_lock()[:2], own)
    assert verdict(rec).startswith("ddp-viz verdict: rank 2 is the root cause: RuntimeError")
    assert not any(r.secondhand for r in rank_ends(rec))
    assert "reached step 4's all-reduce" not in " ".join(said(rec))


def test_twin_a_killed_rank_is_the_cause() -> None:
    rec = run(*file_lock()[:2], WatchExit(1, 2, 102, -9, "SIGKILL"))
    assert verdict(rec).startswith("ddp-viz verdict: rank 2 is the root cause: killed by SIGKILL")


def test_twin_a_rank_stopped_while_the_others_timed_out_is_the_one_they_waited_for() -> None:
    rec = run(*file_lock()[:2], WatchExit(1, 2, 102, -15, "SIGTERM"))
    assert verdict(rec).startswith(
        "ddp-viz verdict: rank 2 is the root cause: it never reached the collective"
    )


def test_twin_a_hang_named_live_is_the_diagnosis() -> None:
    hang = WatchHang(1, 59.0, 2.0, [{"rank": 2, "state": "outside", "quiet_s": 3.0}])
    rec = run(hang, *file_lock())
    assert verdict(rec).startswith("ddp-viz verdict: hang")


def test_twin_a_world_of_one_names_its_rank() -> None:
    rec = run(raised(0, 1.0, TIMEOUT), world=1)
    assert verdict(rec).startswith("ddp-viz verdict: rank 0 is the root cause: RuntimeError")


def arrived(rank: int, step: int, at: float) -> Timing:
    """Rank ``rank``'s step ``step`` (0-based) with its one bucket launched at ``at``."""
    bucket = {"index": 0, "params": ["w"], "bytes": 4, "launched": at, "finished": None}
    return Timing(1, step, rank, {"forward": [[at - 0.001, at]]}, [], [bucket])


def steps_then(late_by: float, ranks: tuple[int, ...] = (0, 1, 2)) -> list:
    """Three steps together, then step 4 (index 3), which rank 2 reaches ``late_by`` seconds
    after the others."""
    out = [arrived(r, s, 50.0 + s) for s in range(3) for r in (0, 1, 2)]
    return out + [arrived(r, 3, 56.0 + (late_by if r == 2 else 0.0)) for r in ranks]


def test_the_rank_that_reached_the_all_reduce_past_the_timeout_is_named() -> None:
    """The real file_lock.py run: rank 2 reached step 4's all-reduce 4181 ms after the others,
    once rank 0's exit had let go of the lock, and only then lost its peers."""
    rec = run(*steps_then(4.1814), *file_lock())
    assert verdict(rec) == (
        "ddp-viz verdict: rank 2 is the root cause: it reached step 4's all-reduce 4181 ms after "
        "the first rank, past the 4 s timeout the others gave up at, and raised no error of its "
        "own (run again with --hang-after 2, under the 4 s timeout, to see where it was held)"
    )
    lines = said(rec)
    # the late rank leads, in the red headline's place; the first error is a plain line under it
    assert lines[0] == (
        "✗ crash: rank 2 reached step 4's all-reduce 4181 ms after the first rank, past the 4 s "
        "timeout: the others had given up on it, and each error below followed (the cause)"
    )
    assert lines[1].startswith("  rank 0 raised RuntimeError: ")
    assert lines[1].endswith("(the first failure, itself a consequence: no rank raised an error "
                             "of its own)")  # fmt: skip
    assert [line for line in lines if line.startswith("✗")] == lines[:1]
    assert len(lines) == 4  # the late rank, then each rank's error once
    assert rank_states(rec) == {0: "stopped", 1: "stopped", 2: "failed"}  # the late one


@pytest.mark.parametrize(
    ("why", "events"),
    [
        ("last, but within the timeout", [*steps_then(3.9), *file_lock()]),
        ("a rank never reached it", [*steps_then(4.2, ranks=(0, 1)), *file_lock()]),
        (
            "the timeout not in the words",
            [*steps_then(4.2), *file_lock()[:1], raised(1, 60.489, CB + "Socket Timeout")],
        ),
    ],
)
def test_twin_no_rank_is_named_late_without_the_measure_and_the_timeout(why, events) -> None:  # type: ignore[no-untyped-def]
    rec = run(*events)
    assert verdict(rec).startswith("ddp-viz verdict: no rank raised an error of its own: "), why
    assert "reached step 4's all-reduce" not in " ".join(said(rec)), why


@pytest.mark.parametrize(
    ("late_by", "named"),
    [(4.0, True), (3.998, False)],  # the timeout run out exactly, and not quite
)
def test_a_rank_is_late_from_the_moment_the_timeout_has_run_out(late_by, named) -> None:  # type: ignore[no-untyped-def]
    rec = run(*steps_then(late_by), *file_lock())
    assert verdict(rec).startswith("ddp-viz verdict: rank 2 is the root cause") is named


def test_a_timeout_of_a_millisecond_and_an_error_in_the_first_step_count_too() -> None:
    at = [arrived(r, 0, 50.0 + (0.002 if r == 2 else 0.0)) for r in (0, 1, 2)]
    quick = CB + "[unbound_buffer.cc:78] Timed out waiting 1ms for recv operation to complete"
    errors = [
        WatchFailure(1, 0, 1, 50.1, "RuntimeError", CLOSED, "t.py:5 in main", inside=CALL),
        WatchFailure(1, 1, 1, 50.2, "RuntimeError", quick, "t.py:5 in main", inside=CALL),
    ]
    assert verdict(run(*at, *errors)) == (
        "ddp-viz verdict: rank 2 is the root cause: it reached step 1's all-reduce 2 ms after "
        "the first rank, past the 0.001 s timeout the others gave up at, and raised no error "
        "of its own (run again with --hang-after 1, under the 0.001 s timeout, to see where it "
        "was held)"
    )


def test_only_a_first_end_with_an_error_in_a_collective_can_tell_who_came_late() -> None:
    rec = run(*steps_then(4.2), *file_lock())
    ends = rank_ends(rec)
    assert came_late(rec, ends) == (2, 4, pytest.approx(4.2), 4000)
    stopped = RankEnd(2, End.STOPPED, float("inf"), 3, signal="SIGTERM")  # no error of its own
    assert came_late(rec, [stopped, *ends]) is None
    error = replace(raised(0, 60.4, RESET), inside=None)  # outside any collective
    outside = RankEnd(0, End.RAISED, 60.4, 4, error, peer_gone=True)
    assert came_late(rec, [outside, *ends[1:]]) is None
