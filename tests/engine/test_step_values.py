"""A step's tensors in the events' form (engine/step_values.py), in this process: what a rank
sends as its local gradient, DDP's average and the parameters, rank 0's largest difference
from the full batch, and whether the run diverged (decided on what every rank holds alike).

The capture is filled as the hook would fill it, by hand; expected values are written out
here, never read back from the code under test.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from ddp_viz.engine.capture import Capture
from ddp_viz.engine.step_values import StepValues, step_values


def _model() -> nn.Linear:
    model = nn.Linear(2, 1).double()
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[0.25, -0.5]]))
        model.bias.fill_(1.5)
    return model


def _filled(model: nn.Module, local: list[float], averaged: list[float], all_buckets=True):  # type: ignore[no-untyped-def]
    """A capture after one bucket of [weight, bias] went (or, without ``all_buckets``, a
    bucket with the weight alone: the bias's bucket never launched)."""
    params = [model.weight, model.bias] if all_buckets else [model.weight]
    cap = Capture(names={id(p): n for n, p in model.named_parameters()})
    flat = torch.tensor(local, dtype=torch.float64)
    cap._local.append((params, flat))
    cap._averaged.append((params, torch.tensor(averaged, dtype=torch.float64)))
    return cap


def test_the_events_carry_local_average_and_parameters_by_name() -> None:
    model = _model()
    cap = _filled(model, [1.0, 2.0, 3.0], [0.5, -0.25, 4.0])
    v = step_values(model, cap, {})
    assert v.local == {"weight": [1.0, 2.0], "bias": [3.0]}
    assert v.averaged == {"weight": [0.5, -0.25], "bias": [4.0]}
    assert v.params == {"weight": [0.25, -0.5], "bias": [1.5]}
    assert v.vs_full == {} and v.finite


def test_rank_0s_difference_from_the_full_batch_is_the_largest_absolute_one() -> None:
    model = _model()
    cap = _filled(model, [0.0, 0.0, 0.0], [0.5, -0.25, 4.0])
    full = {
        "weight": torch.tensor([[0.75, -0.5]], dtype=torch.float64),  # off by -0.25, +0.25
        "bias": torch.tensor([3.5], dtype=torch.float64),  # off by +0.5
        "extra": torch.tensor([9.0], dtype=torch.float64),  # DDP averaged no such tensor
    }
    v = step_values(model, cap, full)
    assert v.vs_full == {"weight": pytest.approx(0.25), "bias": pytest.approx(0.5)}


def test_a_negative_difference_counts_by_its_size() -> None:
    model = _model()
    cap = _filled(model, [0.0, 0.0, 0.0], [0.5, -0.25, 4.0])
    full = {"bias": torch.tensor([5.0], dtype=torch.float64)}  # DDP's 4 is 1 under it
    assert step_values(model, cap, full).vs_full == {"bias": pytest.approx(1.0)}


def test_a_float32_average_is_compared_in_float64() -> None:
    model = _model()
    cap = _filled(model, [0.0, 0.0, 0.0], [0.1, 0.0, 0.0])
    cap._averaged[0] = (cap._averaged[0][0], torch.tensor([0.1, 0.0, 0.0]))  # float32
    full = {"weight": torch.tensor([[0.1, 0.0]], dtype=torch.float64)}
    # float32's 0.1 is 1.49e-9 from float64's: seen, not rounded away
    got = step_values(model, cap, full).vs_full["weight"]
    assert got == pytest.approx(abs(float(torch.tensor(0.1)) - 0.1), rel=1e-6) and got > 0


def test_a_bucket_that_never_launched_sends_that_gradient_from_grad() -> None:
    model = _model()
    model.bias.grad = torch.tensor([7.0], dtype=torch.float64)
    model.weight.grad = torch.tensor([[99.0, 99.0]], dtype=torch.float64)  # the copy wins
    cap = _filled(model, [1.0, 2.0], [0.5, -0.25], all_buckets=False)
    v = step_values(model, cap, {})
    assert v.local == {"weight": [1.0, 2.0], "bias": [7.0]}
    assert v.averaged == {"weight": [0.5, -0.25]}


def test_a_parameter_with_no_gradient_at_all_is_left_out() -> None:
    model = _model()
    cap = _filled(model, [1.0, 2.0], [0.5, -0.25], all_buckets=False)
    assert step_values(model, cap, {}).local == {"weight": [1.0, 2.0]}


def test_big_tensors_travel_as_summaries_with_a_digest_only_where_ranks_must_agree() -> None:
    model = nn.Linear(100, 1).double()
    n = 101
    local = [float(i) for i in range(n)]
    cap = Capture(names={id(p): name for name, p in model.named_parameters()})
    params = [model.weight, model.bias]
    cap._local.append((params, torch.tensor(local, dtype=torch.float64)))
    cap._averaged.append((params, torch.tensor(local, dtype=torch.float64) / 2))
    v = step_values(model, cap, {})
    weight_local, weight_avg = v.local["weight"], v.averaged["weight"]
    assert isinstance(weight_local, dict) and "digest" not in weight_local
    assert isinstance(weight_avg, dict) and "digest" in weight_avg
    assert weight_local["norm"] == pytest.approx(math.sqrt(sum(i * i for i in range(100))))
    assert weight_avg["absmax"] == 99 / 2 and v.averaged["bias"] == [50.0]
    assert "digest" in v.params["weight"]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_divergence_is_decided_on_the_average_and_the_parameters_not_the_local_gradient(
    bad: float,
) -> None:
    model = _model()
    # a rank's own gradient alone non-finite: what the ranks hold alike is still finite
    assert step_values(model, _filled(model, [bad, 0.0, 0.0], [0.5, 0.0, 0.0]), {}).finite
    assert not step_values(model, _filled(model, [0.0, 0.0, 0.0], [0.5, bad, 0.0]), {}).finite
    with torch.no_grad():
        model.bias.fill_(bad)
    assert not step_values(model, _filled(model, [0.0, 0.0, 0.0], [0.5, 0.0, 0.0]), {}).finite


@pytest.mark.parametrize("where", ["params", "averaged"])
def test_a_summarys_non_finite_norm_counts_as_divergence(where: str) -> None:
    fine = {"w": [1.0, 2.0], "big": {"norm": 3.0, "absmax": 2.0}}
    bad = {"w": [1.0, 2.0], "big": {"norm": math.inf, "absmax": 2.0}}
    nan = {"w": [1.0, 2.0], "big": {"norm": math.nan, "absmax": 2.0}}
    assert StepValues({}, fine, fine, {}).finite
    for broken in (bad, nan):
        args = {"params": fine, "averaged": fine} | {where: broken}
        assert not StepValues({}, args["averaged"], args["params"], {}).finite
    # a list's last value, not only its first
    args = {"params": fine, "averaged": fine} | {where: {"w": [1.0, math.nan]}}
    assert not StepValues({}, args["averaged"], args["params"], {}).finite
