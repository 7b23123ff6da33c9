"""When each rank reached the all-reduce and who the others waited for (model/arrivals.py,
pure): steps built here by hand, three or four ranks whose times differ, the odd one last, a
rank's later buckets and a bucket not launched yet among them."""

from __future__ import annotations

import pytest

from ddp_viz.model.arrivals import arrivals, last_to_arrive
from ddp_viz.model.timeline import StepRecord


def step(launches: dict[int, list[float | None]]) -> StepRecord:
    """A step whose rank ``r`` launched its buckets at ``launches[r]`` (None: not launched)."""
    st = StepRecord(step=0)
    for r, times in launches.items():
        st.rank(r).bucket_spans = [{"index": i, "launched": t} for i, t in enumerate(times)]
    return st


def test_a_rank_arrives_when_its_first_bucket_is_launched_not_its_first_listed() -> None:
    # bucket 0 is listed first but launched last on each rank: the earliest launch counts
    st = step({0: [1.30, 1.10, 1.20], 1: [2.5, 2.25], 2: [None, 3.75, 3.5]})
    assert arrivals(st) == {0: 1.10, 1: 2.25, 2: 3.5}


def test_a_rank_with_no_bucket_launched_has_not_arrived() -> None:
    st = step({0: [0.5], 1: [None, None], 2: []})
    st.rank(3).bucket_spans = [{"index": 0}]  # no launch time recorded at all
    assert arrivals(st) == {0: 0.5}
    assert last_to_arrive(st, 4) is None  # one rank: nobody waited for anybody yet
    assert last_to_arrive(step({0: [0.5]}), 1) is None  # a world of one waits for nobody


def test_a_launch_at_time_zero_counts() -> None:
    st = step({0: [0.0], 1: [0.25]})
    assert arrivals(st) == {0: 0.0, 1: 0.25}
    assert last_to_arrive(st, 2) == (1, 0.25)


@pytest.mark.parametrize(
    ("launches", "last", "waited"),
    [
        # the last rank last: everyone waited 0.75 s for rank 3
        ({0: [1.0], 1: [1.25], 2: [1.5], 3: [1.75, 1.8]}, 3, 0.75),
        # the slowest in the middle, the first rank not the earliest
        ({0: [2.0], 1: [3.5], 2: [1.0]}, 1, 2.5),
        # the earliest is the last rank: the wait is measured from it, not from rank 0
        ({0: [5.0], 1: [4.0], 2: [2.0]}, 0, 3.0),
    ],
)
def test_the_last_to_arrive_and_how_long_the_first_waited(launches, last, waited) -> None:
    got = last_to_arrive(step(launches), len(launches))
    assert got is not None
    assert got[0] == last and got[1] == pytest.approx(waited, abs=1e-12)


def test_ranks_that_arrive_together_last_name_the_higher_rank() -> None:
    st = step({0: [1.0], 1: [3.0], 2: [3.0], 3: [2.0]})
    assert last_to_arrive(st, 4) == (2, 2.0)


def test_mid_stream_nobody_is_last_until_every_rank_has_arrived() -> None:
    """Asked while the step streams in: with rank 2 not there yet the others are waiting for
    it, so rank 1 is not "the last" (a crashed rank never comes: its neighbour was counted a
    straggler for it); once rank 2's launch arrives it is the last."""
    st = step({0: [1.0], 1: [1.5], 2: [None]})
    assert last_to_arrive(st, 3) is None
    assert last_to_arrive(st, 2) == (1, 0.5)  # a world of two: both have arrived
    st.rank(2).bucket_spans = [{"index": 0, "launched": 2.25}]
    assert last_to_arrive(st, 3) == (2, 1.25)
