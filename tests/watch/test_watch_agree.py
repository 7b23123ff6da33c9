"""Whether a watched step's averaged gradients are the same on every rank (pure: fake events,
no torch): values compared one by one and summaries by their digest, three ranks with the odd
one last, a NaN equal to a NaN only at the same place, a tensor one rank lacks, a summary
against a list, and an infinity or a NaN anywhere in any rank's average."""

from __future__ import annotations

import math

from ddp_viz.kinds.watched.agree import averages_identical, non_finite_average, same_values
from ddp_viz.model import protocol
from ddp_viz.model.timeline import RunRecord, StepRecord


def step(*by_rank: dict | None) -> StepRecord:
    """One step whose ranks averaged these (None: that rank sent its local gradient only)."""
    rec = RunRecord()
    rec.apply(protocol.RunStarted(1, len(by_rank), 0, {"watched": True}, params=[]))
    for r, avg in enumerate(by_rank):
        rec.apply(protocol.LocalGrad(1, 0, r, 0.5, {"w": [1.0, 2.0]}))
        if avg is not None:
            rec.apply(protocol.AveragedGrad(1, 0, r, avg))
    return rec.steps[0]


def summary(digest: str | None, norm: float = 2.5) -> dict:
    s = {"norm": norm, "numel": 4096, "sample": [0.5, -0.25]}
    return s if digest is None else {**s, "digest": digest}


def test_values_equal_on_every_rank_are_identical_and_one_rank_off_is_not() -> None:
    same = {"w": [0.5, -1.25, 3.0], "b": [0.125]}
    assert averages_identical(step(same, same, same)) is True
    # rank 2 (last) one value off, in the last tensor's last place
    off = {"w": [0.5, -1.25, 3.0000000000000004], "b": [0.125]}
    assert averages_identical(step(same, same, off)) is False
    off = {"w": [0.5, -1.25, 3.0], "b": [0.1250001]}
    assert averages_identical(step(same, same, off)) is False
    # one rank's average not in yet: not known
    assert averages_identical(step(same, same, None)) is None
    assert averages_identical(StepRecord(0)) is None


def test_a_tensor_one_rank_lacks_or_adds_is_a_difference() -> None:
    same = {"w": [0.5], "b": [0.125]}
    assert averages_identical(step(same, same, {"w": [0.5]})) is False
    assert averages_identical(step(same, same, {**same, "extra": [0.0]})) is False


def test_summaries_agree_by_their_digest_only() -> None:
    a = {"w": summary("9f3a"), "b": [0.125]}
    assert averages_identical(step(a, a, a)) is True
    # the same norm and sample, another digest on rank 2: the bytes differ
    other = {"w": summary("77c1"), "b": [0.125]}
    assert averages_identical(step(a, a, other)) is False
    # equal digests, a list that differs beside them
    assert averages_identical(step(a, a, {"w": summary("9f3a"), "b": [0.5]})) is False
    # beside a NaN (another object on each rank: the dicts are not equal as they stand) the
    # summaries are compared one by one, and agree by their digest
    with_nan = [{"w": summary("9f3a"), "b": [float("nan")]} for _ in range(3)]
    assert with_nan[0] != with_nan[2]
    assert averages_identical(step(*with_nan)) is True
    with_nan[2]["w"] = summary("77c1")
    assert averages_identical(step(*with_nan)) is False
    # no digest (an older recording): equal as far as one can see is no proof
    bare = {"w": summary(None), "b": [0.125]}
    assert averages_identical(step(bare, bare, bare)) is False
    # rank 2's summary lacks the digest the others have
    assert averages_identical(step(a, a, bare)) is False


def test_a_summary_against_a_list_is_a_difference_either_way() -> None:
    listed = {"w": [0.5, -0.25]}
    summed = {"w": summary("9f3a")}
    assert averages_identical(step(summed, summed, listed)) is False
    assert averages_identical(step(listed, listed, summed)) is False


def test_the_answer_is_kept_for_the_step_once_asked() -> None:
    same = {"w": [0.5]}
    st = step(same, same, same)
    assert averages_identical(st) is True
    assert averages_identical(st) is True  # asked again on the next frame


def nan() -> float:
    """A NaN of its own: each event's NaN is another object, and a list holding the same
    NaN object compares equal to itself without a look at the values."""
    return float("nan")


def test_nan_equals_nan_only_at_the_same_place() -> None:
    assert same_values([], [])
    assert same_values([1.0, nan(), 3.0], [1.0, nan(), 3.0])
    assert not same_values([1.0, nan(), 3.0], [1.0, 3.0, nan()])
    assert not same_values([1.0, nan()], [1.0, 2.0])
    assert not same_values([nan(), 1.0], [nan(), 1.0, 2.0])  # one value more
    assert not same_values([nan()], [nan(), nan()])
    assert not same_values([1.0, 2.0], [1.0])
    avg = {"w": [nan(), 1.0]}
    assert averages_identical(step(avg, avg, {"w": [nan(), 1.0]})) is True
    assert averages_identical(step(avg, avg, {"w": [1.0, nan()]})) is False


def test_an_infinity_or_a_nan_in_any_ranks_average_is_not_finite() -> None:
    fine = {"w": [0.5, -1.0], "b": [2.0]}
    assert not non_finite_average(step(fine, fine, fine))
    assert non_finite_average(step(fine, fine, {"w": [0.5, -1.0], "b": [math.inf]}))
    assert non_finite_average(step(fine, fine, {"w": [0.5, -math.inf], "b": [2.0]}))
    assert non_finite_average(step(fine, fine, {"w": [math.nan, 1.0], "b": [2.0]}))
    # summaries by their norm; one without a norm is no infinity
    assert non_finite_average(step(fine, fine, {"w": summary("a", math.inf), "b": [2.0]}))
    assert non_finite_average(step(fine, fine, {"w": summary("a", math.nan), "b": [2.0]}))
    assert not non_finite_average(step(fine, fine, {"w": summary("a", 1e30), "b": [2.0]}))
    assert not non_finite_average(step(fine, fine, {"w": {"digest": "a"}, "b": [2.0]}))
    # a rank whose average is not in yet holds nothing
    assert not non_finite_average(step(fine, fine, None))
