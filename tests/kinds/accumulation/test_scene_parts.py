"""The accumulation scene's small parts (pure): DDP's float32 tensors against a float64
reference (✓ within the tolerance, ✗ just past it, by value for lists and by norm and absmax
for summaries), and which micro-batch columns a narrow stage draws."""

from __future__ import annotations

import math

import pytest

from ddp_viz.kinds.accumulation.scene_parts import close_in_value, visible_micro


def summary(norm: float, absmax: float) -> dict:
    return {"shape": [3], "norm": norm, "absmax": absmax, "digest": "abcd"}


def test_lists_are_the_same_within_the_tolerance_value_by_value() -> None:
    ddp = {"weight": [1.0, -2.0, 300.0], "bias": [0.5]}
    assert close_in_value(ddp, {"weight": [1.0, -2.0, 300.0], "bias": [0.5]})
    # 300 × 1e-5 = 3e-3 of room on the large value, 1e-5 on the small ones
    assert close_in_value(ddp, {"weight": [1.0, -2.0, 300.0029], "bias": [0.5]})
    assert not close_in_value(ddp, {"weight": [1.0, -2.0, 300.0031], "bias": [0.5]})
    assert close_in_value(ddp, {"weight": [1.0, -2.0, 300.0], "bias": [0.500009]})
    assert not close_in_value(ddp, {"weight": [1.0, -2.0, 300.0], "bias": [0.500011]})
    # the last tensor and the last value count too
    assert not close_in_value(ddp, {"weight": [1.0, -2.0, 300.0], "bias": [0.6]})
    assert not close_in_value(ddp, {"weight": [1.0, -2.00003, 300.0], "bias": [0.5]})
    assert close_in_value({"b": [0.5]}, {"b": [0.5001]}, rel=1e-3)
    assert not close_in_value({"b": [0.5]}, {"b": [0.5001]})


def test_other_names_or_lengths_are_never_the_same() -> None:
    assert not close_in_value({"weight": [1.0]}, {"weight": [1.0], "bias": [0.0]})
    assert not close_in_value({"weight": [1.0], "bias": [0.0]}, {"weight": [1.0]})
    assert not close_in_value({"weight": [1.0, 2.0]}, {"weight": [1.0]})
    assert not close_in_value({"weight": [0.0]}, {"weight": [0.0, 0.0]})
    assert close_in_value({}, {})


def test_a_non_finite_value_is_never_the_same() -> None:
    assert not close_in_value({"w": [math.nan]}, {"w": [math.nan]})
    assert not close_in_value({"w": [math.inf]}, {"w": [math.inf]})


def test_summaries_compare_by_norm_and_absmax() -> None:
    a = {"w": summary(10.0, 4.0)}
    assert close_in_value(a, {"w": {**summary(10.00009, 4.0), "digest": "other"}})
    assert not close_in_value(a, {"w": summary(10.00011, 4.0)})
    assert not close_in_value(a, {"w": summary(10.0, 4.0001)})
    assert close_in_value(a, {"w": summary(10.0, 4.00003)})
    # a summary without its absmax reads 0 on both sides
    assert close_in_value({"w": {"norm": 2.0}}, {"w": {"norm": 2.0}})
    assert not close_in_value({"w": {"norm": 2.0}}, {"w": {"norm": 2.0, "absmax": 1.0}})


def test_a_summary_against_a_list_compares_their_norms() -> None:
    values = [3.0, 4.0]  # norm 5
    assert close_in_value({"w": summary(5.0, 99.0)}, {"w": values})
    assert close_in_value({"w": values}, {"w": summary(5.00004, 99.0)})
    assert not close_in_value({"w": values}, {"w": summary(5.0001, 4.0)})


@pytest.mark.parametrize(
    ("k", "fit", "columns"),
    [
        (1, 3, [0]),
        (4, 4, [0, 1, 2, 3]),
        (5, 4, [0, 1, None, 4]),
        (6, 3, [0, None, 5]),
        (9, 2, [0, None, 8]),
        (12, 7, [0, 1, 2, 3, 4, None, 11]),
    ],
)
def test_a_narrow_stage_draws_the_first_micro_batches_a_gap_and_the_last(k, fit, columns) -> None:
    assert visible_micro(k, fit) == columns
