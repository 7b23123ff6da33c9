"""A hang's lines, word by word (pure): each test feeds the places of ranks written out by
hand and compares the whole line the report prints, so a lost space, a wrong direction
("to"/"from"), a default peer or a line said for the wrong rank of a group shows. Each rule
that picks between two wordings is given both."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.watched.doctor import (
    Doctor,
    call_text,
    hang_lines,
    p2p_waits,
    place_lines,
    running_frame,
    stuck_text,
    threshold_from_env,
)
from ddp_viz.kinds.watched.events import StuckRank, WatchBeat, WatchHang

AT = "job.py:30 in main"


def call(op: str, seq: int = 5, **kw: object) -> dict:
    return {"seq": seq, "op": op, "site": AT, **kw}


def inside(rank: int, c: dict, step: int = 2) -> StuckRank:
    return StuckRank(rank=rank, state="inside", step=step, inside=c)  # type: ignore[typeddict-item]


def outside(rank: int, stack: list[str], step: int = 2, **kw: object) -> StuckRank:
    return StuckRank(rank=rank, state="outside", step=step, stack=stack, **kw)  # type: ignore[typeddict-item]


def hang(*ranks: StuckRank) -> WatchHang:
    return WatchHang(1, 3.0, 2.0, list(ranks))


@pytest.mark.parametrize(
    ("c", "said"),
    [
        # every tensor of a call, each in its brackets, a space between
        (call("all_gather", sizes=[[3], [3, 2], [1]]), f"all_gather #5 [3] [3×2] [1] at {AT}"),
        # point to point: the direction by the op, and no size, no trailing space
        (call("send", peer=2), f"send to rank 2 at {AT}"),
        (call("isend", peer=0), f"isend to rank 0 at {AT}"),
        (call("irecv", peer=1, sizes=[[4]]), f"irecv from rank 1 [4] at {AT}"),
        # a recv without src (or a recording from before the peer was sent): any rank
        (call("recv", peer=-1), f"recv from any rank at {AT}"),
        (call("recv"), f"recv from any rank at {AT}"),
        # rooted collectives: the direction by the op; root 0 is a root; -1 (not an int) none
        (call("broadcast", root=0), f"broadcast #5 from rank 0 at {AT}"),
        (call("gather", root=2), f"gather #5 to rank 2 at {AT}"),
        (call("broadcast", root=-1), f"broadcast #5 at {AT}"),
        (call("scatter"), f"scatter #5 at {AT}"),
        # DDP's bucket says its step, from 1 (a recording from before steps were sent: step 1)
        (
            call("all_reduce", sizes=[[9]], bucket=1, step=3),
            f"DDP's gradient all_reduce #5 [9] (bucket 1 of step 4) at {AT}",
        ),
        (
            call("all_reduce", bucket=0),
            f"DDP's gradient all_reduce #5 (bucket 0 of step 1) at {AT}",
        ),
    ],
)
def test_a_call_in_words(c: dict, said: str) -> None:
    assert call_text(c) == said  # type: ignore[arg-type]


def test_two_ranks_each_isend_to_the_other_neither_receives() -> None:
    a, b = call("isend", seq=1, peer=1), call("isend", seq=1, peer=0)
    assert p2p_waits(hang(inside(0, a), inside(1, b))) == [
        f"ranks 0, 1 each wait to send to the other (rank 0 waits in isend to rank 1 at {AT}; "
        f"rank 1 in isend to rank 0 at {AT}): a point-to-point deadlock, neither receives"
    ]
    a, b = call("irecv", seq=1, peer=1), call("irecv", seq=1, peer=0)
    assert p2p_waits(hang(inside(0, a), inside(1, b)))[0].startswith(
        "ranks 0, 1 each wait to receive from the other ("
    )


def test_every_rank_held_in_a_p2p_call_is_said_once_and_each_pair_only_once() -> None:
    """Rank 0 receives from any rank (no line: it waits for no one rank); ranks 1 and 3, and
    2 and 4, receive from each other; rank 5 receives from rank 1; rank 6 runs outside."""
    h = hang(
        inside(0, call("recv", seq=1)),  # no peer: from any rank
        inside(1, call("recv", seq=2, peer=3)),
        inside(2, call("recv", seq=2, peer=4)),
        inside(3, call("recv", seq=2, peer=1)),
        inside(4, call("recv", seq=2, peer=2)),
        inside(5, call("recv", seq=1, peer=1)),
        outside(6, ["job.py:9 in main: time.sleep(9)"]),
    )

    def pair(a: int, b: int) -> str:
        return (
            f"ranks {a}, {b} each wait to receive from the other (rank {a} waits in recv from "
            f"rank {b} at {AT}; rank {b} in recv from rank {a} at {AT}): a point-to-point "
            "deadlock, neither sends"
        )

    assert p2p_waits(h) == [
        pair(1, 3),
        pair(2, 4),
        f"rank 5 waits in recv from rank 1 at {AT}; rank 1: inside recv from rank 3 at {AT}, in "
        "or after its step 2 (1 reported)",
    ]


def test_a_rank_that_waits_on_a_rank_outside_any_call_is_said_with_where_that_one_runs() -> None:
    h = hang(
        outside(0, ["job.py:9 in main: time.sleep(9)"]),
        inside(1, call("recv", seq=1, peer=0)),
        inside(2, call("recv", seq=1, peer=7)),  # no rank 7 in the hang: nothing to add
    )
    assert p2p_waits(h) == [
        f"rank 1 waits in recv from rank 0 at {AT}; rank 0: in no communication, in or after "
        "its step 2 (1 reported); running job.py:9 in main: time.sleep(9)"
    ]


def test_a_rank_outside_holding_a_last_p2p_call_is_not_a_wait() -> None:
    """A rank's last call (done) names a peer too: only the call it is inside is a wait."""
    h = hang(
        outside(0, ["job.py:9 in main: f()"], last=call("recv", seq=1, peer=1)),
        outside(1, ["job.py:9 in main: f()"]),
    )
    assert p2p_waits(h) == []


def test_a_recv_whose_peer_is_in_another_p2p_call_is_no_deadlock() -> None:
    """Rank 1 is inside a send to rank 0 (not a recv): the two are not waiting on each other."""
    h = hang(inside(0, call("recv", seq=1, peer=1)), inside(1, call("send", seq=1, peer=2)))
    assert p2p_waits(h)[0] == (
        f"rank 0 waits in recv from rank 1 at {AT}; rank 1: inside send to rank 2 at {AT}, in or "
        "after its step 2 (1 reported)"
    )
    assert not any("deadlock" in line for line in p2p_waits(h))


def test_ranks_in_one_place_share_a_line_with_how_long_they_have_been_there() -> None:
    ar = call("all_reduce", sizes=[[8]])
    h = hang(
        inside(0, {**ar, "for_s": 3.04}),
        inside(1, {**ar, "for_s": 2.98}),
        inside(2, {**ar, "for_s": 1.51}),
        outside(3, ["job.py:40 in main: time.sleep(60)"]),
    )
    assert place_lines(h) == [
        f"ranks 0–2: inside all_reduce #5 [8] at {AT} for 1.5–3.0 s, in or after their step 2 "
        "(1 reported)",
        "rank 3: in no communication, in or after its step 2 (1 reported); running job.py:40 in "
        "main: time.sleep(60)",
    ]
    # the same time to a tenth is said once; no times at all: nothing
    same = hang(inside(1, {**ar, "for_s": 3.04}), inside(2, {**ar, "for_s": 2.96}))
    assert place_lines(same) == [
        f"ranks 1, 2: inside all_reduce #5 [8] at {AT} for 3.0 s, in or after their step 2 "
        "(1 reported)"
    ]
    untimed = hang(inside(1, ar), inside(2, ar))
    assert place_lines(untimed) == [
        f"ranks 1, 2: inside all_reduce #5 [8] at {AT}, in or after their step 2 (1 reported)"
    ]


def test_ranks_outside_any_call_at_one_line_share_it() -> None:
    """Two ranks asleep at one line and one at another: the pair's line lists both ranks and
    carries no time (they are in no call)."""
    sleep = ["job.py:40 in main: time.sleep(60)"]
    h = hang(outside(1, sleep), outside(2, ["job.py:41 in main: x()"]), outside(3, sleep))
    assert place_lines(h) == [
        "ranks 1, 3: in no communication, in or after their step 2 (1 reported); running "
        "job.py:40 in main: time.sleep(60)",
        "rank 2: in no communication, in or after its step 2 (1 reported); running job.py:41 in "
        "main: x()",
    ]


def test_a_rank_outside_any_call_without_a_stack_or_a_last_call_says_only_that() -> None:
    s = StuckRank(rank=2, state="outside")
    assert stuck_text(s) == "rank 2: in no communication"
    last = {**s, "last": call("barrier", seq=3)}
    assert stuck_text(last) == (  # type: ignore[arg-type]
        f"rank 2: in no communication; its last communication: barrier #3 at {AT}"
    )


@pytest.mark.parametrize(
    ("stack", "calls", "frame"),
    [
        # the outermost frame's file is the script's: its innermost frame there
        (
            ["lib.py:3 in run: go()", "threading.py:320 in wait: w()"],
            {},
            "lib.py:3 in run: go() (inside threading.py:320 in wait: w())",
        ),
        # the innermost of the script's frames (its file: the outermost's or a call's site)
        (
            ["job.py:50 in main: f()", "job.py:12 in f: g()", "lib.py:9 in g: h()"],
            {},
            "job.py:12 in f: g() (inside lib.py:9 in g: h())",
        ),
        (
            ["launch.py:5 in <module>: m()", "model.py:8 in fwd: s()", "lib.py:9 in s: w()"],
            {"last": call("all_reduce", site="model.py:20 in step")},
            "model.py:8 in fwd: s() (inside lib.py:9 in s: w())",
        ),
        (["job.py:50 in main: f()"], {}, "job.py:50 in main: f()"),
        ([], {}, ""),
    ],
)
def test_a_rank_in_no_call_is_placed_at_the_scripts_own_line(stack, calls, frame) -> None:  # type: ignore[no-untyped-def]
    s = StuckRank(rank=0, state="outside", stack=stack, **calls)
    assert running_frame(s) == frame


def test_ranks_missing_from_a_collective_are_listed_with_commas() -> None:
    ar = call("all_reduce", sizes=[[8]])
    h = hang(
        inside(0, ar),
        outside(1, ["job.py:9 in main: f()"]),
        inside(2, ar),
        outside(3, ["job.py:9 in main: f()"]),
    )
    assert hang_lines(h, stacks=False)[1] == "  missing from all_reduce #5: rank 1, rank 3"


def beat(rank: int, step: int, inside: dict | None = None, last: dict | None = None) -> WatchBeat:
    return WatchBeat(1, rank, step, 7, 0.01, inside, last, ["job.py:9 in main: f()"])  # type: ignore[arg-type]


def test_a_rank_beating_before_it_joined_is_kept_and_can_be_lost() -> None:
    """A beat can overtake the rank's hello on the wire: the rank is kept with pid 0 and step
    0, moved at the beat's time, and its loss says the collective its beat was in."""
    doc = Doctor(fixed=1.0)
    ar = call("all_reduce", sizes=[[8]])
    doc.beat(beat(3, 4, inside=ar, last=call("barrier", seq=4)), now=2.0)
    assert doc.check(2.9) is None  # it moved at 2.0, not at 0
    hang = doc.check(3.0)
    assert hang is not None and hang.run == 1 and hang.stalled_s == pytest.approx(1.0)
    lost = doc.lost(3)
    assert lost is not None
    assert (lost.run, lost.rank, lost.pid, lost.step) == (1, 3, 0, 4)
    assert lost.inside == ar and lost.last == call("barrier", seq=4)


def test_a_rank_lost_before_any_beat_is_at_its_first_step_with_no_call() -> None:
    doc = Doctor(fixed=1.0)
    doc.joined(1, 501, now=0.0)
    lost = doc.lost(1)
    assert lost is not None
    assert (lost.pid, lost.step, lost.inside, lost.last) == (501, 0, None, None)
    doc.joined(2, 502, now=0.0)
    doc.stepped(2, 0)
    assert doc.lost(2).step == 2  # type: ignore[union-attr]


def test_a_joined_rank_is_quiet_from_when_it_joined() -> None:
    doc = Doctor(fixed=1.0)
    doc.joined(0, 500, now=5.0)
    doc.beat(WatchBeat(1, 0, 0, 0, float("nan"), stack=["job.py:1 in main: f()"]), now=5.0)
    assert doc.check(5.9) is None
    assert doc.check(6.0) is not None
    quiet = Doctor(fixed=1.0)  # a rank that joined and never beat: quiet since it joined
    quiet.joined(0, 500, now=5.0)
    assert quiet.check(6.9) is None  # past the threshold, it waits a second for a stack
    late = quiet.check(7.0)
    assert late is not None and late.ranks == [{"rank": 0, "state": "outside", "quiet_s": 2.0}]


def test_without_a_finite_step_time_the_threshold_is_the_floor() -> None:
    doc = Doctor()
    assert doc.threshold() == 10.0  # no beat yet
    doc.joined(0, 500, now=0.0)
    doc.beat(WatchBeat(1, 0, 0, 0, float("nan")), now=0.0)
    assert doc.threshold() == 10.0


def test_a_fixed_threshold_below_a_second_is_kept() -> None:
    assert threshold_from_env({"DDP_VIZ_HANG_S": "0.5"}) == 0.5
