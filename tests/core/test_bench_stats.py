"""The benchmarks' shared statistics (pure logic): steady per-step time, and the order the
interleaved arms run in."""

from __future__ import annotations

import pytest

from ddp_viz.bench.stats import rotated, steady_per_step


def test_each_round_starts_with_the_next_arm_and_runs_every_arm_once() -> None:
    arms = ["plain", "watched", "gone", "hook"]
    orders = [rotated(arms, i) for i in range(8)]
    assert [o[0] for o in orders] == arms + arms  # every arm goes first as often
    assert all(sorted(o) == sorted(arms) for o in orders)
    assert orders[1] == ["watched", "gone", "hook", "plain"]


def test_steady_per_step_leaves_out_the_first_steps() -> None:
    starts = [0.0, 5.0] + [5.0 + 0.5 * i for i in range(1, 20)]  # a slow first step
    assert steady_per_step(starts) == pytest.approx(0.5)
