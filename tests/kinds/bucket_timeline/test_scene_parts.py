"""The buckets scene's small helpers at their edges: the time axis' round ticks, a bucket's
size as DDP counts it (MiB, not MB), and which bucket colours a gradient's tick."""

from __future__ import annotations

from ddp_viz.kinds.bucket_timeline.scene_parts import NICE_MS, axis_ticks, bucket_of, size_label


def test_ticks_step_by_the_roundest_interval_that_keeps_under_the_count() -> None:
    # 6 ms, at most 6 ticks: 2 ms apart (1 ms would make 7)
    assert axis_ticks(6.0, 6) == [(0.0, "0"), (2.0, "2 ms"), (4.0, "4 ms"), (6.0, "6 ms")]
    # at most 2 ticks: 0 and one interval at most; 1.9 ms takes the 2 ms interval
    assert axis_ticks(1.9, 2) == [(0.0, "0")]
    assert axis_ticks(2.0, 2) == [(0.0, "0"), (2.0, "2 ms")]
    # a count of 1 still allows one interval
    assert axis_ticks(0.05, 1) == [(0.0, "0"), (0.05, "0.05 ms")]


def test_the_last_tick_lands_on_the_span_despite_rounding() -> None:
    # 3 × 0.1 is 0.30000000000000004: the tick at the span's end is still drawn
    assert [label for _, label in axis_ticks(0.3, 4)] == ["0", "0.1 ms", "0.2 ms", "0.3 ms"]
    assert [v for v, _ in axis_ticks(0.2999, 4)] == [0.0, 0.1, 0.2]


def test_a_span_longer_than_every_interval_takes_the_longest() -> None:
    ticks = axis_ticks(12_000, 3)
    assert ticks[1] == (NICE_MS[-1], "5000 ms") and ticks[-1] == (10_000, "10000 ms")
    assert len(ticks) == 3


def test_a_gradient_is_coloured_by_the_bucket_that_holds_it() -> None:
    buckets = [
        {"index": 2, "params": ["0.weight", "0.bias"]},
        {"index": 1},  # no params listed
        {"index": 0, "params": ["2.weight"]},
    ]
    assert bucket_of(buckets, "0.bias") == 2
    assert bucket_of(buckets, "2.weight") == 0
    assert bucket_of(buckets, "9.weight") == 0  # none says so
    assert bucket_of([{"index": 3, "params": ["a"]}], "b") == 0


def test_sizes_switch_units_at_1024() -> None:
    assert size_label(0) == "0 B" and size_label(1023) == "1023 B"
    assert size_label(1024) == "1 KiB" and size_label(1536) == "1.5 KiB"
    assert size_label(1024 * 1024 - 1) == "1.02e+03 KiB"
    assert size_label(1024 * 1024) == "1 MiB" and size_label(3 * 1024 * 1024 // 2) == "1.5 MiB"
