"""Tensors as the events carry them (a list, or a summary above 64 values): their norm, size and
sample, and when two of them, or two numbers, count as equal; both sides of each tolerance,
worked out by hand. Also when one rank's report of a step is complete, and what a step's
derived values are computed again for."""

from __future__ import annotations

import math

import pytest

from ddp_viz.model import step_memo
from ddp_viz.model.rank_step import RankStep
from ddp_viz.model.tensors import (
    close,
    is_summary,
    tensor_norm,
    tensor_numel,
    tensor_sample,
    tensors_close,
)
from ddp_viz.model.timeline import StepRecord

SUMMARY = {"shape": [2, 3], "norm": 7.5, "sample": [1.0, -2.0], "digest": "abc"}


def test_a_list_and_a_summary_tell_their_norm_size_and_sample() -> None:
    assert not is_summary([1.0]) and is_summary(SUMMARY)
    assert tensor_norm([3.0, -4.0]) == 5.0
    assert tensor_norm([2.0, 3.0, 6.0]) == 7.0
    assert tensor_norm([]) == 0.0
    assert tensor_norm(SUMMARY) == 7.5
    assert math.isnan(tensor_norm({"shape": [2]}))
    assert math.isnan(tensor_norm(None))
    assert tensor_numel(SUMMARY) == 6 and tensor_numel([1.0, 2.0, 3.0]) == 3
    assert tensor_sample(SUMMARY) == [1.0, -2.0]
    assert tensor_sample({"shape": [70]}) == []
    assert tensor_sample(None) == []
    values = [1.0, 2.0]
    sample = tensor_sample(values)
    assert sample == values and sample is not values  # a copy the view may keep


@pytest.mark.parametrize(
    ("a", "b", "tol", "expected"),
    [
        (0.0, 0.5, 0.5, True),  # at least absolute: within 0.5 of zero
        (0.0, 0.6, 0.5, False),
        (0.1, 0.5, 0.5, True),  # 0.4 apart, small numbers: absolute
        (2.0, 3.0, 0.4, True),  # relative to the larger: 1 <= 0.4 * 3
        (3.0, 2.0, 0.4, True),
        (-3.0, -2.0, 0.4, True),
        (2.0, 3.4, 0.4, False),  # 1.4 > 0.4 * 3.4
        (10.0, 15.0, 0.5, True),
        (10.0, 21.0, 0.5, False),
        (1.0, 1.0, 0.0, True),
        (math.nan, math.nan, 0.5, False),
        (math.inf, math.inf, 0.5, False),
        (1.0, math.inf, 0.5, False),
        (math.inf, 1.0, 0.5, False),
        (-math.inf, 1.0, 0.5, False),
        (1.0, math.nan, 0.5, False),
    ],
)
def test_two_numbers_are_close_within_the_tolerance_of_the_larger(a, b, tol, expected) -> None:
    assert close(a, b, tol) is expected


def test_the_default_tolerance_is_one_in_a_hundred_thousand() -> None:
    assert close(100.0, 100.0009) and not close(100.0, 100.0011)
    assert close(0.0, 0.000009) and not close(0.0, 0.000011)


def test_lists_agree_value_by_value_within_the_tolerance() -> None:
    assert tensors_close([1.0, 2.0], [1.0, 2.0], 0.0)
    assert tensors_close([1.0, 2.0], [1.05, 2.0], 0.1)
    assert not tensors_close([1.0, 2.0], [1.0, 2.5], 0.1)  # the last one off
    assert not tensors_close([1.0, 2.0], [1.0, 2.0, 3.0], 0.1)
    assert not tensors_close([1.0, 2.0, 3.0], [1.0, 2.0], 0.1)
    assert not tensors_close([1.0, math.nan], [1.0, math.nan], 0.1)  # NaN equals nothing
    assert not tensors_close([math.inf], [math.inf], 0.1)
    assert tensors_close([], [], 0.0)


def test_a_list_never_agrees_with_a_summary() -> None:
    assert not tensors_close([7.5], {"shape": [1], "norm": 7.5}, 1.0)
    assert not tensors_close({"shape": [1], "norm": 7.5}, [7.5], 1.0)


def test_summaries_agree_by_digest_or_without_digests_by_shape_and_norm() -> None:
    def summary(shape, norm, digest=None):
        out = {"shape": shape, "norm": norm}
        return out if digest is None else {**out, "digest": digest}

    assert tensors_close(summary([2, 3], 1.0, "x"), summary((2, 3), 9.0, "x"), 0.0)
    assert not tensors_close(summary([2, 3], 1.0, "x"), summary([2, 3], 1.0, "y"), 0.5)
    assert not tensors_close(summary([2, 3], 1.0, "x"), summary([3, 2], 1.0, "x"), 0.5)
    # a digest on one side only: the norms decide
    assert tensors_close(summary([4], 10.0, "x"), summary([4], 10.5), 0.1)
    assert not tensors_close(summary([4], 10.0), summary([4], 12.0, "x"), 0.1)
    assert tensors_close(summary([4], 10.0, ""), summary([4], 10.0, "y"), 0.0)
    assert not tensors_close(summary([4], 10.0, ""), summary([4], 11.5, ""), 0.1)


@pytest.mark.parametrize(
    ("rs", "complete"),
    [
        (RankStep(), False),
        (RankStep(loss=1.0, local={}, averaged={}, params={}), True),
        (RankStep(loss=0.0, local={}, averaged={}, params={}), True),
        (RankStep(local={}, averaged={}, params={}), False),
        (RankStep(loss=1.0, averaged={}, params={}), False),
        (RankStep(loss=1.0, local={}, params={}), False),
        (RankStep(loss=1.0, local={}, averaged={}), False),
        # a step without values: its loss and its timings are all that come
        (RankStep(loss=1.0, spans={"forward": [[0.0, 1.0]]}, values=False), True),
        (RankStep(loss=1.0, values=False), False),
        (RankStep(spans={"forward": [[0.0, 1.0]]}, values=False), False),
        (RankStep(loss=1.0, local={}, averaged={}, params={}, values=False), False),
    ],
)
def test_a_ranks_report_of_a_step_is_complete_when_all_it_sends_came(rs, complete) -> None:
    assert rs.complete is complete


def _ranks() -> dict[int, RankStep]:
    return {
        r: RankStep(
            local={"w": [float(r)]},
            averaged={"w": [1.0]},
            params={"w": [2.0]},
            bucket_spans=[{"index": 0}],
        )
        for r in (1, 0, 2)
    }


@pytest.mark.parametrize("part", ["local", "averaged", "params", "bucket_spans"])
def test_a_derived_value_is_kept_until_a_ranks_tensors_are_replaced(part) -> None:
    memo: dict = {}
    ranks = _ranks()
    calls = []

    def compute():
        calls.append(1)
        return len(calls)

    assert step_memo.memoized(memo, ranks, "x", compute) == 1
    assert step_memo.memoized(memo, ranks, "x", compute) == 1
    assert step_memo.memoized(memo, ranks, "y", compute) == 2  # another name: its own
    old = getattr(ranks[2], part)
    setattr(ranks[2], part, type(old)(old))  # equal, but a new object: a new event's
    assert step_memo.memoized(memo, ranks, "x", compute) == 3
    assert step_memo.memoized(memo, ranks, "x", compute) == 3


def test_a_derived_value_is_computed_again_for_another_set_of_ranks() -> None:
    memo: dict = {}
    ranks = _ranks()
    calls = []

    def compute():
        calls.append(1)
        return None  # a value of None is kept too

    step_memo.memoized(memo, ranks, "x", compute)
    step_memo.memoized(memo, ranks, "x", compute)
    assert len(calls) == 1
    ranks[3] = RankStep()
    step_memo.memoized(memo, ranks, "x", compute)
    assert len(calls) == 2
    moved = {0: ranks[0], 1: ranks[1], 2: ranks[2], 4: ranks[3]}  # the same reports, rank 3 as 4
    step_memo.memoized(memo, moved, "x", compute)
    assert len(calls) == 3
    step_memo.memoized(memo, {0: ranks[0]}, "x", compute)
    assert len(calls) == 4


def test_a_ranks_norms_are_computed_once_per_gradients_received(monkeypatch) -> None:
    calls = []
    norm = step_memo.tensor_norm
    monkeypatch.setattr(step_memo, "tensor_norm", lambda v: calls.append(1) or norm(v))
    st = StepRecord(0, _ranks())
    st.ranks[1].local = {"a": [3.0, 4.0], "b": [1.0]}
    st.ranks[1].averaged = {"a": [6.0, 8.0]}
    first = step_memo.rank_norms(st, 1, "local")
    assert first == {"a": 5.0, "b": 1.0} and len(calls) == 2
    assert step_memo.rank_norms(st, 1, "local") is first and len(calls) == 2
    assert step_memo.rank_norms(st, 1, "averaged") == {"a": 10.0}
    assert step_memo.rank_norms(st, 0, "local") == {"w": 0.0}
    assert step_memo.rank_norms(st, 1, "local") is first  # the others did not replace it
    st.ranks[1].local = {"a": [0.0, 2.0]}
    assert step_memo.rank_norms(st, 1, "local") == {"a": 2.0}
    assert step_memo.rank_norms(st, 7, "local") == {}
    st.ranks[2].local = {}
    assert step_memo.rank_norms(st, 2, "local") == {}
    st.ranks[2].local = None
    assert step_memo.rank_norms(st, 2, "local") == {}
