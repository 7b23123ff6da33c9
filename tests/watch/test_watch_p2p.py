"""Calls that name one other rank (pure: no torch ranks). A recv waits for one rank's send, not
for every rank: two ranks that each waited to receive from the other, beside a third in DDP's
all-reduce, read "rank 2 never joined recv #4 that the others are in", naming the one rank
that had no part in it (the recvs' numbers were counted with the collectives'). And a
broadcast every rank made with itself as the source read "hang: no rank moved"."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.watched.apart import call_mismatch
from ddp_viz.kinds.watched.checks import hang_verdict
from ddp_viz.kinds.watched.doctor import hang_lines, mismatch, missing
from ddp_viz.kinds.watched.events import StuckRank, WatchFailure, WatchHang
from ddp_viz.kinds.watched.watch.calls import Calls, peer_of

AT = "p2p.py:12 in main"
WAITS = f"rank 0 waits in recv from rank 1 [3] at {AT}; "


def p2p(op: str, peer: int, seq: int = 1) -> dict:
    return {"seq": seq, "op": op, "site": AT, "sizes": [[3]], "peer": peer}


def bucket(seq: int = 4) -> dict:
    return {
        "seq": seq,
        "op": "all_reduce",
        "site": "p2p.py:8 in main",
        "sizes": [[65]],
        "bucket": 0,
        "step": 3,
    }


def hang(*calls: dict | None) -> WatchHang:
    ranks: list[StuckRank] = []
    for r, c in enumerate(calls):
        s = StuckRank(rank=r, state="inside" if c else "outside", step=4)
        if c:
            s["inside"] = c
        else:
            s["stack"] = ["p2p.py:20 in main: time.sleep(60)"]
        ranks.append(s)
    return WatchHang(1, 2.1, 2.0, ranks)


def test_two_ranks_each_receiving_from_the_other_are_the_deadlock_not_the_third() -> None:
    h = hang(p2p("recv", 1), p2p("recv", 0), bucket())
    deadlock = (
        "ranks 0, 1 each wait to receive from the other (rank 0 waits in recv from rank 1 [3] at "
        f"{AT}; rank 1 in recv from rank 0 [3] at {AT}): a point-to-point deadlock, neither sends"
    )
    assert hang_verdict(h) == "hang: " + deadlock
    lines = hang_lines(h, stacks=False)
    assert "  ✗ " + deadlock in lines
    # the all-reduce rank 2 waits in is the one ranks 0 and 1 are missing: true, and second
    call, absent = missing(h)
    assert (call["op"], absent) == ("all_reduce", [0, 1])
    assert mismatch(h) == ""  # a recv is no collective that must match rank 2's
    assert any(line.startswith("  rank 0: inside recv from rank 1 [3] at ") for line in lines)


def test_two_ranks_each_sending_to_the_other_neither_receives() -> None:
    h = hang(p2p("send", 1), p2p("send", 0))
    assert hang_verdict(h).endswith("a point-to-point deadlock, neither receives")
    assert "each wait to send to the other" in hang_verdict(h)


@pytest.mark.parametrize(
    ("calls", "said"),
    [
        # rank 1 never sends: it runs a line of its own; rank 0's wait is said with it
        (
            (p2p("recv", 1), None),
            WAITS + "rank 1: in no communication",
        ),
        # rank 1 waits for rank 2, not for rank 0: no pair
        (
            (p2p("recv", 1), p2p("recv", 2), bucket()),
            WAITS + "rank 1: inside recv from rank 2",
        ),
        # the two wait in different ops (a recv and a send between them would pass)
        (
            (p2p("recv", 1), p2p("send", 0)),
            WAITS + "rank 1: inside send to rank 0",
        ),
    ],
)
def test_twin_no_pair_waiting_on_each_other_is_no_deadlock(calls, said) -> None:  # type: ignore[no-untyped-def]
    h = hang(*calls)
    assert "deadlock" not in hang_verdict(h)
    assert any(line.startswith("  ✗ " + said) for line in hang_lines(h, stacks=False)), hang_lines(
        h, stacks=False
    )


def test_twin_a_recv_from_any_rank_names_no_peer() -> None:
    h = hang(p2p("recv", -1), bucket(), bucket())
    assert not any("waits in" in line for line in hang_lines(h, stacks=False))
    assert "recv from any rank [3]" in " ".join(hang_lines(h, stacks=False))
    assert hang_verdict(h).startswith("hang: rank 0 never joined all_reduce #4")


def test_collectives_that_do_not_match_are_still_found_beside_a_p2p_wait() -> None:
    other = {**bucket(), "sizes": [[64]]}
    assert mismatch(hang(p2p("recv", 1), bucket(), other)).startswith(
        "the ranks' collectives do not match: rank 1 DDP's gradient all_reduce #4 [65]"
    )


def rooted(root: int, op: str = "broadcast") -> dict:
    return {"seq": 4, "op": op, "site": AT, "sizes": [[1]], "root": root}


def test_a_rooted_collective_whose_ranks_name_other_roots_is_the_mismatch() -> None:
    h = hang(rooted(0), rooted(1), rooted(2))
    said = (
        f"the ranks' collectives do not match: rank 0 broadcast #4 [1] from rank 0 at {AT}; "
        f"rank 1 broadcast #4 [1] from rank 1 at {AT}; rank 2 broadcast #4 [1] from rank 2 at {AT}"
    )
    assert mismatch(h) == said
    assert hang_verdict(h) == "hang: " + said
    assert missing(h)[1] == []  # every rank is in broadcast #4: none is missing from it
    assert "to rank 0" in mismatch(hang(rooted(0, "reduce"), rooted(1, "reduce")))


@pytest.mark.parametrize("roots", [(1, 1, 1), (-1, -1, -1)])
def test_twin_one_root_for_every_rank_is_no_mismatch(roots: tuple[int, ...]) -> None:
    h = hang(*(rooted(r) for r in roots))
    assert mismatch(h) == ""
    assert hang_verdict(h) == "hang: no rank moved (see each rank's place above)"


@pytest.mark.parametrize(
    ("op", "args", "kwargs", "peer"),
    [
        ("broadcast", ("t", 2), {}, 2),
        ("broadcast", ("t",), {"src": 0}, 0),
        ("broadcast", ("t",), {"group_src": 1}, 1),  # a rank within the group
        ("broadcast", ("t",), {}, -1),
        ("gather", ("t", ["a"], 1), {}, 1),  # dst is gather's third argument
        ("scatter_object_list", (["o"], ["i"]), {"src": 2}, 2),
        ("send", ("t", 2), {}, 2),
        ("isend", ("t",), {"dst": 1}, 1),
        ("recv", ("t",), {"src": 0}, 0),
        ("irecv", ("t",), {}, -1),  # from any rank
        ("recv", ("t", None), {}, -1),
        ("batch_isend_irecv", (["op"],), {}, -1),
        ("all_reduce", ("t",), {}, None),
    ],
)
def test_a_p2p_calls_peer_is_its_dst_or_src(op, args, kwargs, peer) -> None:  # type: ignore[no-untyped-def]
    assert peer_of(op, args, kwargs) == peer


def test_p2p_calls_are_numbered_apart_from_the_collectives_every_rank_makes() -> None:
    calls = Calls()
    first = calls.enter("all_reduce", [[3]], AT)
    recv = calls.enter("recv", [[3]], AT, peer=1)
    calls.leave(first)
    assert calls.inside() is recv  # the oldest call still open
    calls.leave(recv)
    second = calls.enter("all_reduce", [[3]], AT)
    assert [first.seq, recv.seq, second.seq] == [1, 1, 2]  # rank 2, making no recv, agrees
    assert recv.word()["peer"] == 1 and "peer" not in second.word()
    cast = calls.enter("broadcast", [[3]], AT, peer=0)
    assert cast.seq == 3 and cast.word()["root"] == 0 and "peer" not in cast.word()
    assert calls.inside() is second


def failed_inside(rank: int, call: dict) -> WatchFailure:
    return WatchFailure(1, rank, 3, 5.0 + rank, "RuntimeError", "timed out", AT, inside=call)  # type: ignore[arg-type]


def test_a_crash_inside_p2p_calls_is_no_collective_mismatch() -> None:
    """The ranks timed out (no hang named first): a recv numbered 4 by its own count is not
    rank 2's all-reduce #4."""
    got = call_mismatch([failed_inside(0, p2p("recv", 1, seq=4)), failed_inside(2, bucket())], [])
    assert got is None


def test_a_crash_inside_a_broadcast_of_other_roots_names_them() -> None:
    got = call_mismatch([failed_inside(r, rooted(r)) for r in (0, 1, 2)], [])
    assert got is not None
    assert got[0] == (
        f"✗ the ranks' collectives do not match: rank 0 broadcast #4 [1] (from rank 0) at {AT}; "
        f"rank 1 broadcast #4 [1] (from rank 1) at {AT}; rank 2 broadcast #4 [1] (from rank 2) "
        f"at {AT}"
    )
    assert call_mismatch([failed_inside(r, rooted(0)) for r in (0, 1, 2)], []) is None  # twin


def test_a_crash_inside_reduces_of_other_roots_says_to_which_rank() -> None:
    """reduce sends to its root (gather too): "to rank 1", where a broadcast's says "from"."""
    got = call_mismatch([failed_inside(r, rooted(r % 2, "reduce")) for r in (0, 1, 2)], [])
    assert got == (
        f"✗ the ranks' collectives do not match: rank 0 reduce #4 [1] (to rank 0) at {AT}; "
        f"rank 1 reduce #4 [1] (to rank 1) at {AT}; rank 2 reduce #4 [1] (to rank 0) at {AT}",
        1,  # the one rank whose root the others do not name
    )
