"""Seeded-bug probe: a tensor travels as a flat list up to 64 values and as a summary above
(model.tensors: "a flat list of floats up to 64 values"): the boundary, both sides, at float32
and float64."""

from __future__ import annotations

import pytest
import torch

from ddp_viz.engine.tensors import encode_all


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sixty_four_values_go_as_a_list_and_sixty_five_as_a_summary(dtype) -> None:
    small = torch.arange(64, dtype=dtype) / 8
    big = torch.arange(65, dtype=dtype) / 8
    out = encode_all({"small": small, "big": big})
    assert out["small"] == [i / 8 for i in range(64)]
    assert isinstance(out["big"], dict)
    assert out["big"]["shape"] == [65]
    assert out["big"]["sample"] == [i / 8 for i in range(8)]
