"""The hang detector's rules, each on both sides (pure, the listener's clock given by hand):
the threshold follows the slowest rank's steps; a hang needs every running rank quiet, is
named once per stall and again after the ranks moved; it waits a little for stacks; ranks
that ended or vanished neither hold it off nor hide; a lost rank's step is the later of its
beat and its events; and the words for where a rank is count steps from 1."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.watched.doctor import (
    MIN_HANG_S,
    STACK_WAIT_S,
    STEPS_HANG,
    Doctor,
    call_text,
    hang_threshold,
    step_words,
    stuck_text,
    threshold_from_env,
)
from ddp_viz.kinds.watched.events import WatchBeat

CALL = {"seq": 4, "op": "all_reduce", "site": "train.py:40 in main", "sizes": [[3, 2]]}


def beat(rank: int, progress: int, step_s: float = 0.01, stack=("t.py:1 in main: x()",), **kw):
    return WatchBeat(1, rank, kw.pop("step", 3), progress, step_s, stack=list(stack), **kw)


def doctor(ranks: int = 3, fixed: float | None = 1.0) -> Doctor:
    doc = Doctor(fixed=fixed)
    for r in range(ranks):
        doc.joined(r, 100 + r, 0.0)
        doc.beat(beat(r, 1), 0.0)
    return doc


def test_the_threshold_follows_the_slowest_ranks_steps() -> None:
    doc = doctor(fixed=None)
    doc.beat(beat(0, 2, step_s=0.1), 0.0)
    doc.beat(beat(1, 2, step_s=0.9), 0.0)
    doc.beat(beat(2, 2, step_s=float("nan")), 0.0)  # no step yet: not counted
    assert doc.threshold() == STEPS_HANG * 0.9
    assert hang_threshold(MIN_HANG_S / STEPS_HANG) == MIN_HANG_S
    assert hang_threshold(MIN_HANG_S / STEPS_HANG * 1.5) == MIN_HANG_S * 1.5
    assert hang_threshold(float("inf")) == MIN_HANG_S
    assert doctor(fixed=None).threshold() == MIN_HANG_S  # 0.01 s steps: the floor


@pytest.mark.parametrize(
    ("value", "fixed"),
    [("2.5", 2.5), ("0", None), ("-1", None), ("nan", None), ("inf", None), ("soon", None)],
)
def test_a_fixed_threshold_comes_from_the_environment_when_it_is_a_positive_number(
    value, fixed
) -> None:
    assert threshold_from_env({"DDP_VIZ_HANG_S": value}) == fixed
    assert threshold_from_env({}) is None


def test_a_hang_needs_every_running_rank_quiet_for_the_threshold() -> None:
    doc = doctor()
    assert doc.check(0.99) is None
    doc.beat(beat(2, 2), 0.5)  # the last rank moved at 0.5: the stall is 0.5 s at 1.0
    assert doc.check(1.2) is None
    hang = doc.check(1.5)
    assert hang is not None
    assert hang.stalled_s == pytest.approx(1.0) and hang.threshold_s == 1.0
    assert [s["rank"] for s in hang.ranks] == [0, 1, 2]
    assert [s["quiet_s"] for s in hang.ranks] == pytest.approx([1.5, 1.5, 1.0])


def test_a_beat_that_repeats_its_progress_is_no_move() -> None:
    doc = doctor()
    doc.beat(beat(1, 1), 0.8)  # same progress: still quiet since 0.0
    hang = doc.check(1.0)
    assert hang is not None and hang.stalled_s == pytest.approx(1.0)


def test_one_hang_per_stall_and_another_after_the_ranks_moved() -> None:
    doc = doctor()
    assert doc.check(1.0) is not None
    assert doc.check(5.0) is None  # the same stall
    for r in range(3):
        doc.beat(beat(r, 2), 5.5)
    assert doc.check(6.0) is None  # they moved: the stall is over
    again = doc.check(6.6)
    assert again is not None and again.stalled_s == pytest.approx(1.1)


def test_a_hang_waits_a_little_for_every_ranks_stack() -> None:
    doc = doctor()
    doc.beat(beat(2, 1, stack=()), 0.0)  # the last rank has not sent its stack yet
    assert doc.check(1.0) is None
    assert doc.check(1.0 + STACK_WAIT_S * 0.9) is None
    late = doc.check(1.0 + STACK_WAIT_S)
    assert late is not None and "stack" not in late.ranks[2]


def test_ranks_that_ended_or_vanished_are_named_but_do_not_hold_a_hang_off() -> None:
    doc = doctor()
    doc.ended(0)
    lost = doc.lost(1)
    assert lost is not None
    doc.beat(beat(2, 1), 0.0)
    hang = doc.check(1.0)
    assert hang is not None
    assert [s["state"] for s in hang.ranks] == ["ended", "gone", "outside"]
    assert doc.lost(1) is None  # once
    assert doc.lost(0) is None  # it ended: not lost


def test_when_no_rank_runs_there_is_no_hang() -> None:
    doc = doctor(ranks=2)
    doc.ended(0)
    doc.ended(1)
    assert doc.check(100.0) is None


def test_a_lost_rank_s_step_is_the_later_of_its_beat_and_its_events() -> None:
    doc = doctor()
    doc.stepped(2, 6)  # it sent step 7's events (from 0: 6) as its step 8 began
    lost = doc.lost(2)
    assert (lost.rank, lost.pid, lost.step) == (2, 102, 8)
    doc.stepped(1, 0)
    assert doc.lost(1).step == 3  # its beat said step 3
    doc.stepped(9, 3)  # a rank never seen: nothing to do


def test_a_rank_inside_a_collective_is_placed_there_with_its_last_call() -> None:
    doc = doctor()
    inside = {**CALL, "bucket": 1, "step": 2}
    doc.beat(beat(1, 1, inside=inside, last=inside), 0.0)
    hang = doc.check(1.0)
    s = hang.ranks[1]
    assert s["state"] == "inside" and s["inside"] == inside and s["last"] == inside
    assert s["step"] == 3 and s["stack"] == ["t.py:1 in main: x()"]
    assert hang.ranks[0]["state"] == "outside" and "inside" not in hang.ranks[0]


def test_the_words_for_a_call_and_a_place() -> None:
    assert call_text(CALL) == "all_reduce #4 [3×2] at train.py:40 in main"
    bucket = {**CALL, "sizes": [[97]], "bucket": 0, "step": 2}
    assert call_text(bucket) == (
        "DDP's gradient all_reduce #4 [97] (bucket 0 of step 3) at train.py:40 in main"
    )
    assert (
        call_text({"seq": 1, "op": "barrier", "site": "t.py:2 in f"}) == "barrier #1 at t.py:2 in f"
    )
    assert step_words(0) == ""
    assert step_words(4) == ", in or after its step 4 (3 reported)"
    assert step_words(1, their=True) == ", in or after their step 1 (0 reported)"
    gone = {"rank": 2, "state": "gone", "quiet_s": 1.0, "step": 5}
    assert (
        stuck_text(gone)
        == "rank 2: gone (its process vanished), in or after its step 5 (4 reported)"
    )
    inside = {"rank": 0, "state": "inside", "quiet_s": 1.0, "inside": {**CALL, "for_s": 2.25}}
    assert (
        stuck_text(inside) == "rank 0: inside all_reduce #4 [3×2] at train.py:40 in main for 2.2 s"
    )
