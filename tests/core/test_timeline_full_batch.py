"""Does DDP's average equal the full-batch gradient, for small tensors (every value compared
here) and big ones (summaries: the ranks' digests must match and rank 0's reported largest
difference must be within 1e-5 of the tensor's scale)? Three ranks, the odd one last, each
tolerance met just inside and just past (model/timeline.py, pure)."""

from __future__ import annotations

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.timeline import StepRecord


def small_step(avgs: list[dict], full: dict) -> StepRecord:
    st = StepRecord(step=0)
    for r, g in enumerate(avgs):
        st.rank(r).averaged = g
    st.reference = protocol.Reference(run=1, step=0, full_batch_grads=full, manual_average=full)
    return st


FULL = {"w": [2.0, -4.0], "b": [0.5]}


def test_every_ranks_average_is_checked_not_the_first_only() -> None:
    same = [dict(FULL), dict(FULL), dict(FULL)]
    assert small_step(same, FULL).average_is_full_batch() is True
    off = [dict(FULL), dict(FULL), {"w": [2.0, -4.001], "b": [0.5]}]
    assert small_step(off, FULL).average_is_full_batch() is False
    off_b = [dict(FULL), dict(FULL), {"w": [2.0, -4.0], "b": [0.6]}]
    assert small_step(off_b, FULL).average_is_full_batch() is False


def test_an_average_with_other_names_than_the_reference_is_not_it() -> None:
    fewer = [dict(FULL), dict(FULL), {"w": [2.0, -4.0]}]
    assert small_step(fewer, FULL).average_is_full_batch() is False


def test_no_verdict_without_a_reference_or_an_average() -> None:
    st = small_step([dict(FULL)] * 3, FULL)
    st.reference = None
    assert st.average_is_full_batch() is None
    assert small_step([], FULL).average_is_full_batch() is None
    partial = small_step([dict(FULL), dict(FULL)], FULL)
    partial.rank(2)  # the last rank has not sent its average yet: the others are judged
    assert partial.average_is_full_batch() is True


def summary(digest: str, absmax: float = 200.0) -> dict:
    return {"shape": [100], "norm": 50.0, "absmax": absmax, "sample": [1.0], "digest": digest}


def big_step(digests: list[str], reported: dict | None, absmax: float = 200.0) -> StepRecord:
    """Three ranks' averages of a 100-value tensor as summaries, and the reference's; rank 1
    (not rank 0: whichever rank reported) says the largest difference it found."""
    st = StepRecord(step=0)
    for r, d in enumerate(digests):
        st.rank(r).averaged = {"w": summary(d, absmax)}
    if reported is not None:
        st.rank(1).vs_full_batch = reported
    full = {"w": summary("reference", absmax)}
    st.reference = protocol.Reference(run=1, step=0, full_batch_grads=full, manual_average=full)
    return st


@pytest.mark.parametrize(
    ("diff", "same"),
    [(0.0, True), (1.9e-3, True), (2e-3, True), (2.1e-3, False), (0.5, False)],
)
def test_a_big_average_is_within_1e_5_of_its_largest_value(diff, same) -> None:
    """absmax 200: the tolerance is 1e-5 × 200 = 2e-3, on each side."""
    assert big_step(["a", "a", "a"], {"w": diff}).average_is_full_batch() is same


@pytest.mark.parametrize(("absmax", "diff", "same"), [(0.5, 9e-6, True), (0.5, 2e-5, False)])
def test_a_big_tensor_of_small_values_is_held_to_1e_5_itself(absmax, diff, same) -> None:
    assert big_step(["a", "a", "a"], {"w": diff}, absmax).average_is_full_batch() is same


def test_a_big_tensor_of_negative_values_takes_the_size_of_its_largest() -> None:
    assert big_step(["a", "a", "a"], {"w": 1e-3}, -200.0).average_is_full_batch() is True


def test_a_big_average_unlike_on_the_last_rank_is_not_the_full_batch() -> None:
    assert big_step(["a", "a", "b"], {"w": 0.0}).average_is_full_batch() is False


def test_a_big_average_with_no_reported_difference_is_not_judged_true() -> None:
    assert big_step(["a", "a", "a"], None).average_is_full_batch() is False
    assert big_step(["a", "a", "a"], {"other": 0.0}).average_is_full_batch() is False


def test_a_big_reference_without_its_largest_value_is_held_to_1e_5() -> None:
    st = big_step(["a", "a", "a"], {"w": 5e-6})
    del st.reference.full_batch_grads["w"]["absmax"]
    assert st.average_is_full_batch() is True
    st.rank(1).vs_full_batch = {"w": 2e-5}
    assert st.average_is_full_batch() is False
