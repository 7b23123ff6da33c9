"""Bucket overlap measured from recorded timings (pure)."""

from __future__ import annotations

import pytest

from ddp_viz.model.overlap import layouts, overlap, ready_order
from ddp_viz.model.timeline import RankStep, record
from tests.conftest import load_recording


def step(ready, buckets, backward=(0.0, 10.0)) -> RankStep:
    return RankStep(
        spans={"backward": [list(backward)]},
        ready=[[n, t] for n, t in ready],
        bucket_spans=[
            {"index": i, "params": p, "bytes": 4, "launched": a, "finished": b}
            for i, (p, a, b) in enumerate(buckets)
        ],
    )


def test_the_hidden_part_is_what_ran_before_the_last_gradient() -> None:
    rs = step(
        ready=[("2.b", 1.0), ("2.w", 2.0), ("0.b", 6.0), ("0.w", 7.0)],
        buckets=[(["2.b", "2.w"], 2.0, 5.0), (["0.b", "0.w"], 7.0, 9.0)],
    )
    o = overlap(rs)
    assert o.last_ready == 7.0 and o.allreduce_s == 5.0
    assert o.hidden_s == 3.0 and o.fraction == pytest.approx(0.6)
    assert ready_order(rs) == ["2.b", "2.w", "0.b", "0.w"]


def test_one_bucket_after_backward_hides_nothing() -> None:
    rs = step(ready=[("w", 1.0), ("b", 2.0)], buckets=[(["b", "w"], 2.0, 4.0)])
    assert overlap(rs).fraction == 0.0
    assert overlap(RankStep()) is None


def test_a_real_run_rebuilds_its_buckets_and_overlaps() -> None:
    rec = record(load_recording("mlp-buckets-2-ranks.jsonl"))
    per_step = layouts(rec)
    assert per_step[0] != per_step[1] and len(per_step[1]) >= 3
    fractions = [overlap(st.ranks[0]).fraction for st in rec.steps[1:]]
    assert max(fractions) > 0
