"""Seeded-bug survivor: the capture's reused copy buffers follow the dtype of what they copy.
A buffer is reused by the order the hook runs in, step after step; a bucket of another dtype
with the same shape in that place (a model with float32 and float64 parameters, its buckets
rebuilt in another order after the first step) must not be copied into the old float32
buffer, which rounds it. In this process: a stand-in bucket and a one-rank all-reduce."""

from __future__ import annotations

import pytest
import torch

from ddp_viz.engine import capture as capture_module
from ddp_viz.engine.capture import Capture, _hook
from tests.engine.hook_standins import Bucket, Group, Work


def _param(dtype: torch.dtype, grad: list[float]) -> torch.Tensor:
    p = torch.zeros(len(grad), dtype=dtype, requires_grad=True)
    p.grad = torch.tensor(grad, dtype=dtype)
    return p


def test_a_float64_bucket_after_a_float32_one_in_the_same_place_keeps_its_digits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        capture_module.dist, "all_reduce", lambda buffer, group=None, async_op=False: Work(buffer)
    )
    narrow = _param(torch.float32, [1.0, 2.0, 3.0])
    wide = _param(torch.float64, [1 + 1e-12, 2 - 1e-12, 1 / 3])
    cap = Capture(names={id(narrow): "a.weight", id(wide): "b.weight"}, process_group=Group(1))
    _hook(cap, Bucket(0, [narrow])).wait()
    assert cap.local["a.weight"].dtype == torch.float32
    cap.reset()  # the next step: the float64 bucket runs first, in the float32 one's place
    _hook(cap, Bucket(1, [wide])).wait()
    for got in (cap.local["b.weight"], cap.averaged["b.weight"]):
        assert got.dtype == torch.float64
        assert got.tolist() == [1 + 1e-12, 2 - 1e-12, 1 / 3]
