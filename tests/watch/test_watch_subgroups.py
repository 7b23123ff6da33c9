"""A subgroup's collectives (pure, but for the rank side's wrapper): ``dist.new_group([0, 1])``
and an all_reduce in it are made by ranks 0 and 1 only. Numbered with every rank's calls, they
put the pair's numbers ahead of rank 2's: the pair's all_reduce read as one rank 2 was missing
from, and as a collective that did not match rank 2's DDP all-reduce (a hang tried by hand:
both said, both false). A subgroup's calls are now numbered apart, per group, carry the
group's ranks, and are compared only with the group's own."""

from __future__ import annotations

import pytest
import torch

import ddp_viz.kinds.watched.watch.calls as calls_module
from ddp_viz.kinds.watched.apart import call_mismatch
from ddp_viz.kinds.watched.checks import hang_verdict
from ddp_viz.kinds.watched.doctor import call_text, group_waits, hang_lines, mismatch, missing
from ddp_viz.kinds.watched.events import StuckRank, WatchFailure, WatchHang
from ddp_viz.kinds.watched.watch.calls import Calls, _group_at, _wrap, group_ranks

AT = "pair.py:20 in main"
SLEEP = "pair.py:18 in main: time.sleep(30)"


def pair_call(seq: int = 2, group: list[int] | None = None) -> dict:
    return {"seq": seq, "op": "all_reduce", "site": AT, "sizes": [[]], "group": group or [0, 1]}


def ddp(seq: int = 3) -> dict:
    return {
        "seq": seq,
        "op": "all_reduce",
        "site": "pair.py:8 in main",
        "sizes": [[65]],
        "bucket": 0,
        "step": 2,
    }


def inside(rank: int, c: dict) -> StuckRank:
    return StuckRank(rank=rank, state="inside", step=2, inside=c)  # type: ignore[typeddict-item]


def asleep(rank: int) -> StuckRank:
    return StuckRank(rank=rank, state="outside", step=2, stack=[SLEEP])


def test_a_pair_waiting_for_one_of_its_own_is_said_so_and_nothing_else_is_asked_of_rank_2() -> None:
    h = WatchHang(1, 2.0, 2.0, [inside(0, pair_call()), asleep(1), inside(2, ddp())])
    assert group_waits(h) == [
        f"rank 0 waits in all_reduce #2 of ranks 0, 1 [] at {AT} for rank 1; rank 1: in no "
        f"communication, in or after its step 2 (1 reported); running {SLEEP}"
    ]
    assert mismatch(h) == ""  # the pair's call is no call of rank 2's to match
    call, absent = missing(h)
    assert call is not None and call["seq"] == 3 and absent == [0, 1]  # rank 2's all-reduce
    # of the ranks it misses, the one running its own code is named, not rank 0 (which
    # waits for it in the pair's call)
    assert hang_verdict(h) == (
        "hang: ranks 0, 1 never joined all_reduce #3 that the others are in; rank 1 is "
        f"running {SLEEP}"
    )
    assert "  missing from all_reduce #3: rank 0, rank 1" in hang_lines(h, stacks=False)


def test_twin_the_whole_group_in_its_call_waits_for_no_one_of_it() -> None:
    h = WatchHang(1, 2.0, 2.0, [inside(0, pair_call()), inside(1, pair_call()), inside(2, ddp())])
    assert group_waits(h) == []
    # a whole pair first, then a group of three with two of its ranks away, each said
    quad = [2, 3, 4]
    h = WatchHang(
        1,
        2.0,
        2.0,
        [
            inside(0, pair_call()),
            inside(1, pair_call()),
            inside(2, pair_call(group=quad)),
            asleep(3),
            asleep(4),
        ],
    )
    said = (
        f"rank 2 waits in all_reduce #2 of ranks 2–4 [] at {AT} for ranks 3, 4; rank 3: in no "
        f"communication, in or after its step 2 (1 reported); running {SLEEP}; rank 4: in no "
        f"communication, in or after its step 2 (1 reported); running {SLEEP}"
    )
    assert group_waits(h) == [said]
    assert "  " + said in hang_lines(h, stacks=False)
    # two ranks of a group of three in it, the third elsewhere: both named, the one absent
    trio = [0, 1, 3]
    h = WatchHang(
        1,
        2.0,
        2.0,
        [
            inside(0, pair_call(group=trio)),
            inside(1, pair_call(group=trio)),
            inside(2, ddp()),
            asleep(3),
        ],
    )
    assert group_waits(h) == [
        f"ranks 0, 1 wait in all_reduce #2 of ranks 0, 1, 3 [] at {AT} for rank 3; rank 3: in no "
        f"communication, in or after its step 2 (1 reported); running {SLEEP}"
    ]


def test_twin_with_no_absent_rank_running_the_first_absent_is_said() -> None:
    h = WatchHang(
        1, 2.0, 2.0, [inside(0, pair_call()), inside(1, pair_call(seq=3)), inside(2, ddp())]
    )
    assert hang_verdict(h) == (
        "hang: ranks 0, 1 never joined all_reduce #3 that the others are in; rank 0 is inside "
        f"all_reduce #2 at {AT}"
    )


def test_a_subgroup_call_names_its_ranks() -> None:
    assert call_text(pair_call()) == f"all_reduce #2 of ranks 0, 1 [] at {AT}"  # type: ignore[arg-type]
    assert call_text(pair_call(group=[0, 1, 2, 3])) == f"all_reduce #2 of ranks 0–3 [] at {AT}"  # type: ignore[arg-type]


def failed(rank: int, c: dict) -> WatchFailure:
    return WatchFailure(
        1, rank, 2, 5.0 + rank, "RuntimeError", "Connection closed by peer", AT, inside=c
    )  # type: ignore[arg-type]


def test_a_crash_inside_a_pairs_call_and_an_all_reduce_of_one_number_is_no_mismatch() -> None:
    assert call_mismatch([failed(0, pair_call(seq=3)), failed(2, ddp(seq=3))], []) is None
    # twin: every rank's calls of one number that differ still do
    other = {**ddp(seq=3), "sizes": [[64]]}
    assert (
        call_mismatch([failed(0, ddp(seq=3)), failed(1, ddp(seq=3)), failed(2, other)], [])
        is not None
    )


def test_a_subgroups_calls_are_numbered_apart_per_group() -> None:
    calls = Calls()
    first = calls.enter("all_reduce", [[3]], AT)
    pair = calls.enter("all_reduce", [[]], AT, group=(0, 1))
    other = calls.enter("barrier", [], AT, group=(1, 2))
    again = calls.enter("all_reduce", [[]], AT, group=(0, 1))
    second = calls.enter("all_reduce", [[3]], AT)
    sent = calls.enter("send", [[3]], AT, peer=1, group=(0, 1))  # p2p: its own count, no group
    assert [c.seq for c in (first, pair, other, again, second, sent)] == [1, 1, 1, 2, 2, 1]
    assert pair.word()["group"] == [0, 1] and "group" not in first.word()
    assert "group" not in sent.word()


def test_the_wrapper_reads_the_group_where_each_function_takes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def all_reduce(tensor, op=None, group=None, async_op=False):  # type: ignore[no-untyped-def]
        return None

    def barrier(group=None, async_op=False):  # type: ignore[no-untyped-def]
        return None

    assert (_group_at(all_reduce), _group_at(barrier), _group_at(print)) == (2, 0, -1)
    assert _group_at(torch.distributed.all_reduce) == 2  # torch's own, through its decorators
    pair = object()
    monkeypatch.setattr(calls_module, "group_ranks", lambda g: (0, 1) if g is pair else ())
    monkeypatch.setattr(calls_module, "CALLS", Calls())
    _wrap("all_reduce", all_reduce)(torch.zeros(()), None, pair)
    assert calls_module.CALLS.last is not None and calls_module.CALLS.last.group == (0, 1)
    _wrap("barrier", barrier)(group=pair)
    assert calls_module.CALLS.last.group == (0, 1) and calls_module.CALLS.last.seq == 2
    _wrap("all_reduce", all_reduce)(torch.zeros(()))
    assert calls_module.CALLS.last.group == () and calls_module.CALLS.last.seq == 1


def test_the_default_group_and_a_group_torch_does_not_know_are_every_ranks() -> None:
    assert group_ranks(None) == ()
    assert group_ranks(object()) == ()  # no process group here: as the default one
