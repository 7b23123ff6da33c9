"""A collective's dtypes (pure, but for torch's tensors on the rank's side): gloo moves bytes,
so a rank that all-reduces a float64 metric against the others' float32 sends twice the bytes,
and gloo aborts the rank that receives them ("Received data size doesn't match"). Shapes alone
read the same on every rank (``[]``), and the doctor named no mismatch. A rank now sends its
tensors' dtypes when one is not float32, the words name a dtype that is not, and the calls the
ranks must agree on include them. An error that left a wrapped call is reported as inside it."""

from __future__ import annotations

import pytest
import torch

from ddp_viz.kinds.watched.apart import call_mismatch
from ddp_viz.kinds.watched.doctor import call_text, mismatch
from ddp_viz.kinds.watched.events import StuckRank, WatchFailure, WatchHang
from ddp_viz.kinds.watched.tensors import tensor_words, tensors_key
from ddp_viz.kinds.watched.watch.calls import Calls, _wrap, dtypes_of, sizes_of

AT = "metric.py:12 in main"


def metric(seq: int = 2, dtypes: list[str] | None = None) -> dict:
    c = {"seq": seq, "op": "all_reduce", "site": AT, "sizes": [[]]}
    return {**c, "dtypes": dtypes} if dtypes is not None else c


@pytest.mark.parametrize(
    ("args", "sizes", "dtypes"),
    [
        ((torch.zeros(()),), [[]], []),  # float32: no word
        ((torch.zeros((), dtype=torch.float64),), [[]], ["float64"]),
        ((torch.zeros(3, dtype=torch.int64), "sum"), [[3]], ["int64"]),
        # a list: each tensor's, aligned with its shapes; one that is not float32 names all
        (
            ([torch.zeros(2), torch.zeros(2, dtype=torch.bfloat16)],),
            [[2], [2]],
            ["float32", "bfloat16"],
        ),
        (([torch.zeros(2)] * 6,), [[2]] * 4 + [[6]], []),  # 6 tensors: four, and the length
        (([torch.zeros(2, dtype=torch.float16)] * 6,), [[2]] * 4 + [[6]], ["float16"] * 4),
        ((["not a tensor"],), [], []),
        ((), [], []),
    ],
)
def test_a_calls_dtypes_are_sent_beside_its_shapes_when_one_is_not_float32(
    args, sizes, dtypes
) -> None:  # type: ignore[no-untyped-def]
    assert sizes_of(args) == sizes
    assert dtypes_of(args) == dtypes


def test_the_word_a_rank_sends_carries_its_dtypes_only_when_it_has_some() -> None:
    calls = Calls()
    plain = calls.enter("all_reduce", [[3]], AT)
    double = calls.enter("all_reduce", [[]], AT, dtypes=["float64"])
    assert "dtypes" not in plain.word()
    assert double.word()["dtypes"] == ["float64"]


@pytest.mark.parametrize(
    ("c", "said"),
    [
        (metric(), "[]"),
        (metric(dtypes=["float64"]), "[] float64"),
        ({"sizes": [[2], [2]], "dtypes": ["float32", "bfloat16"]}, "[2] [2] bfloat16"),
        # a list's length closes its sizes and has no dtype
        ({"sizes": [[2], [2], [6]], "dtypes": ["int64", "int64"]}, "[2] int64 [2] int64 [6]"),
        ({}, ""),
    ],
)
def test_a_dtype_that_is_not_float32_is_said_after_its_shape(c: dict, said: str) -> None:
    assert tensor_words(c) == said  # type: ignore[arg-type]


def test_a_call_that_names_no_dtypes_is_float32_for_what_the_ranks_must_agree_on() -> None:
    assert tensors_key(metric()) == tensors_key(metric(dtypes=["float32"]))
    assert tensors_key(metric()) != tensors_key(metric(dtypes=["float64"]))
    # the order of the tensors counts: float32 then float64 is not float64 then float32
    a = {"sizes": [[2], [2]], "dtypes": ["float32", "float64"]}
    b = {"sizes": [[2], [2]], "dtypes": ["float64", "float32"]}
    assert tensors_key(a) != tensors_key(b)  # type: ignore[arg-type]


def test_ranks_in_one_all_reduce_of_other_dtypes_hang_as_a_mismatch() -> None:
    ranks = [
        StuckRank(rank=r, state="inside", step=1, inside=metric(dtypes=d))  # type: ignore[typeddict-item]
        for r, d in ((0, None), (1, None), (2, ["float64"]))
    ]
    said = mismatch(WatchHang(1, 3.0, 2.0, ranks))
    assert said == (
        f"the ranks' collectives do not match: rank 0 all_reduce #2 [] at {AT}; rank 1 "
        f"all_reduce #2 [] at {AT}; rank 2 all_reduce #2 [] float64 at {AT}"
    )
    same = [StuckRank(rank=r, state="inside", step=1, inside=metric()) for r in range(3)]  # type: ignore[typeddict-item]
    assert mismatch(WatchHang(1, 3.0, 2.0, same)) == ""
    assert call_text(metric(dtypes=["float64"])) == f"all_reduce #2 [] float64 at {AT}"


def failed(rank: int, c: dict) -> WatchFailure:
    return WatchFailure(
        1, rank, 1, 5.0 + rank, "RuntimeError", "Connection reset by peer", AT, inside=c
    )  # type: ignore[arg-type]


def test_a_crash_inside_all_reduces_of_other_dtypes_names_the_odd_rank() -> None:
    got = call_mismatch(
        [failed(0, metric()), failed(1, metric()), failed(2, metric(dtypes=["float64"]))], []
    )
    assert got == (
        f"✗ the ranks' collectives do not match: rank 0 all_reduce #2 [] at {AT}; rank 1 "
        f"all_reduce #2 [] at {AT}; rank 2 all_reduce #2 [] float64 at {AT}",
        2,
    )
    assert call_mismatch([failed(r, metric(dtypes=["float64"])) for r in range(3)], []) is None


def test_an_error_out_of_a_wrapped_call_is_reported_inside_it() -> None:
    """gloo raises from the call's wait; by the time the error reaches the top the call has
    ended. The wrapper keeps which call the error came out of, for that error (and one
    raised from it) only."""
    import ddp_viz.kinds.watched.watch.calls as calls_module

    def all_reduce(t: torch.Tensor) -> None:
        raise RuntimeError("Connection reset by peer")

    before = calls_module.CALLS
    calls_module.CALLS = Calls()
    try:
        wrapped = _wrap("all_reduce", all_reduce)
        with pytest.raises(RuntimeError) as info:
            wrapped(torch.zeros((), dtype=torch.float64))
        assert calls_module.CALLS.inside() is None  # the call is over
        call = calls_module.CALLS.raised_from(info.value)
        assert call is not None and call.op == "all_reduce" and call.dtypes == ["float64"]
        try:
            raise ValueError("the script's own, while handling it") from info.value
        except ValueError as later:
            assert calls_module.CALLS.raised_from(later) is call
        assert calls_module.CALLS.raised_from(KeyError("another error")) is None
        # the script handled it and made another call: the error (and its frames) let go
        calls_module.CALLS.enter("barrier", [], AT)
        assert calls_module.CALLS.raised is None
        assert calls_module.CALLS.raised_from(info.value) is None
    finally:
        calls_module.CALLS = before
