"""Which ranks count as having finished their loop, and which as having entered a step past
it, for the uneven-end diagnosis (pure: the 3-rank recording's start, then the doctor's events
written here). Each rule is held from both sides: the case where the verdict must be an
uneven end and the case, one fact changed, where it must not."""

from __future__ import annotations

from ddp_viz.kinds.watched.checks import uneven_end
from ddp_viz.kinds.watched.events import WatchDropped, WatchExit, WatchFailure, WatchHang
from ddp_viz.model.timeline import record
from tests.conftest import load_recording

START = [e for e in load_recording("watched-raises-3-ranks.jsonl") if e.kind == "run_started"]
BUCKET = {"seq": 9, "op": "all_reduce", "site": "train.py:30 in main", "bucket": 0, "step": 4}
SCRIPT = {"seq": 9, "op": "all_reduce", "site": "train.py:41 in main"}  # the script's own
BARRIER = {"seq": 10, "op": "barrier", "site": "train.py:44 in main"}


def hang(*ranks: dict) -> WatchHang:
    return WatchHang(run=1, stalled_s=2.5, threshold_s=2.0, ranks=list(ranks))


def inside(rank: int, step: int, call: dict = BUCKET, state: str = "inside") -> dict:
    return {"rank": rank, "state": state, "step": step, "inside": call}


def failure(rank: int, step: int, message: str) -> WatchFailure:
    return WatchFailure(
        run=1,
        rank=rank,
        step=step,
        at=1.0,
        type="RuntimeError",
        message=message,
        site="train.py:30 in main",
    )


def found(*events):  # type: ignore[no-untyped-def]
    u = uneven_end(record([*START, *events]))
    return None if u is None else (u.rank, u.entered, u.done_rank, u.done)


def test_a_rank_a_hang_saw_end_finished_and_ranks_in_ddps_all_reduce_entered() -> None:
    ended = {"rank": 2, "state": "ended", "step": 4}
    assert found(hang(inside(0, 5), inside(1, 5), ended)) == (0, 5, 2, 4)
    # a hang entry without a step: the rank ended before its first one
    assert found(hang(inside(0, 5), inside(1, 5), {"rank": 2, "state": "ended"})) == (0, 5, 2, 0)
    # the same ranks, but not ended: still working, so nothing is uneven yet
    working = {"rank": 2, "state": "working", "step": 4}
    assert found(hang(inside(0, 5), inside(1, 5), working)) is None


def test_only_ddps_own_all_reduce_counts_as_a_step_entered() -> None:
    ended = {"rank": 2, "state": "ended", "step": 4}
    # the script's own all-reduce, or a rank that waits but is not inside: not a step of DDP's
    assert found(hang(inside(0, 5, SCRIPT), inside(1, 5, SCRIPT), ended)) is None
    assert found(hang(inside(0, 5, state="waiting"), ended)) is None
    assert found(hang({"rank": 0, "state": "inside", "step": 5, "inside": None}, ended)) is None
    assert found(hang(inside(1, 5, state="waiting"), inside(0, 5), ended)) == (0, 5, 2, 4)


def test_a_rank_in_its_closing_barrier_finished_its_loop() -> None:
    assert found(hang(inside(0, 5), inside(1, 5), inside(2, 4, BARRIER))) == (0, 5, 2, 4)


def test_the_last_word_counts_a_rank_finished_unless_it_exited_with_an_error() -> None:
    last_word = WatchDropped(run=1, rank=2, dropped=0, steps=4)
    assert found(hang(inside(0, 5), inside(1, 5)), last_word) == (0, 5, 2, 4)
    # a last word of 0 steps is a word too: the rank finished an empty loop
    empty = WatchDropped(run=1, rank=2, dropped=0, steps=0)
    assert found(hang(inside(0, 1), inside(1, 1)), empty) == (0, 1, 2, 0)
    ok_exit = WatchExit(run=1, rank=2, pid=7, exitcode=0)
    assert found(hang(inside(0, 5), inside(1, 5)), last_word, ok_exit) == (0, 5, 2, 4)
    for code in (1, -9):  # an error, or a signal: the loop did not end as it should
        bad = WatchExit(run=1, rank=2, pid=7, exitcode=code)
        assert found(hang(inside(0, 5), inside(1, 5)), last_word, bad) is None, code


def test_a_rank_that_raised_did_not_finish_even_with_a_last_word_and_no_exit_yet() -> None:
    last_word = WatchDropped(run=1, rank=2, dropped=0, steps=4)
    raised = failure(2, 4, "boom: a value was wrong")
    assert found(hang(inside(0, 5), inside(1, 5)), last_word, raised) is None


def test_a_rank_is_counted_at_the_latest_step_it_was_seen_in() -> None:
    """A failure at step 6 and a hang that saw the rank inside step 5's all-reduce: step 6."""
    late = failure(0, 6, "Connection reset by peer")
    ended = {"rank": 2, "state": "ended", "step": 4}
    assert found(late, hang(inside(0, 5), ended)) == (0, 6, 2, 4)
    # and a rank first seen inside step 1's all-reduce entered step 1, not more
    assert found(hang(inside(0, 1), {"rank": 2, "state": "ended", "step": 0})) == (0, 1, 2, 0)


def test_a_lost_rank_entered_the_step_it_was_on_unless_it_had_finished() -> None:
    from ddp_viz.kinds.watched.events import WatchRankLost

    def lost(rank: int, step: int) -> WatchRankLost:
        return WatchRankLost(run=1, rank=rank, pid=100 + rank, step=step)

    done = WatchDropped(run=1, rank=2, dropped=0, steps=4)
    assert found(done, lost(0, 5)) == (0, 5, 2, 4)
    # rank 1 finished 6 steps and its process then went: finished, not a rank in step 6
    also_done = WatchDropped(run=1, rank=1, dropped=0, steps=6)
    assert found(done, also_done, lost(1, 6), hang(inside(0, 5))) == (0, 5, 2, 4)
    # the latest of what a rank was seen in: its failure at step 7, then lost at step 5
    gone = failure(0, 7, "Connection reset by peer")
    assert found(done, gone, lost(0, 5)) == (0, 7, 2, 4)
    assert found(done, failure(0, 7, "timed out"), failure(0, 5, "timed out")) == (0, 7, 2, 4)
    # nothing past an empty loop: a rank lost, or failed, before its first step
    empty = WatchDropped(run=1, rank=2, dropped=0, steps=0)
    assert found(empty, lost(0, 0)) is None
    assert found(empty, failure(0, 0, "Connection reset by peer")) is None


def test_only_the_first_hang_is_read() -> None:
    """The first hang is where the ranks stopped; a later one (after they moved again) says
    nothing about how the loop ended."""
    first = hang(inside(0, 5), {"rank": 2, "state": "ended", "step": 4})
    later = hang(inside(1, 9), {"rank": 2, "state": "ended", "step": 4})
    assert found(first, later) == (0, 5, 2, 4)


def test_a_rank_the_hang_saw_in_its_own_code_is_not_finished_by_a_last_word_after_a_stop() -> None:
    """Rank 2 asleep in its loop (time.sleep at the top of step 5), ranks 0 and 1 in step 5's
    all-reduce: the hang saw rank 2 running its own code. The user pressed Ctrl-C; rank 2's
    last word (4 steps) came from the stop. That is a hang, not an uneven end. Without the
    stop, or with rank 2 seen ended or in its closing barrier, the last word still counts."""
    from ddp_viz.kinds.watched.events import WatchSummary

    outside = {"rank": 2, "state": "outside", "step": 4}
    last_word = WatchDropped(run=1, rank=2, dropped=0, steps=4)
    stopped = WatchSummary(run=1, exit_code=1, stopped=True)
    assert found(hang(inside(0, 5), inside(1, 5), outside), last_word, stopped) is None
    # the others' last words come from the stop too; none of them makes rank 2 finished
    words = [WatchDropped(run=1, rank=r, dropped=0, steps=5) for r in (0, 1)]
    assert found(hang(inside(0, 5), inside(1, 5), outside), last_word, *words, stopped) is None
    # not stopped by the user: rank 2 left its loop and ended on its own
    ended = WatchSummary(run=1, exit_code=1, stopped=False)
    assert found(hang(inside(0, 5), inside(1, 5), outside), last_word, ended) == (0, 5, 2, 4)
    # stopped, but the hang saw rank 2 ended, or in its closing barrier: it had finished
    gone = {"rank": 2, "state": "ended", "step": 4}
    assert found(hang(inside(0, 5), inside(1, 5), gone), last_word, stopped) == (0, 5, 2, 4)
    at_barrier = inside(2, 4, BARRIER)
    assert found(hang(inside(0, 5), inside(1, 5), at_barrier), last_word, stopped) == (0, 5, 2, 4)
    # only the hang's rank in its own code loses its last word: rank 1 here
    asleep_1 = {"rank": 1, "state": "outside", "step": 4}
    word_1 = WatchDropped(run=1, rank=1, dropped=0, steps=4)
    assert found(hang(inside(0, 5), asleep_1, gone), last_word, word_1, stopped) == (0, 5, 2, 4)


def test_after_a_stop_only_the_first_hang_says_who_was_in_its_own_code() -> None:
    """The first hang is the one the diagnosis names; a later one (after the ranks moved on)
    does not take back a rank's finished loop. A rank in its own code with no last word at
    all is simply not finished (nothing to take back)."""
    from ddp_viz.kinds.watched.events import WatchSummary

    stopped = WatchSummary(run=1, exit_code=1, stopped=True)
    last_word = WatchDropped(run=1, rank=2, dropped=0, steps=4)
    gone = {"rank": 2, "state": "ended", "step": 4}
    later = hang(inside(0, 5), inside(1, 5), {"rank": 2, "state": "outside", "step": 4})
    first = hang(inside(0, 5), inside(1, 5), gone)
    assert found(first, later, last_word, stopped) == (0, 5, 2, 4)
    unseen = hang(inside(0, 5), inside(1, 5))  # rank 2 not in the first hang: its word stands
    assert found(unseen, later, last_word, stopped) == (0, 5, 2, 4)
    silent = hang(inside(0, 5), inside(1, 5), {"rank": 2, "state": "outside", "step": 4})
    assert found(silent, stopped) is None  # no last word, nothing finished: no uneven end
