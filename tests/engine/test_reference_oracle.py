"""The reference's own event and bookkeeping, against sums worked out here by hand (torch in this
process, float64; no process group, no ranks).

A Linear(1, 1) ``y = w·x + b`` under a mean-squared loss over rows R has the gradient
``dL/dw = 2/|R|·Σ(w·x + b − y)·x`` and ``dL/db = 2/|R|·Σ(w·x + b − y)``; under a summed loss the
same without the ``1/|R|``. Three ranks with shards of different sizes, the odd one last, so a
reference that averaged per rank instead of per row, or counted one shard twice, differs."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from ddp_viz.engine.reference import Oracle, loss_and_grads
from ddp_viz.model.scenario import Scenario
from ddp_viz.model.tensors import tensor_sample

XS = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0)
YS = (3.0, 5.5, 6.0, 9.5, 10.0, 13.0, 16.0)
# rank 0 two rows, rank 1 two rows, rank 2 three: (epoch, rows) per micro-batch
BATCHES = [[(0, [0, 1])], [(0, [2, 3])], [(0, [4, 5, 6])]]


def _model(w: float, b: float) -> nn.Linear:
    m = nn.Linear(1, 1)
    with torch.no_grad():
        m.weight.fill_(w)
        m.bias.fill_(b)
    return m


def _by_hand(w: float, b: float, rows: list[int], mean: bool = True) -> tuple[float, float, float]:
    """(loss, dL/dw, dL/db) over ``rows``."""
    residuals = [(w * XS[i] + b - YS[i], XS[i]) for i in rows]
    k = 1.0 / len(rows) if mean else 1.0
    loss = k * sum(r * r for r, _ in residuals)
    return loss, k * sum(2 * r * x for r, x in residuals), k * sum(2 * r for r, _ in residuals)


def _oracle(w: float = 0.5, b: float = -0.25) -> tuple[Oracle, nn.Linear]:
    module = _model(w, b)
    return Oracle(Scenario(x=XS, y=YS, world_size=3), module), module


def test_the_event_names_its_run_and_step_and_counts_each_ranks_rows() -> None:
    oracle, _ = _oracle()
    event, _ = oracle.step(4, 17, BATCHES)
    assert (event.run, event.step) == (4, 17)
    assert event.shard_sizes == [2, 2, 3]


def test_the_full_batch_loss_and_gradient_are_over_every_row_once() -> None:
    oracle, _ = _oracle(0.5, -0.25)
    event, full = oracle.step(1, 0, BATCHES)
    loss, dw, db = _by_hand(0.5, -0.25, list(range(7)))
    assert event.full_batch_loss == pytest.approx(loss, rel=1e-12)
    assert tensor_sample(event.full_batch_grads["weight"]) == pytest.approx([dw], rel=1e-12)
    assert tensor_sample(event.full_batch_grads["bias"]) == pytest.approx([db], rel=1e-12)
    assert full["weight"].dtype == torch.float64
    assert full["weight"].flatten().tolist() == pytest.approx([dw], rel=1e-12)


def test_the_hand_made_average_averages_the_ranks_not_the_rows() -> None:
    oracle, _ = _oracle(0.5, -0.25)
    event, _ = oracle.step(1, 0, BATCHES)
    per_rank = [_by_hand(0.5, -0.25, rows) for ((_, rows),) in BATCHES]
    dw = sum(g[1] for g in per_rank) / 3
    db = sum(g[2] for g in per_rank) / 3
    assert tensor_sample(event.manual_average["weight"]) == pytest.approx([dw], rel=1e-12)
    assert tensor_sample(event.manual_average["bias"]) == pytest.approx([db], rel=1e-12)
    # with shards of 2, 2 and 3 rows the two differ: the test can tell them apart
    assert dw != pytest.approx(_by_hand(0.5, -0.25, list(range(7)))[1], rel=1e-6)


def test_each_step_starts_from_the_parameters_the_ranks_hold_now() -> None:
    oracle, module = _oracle(0.5, -0.25)
    oracle.step(1, 0, BATCHES)
    with torch.no_grad():  # the ranks' optimizer stepped
        module.weight.fill_(1.75)
        module.bias.fill_(0.5)
    event, _ = oracle.step(1, 1, BATCHES)
    loss, dw, _ = _by_hand(1.75, 0.5, list(range(7)))
    assert event.full_batch_loss == pytest.approx(loss, rel=1e-12)
    assert tensor_sample(event.full_batch_grads["weight"]) == pytest.approx([dw], rel=1e-12)


def test_the_start_keeps_the_first_parameters_and_the_ranks_model_stays_float32() -> None:
    oracle, module = _oracle(0.5, -0.25)
    assert module.weight.dtype == torch.float32  # the copy went to float64, not the module
    with torch.no_grad():
        module.weight.fill_(3.0)
    oracle.step(1, 0, BATCHES)  # copies 3.0 into the oracle's model
    assert oracle.model.weight.item() == 3.0
    assert oracle.start.weight.item() == 0.5  # the run's start, for a rerun in one process
    assert oracle.start.weight.dtype == torch.float64


def test_a_source_with_other_parameters_is_refused_not_truncated() -> None:
    oracle, _ = _oracle()
    oracle.source = nn.Sequential(nn.Linear(1, 1), nn.Linear(1, 1))
    with pytest.raises(ValueError):
        oracle.step(1, 0, BATCHES)


@pytest.mark.parametrize("mean", [True, False])
def test_loss_and_grads_follows_the_loss_reduction(mean: bool) -> None:
    model = _model(0.5, -0.25).double()
    rows = [0, 2, 6]
    x = torch.tensor([[XS[i]] for i in rows], dtype=torch.float64)
    y = torch.tensor([[YS[i]] for i in rows], dtype=torch.float64)
    loss, grads = loss_and_grads(model, x, y, "mean" if mean else "sum")
    want = _by_hand(0.5, -0.25, rows, mean=mean)
    assert loss == pytest.approx(want[0], rel=1e-12)
    assert grads["weight"].flatten().tolist() == pytest.approx([want[1]], rel=1e-12)
    # called again, the gradient is this call's alone, not added to the last
    _, again = loss_and_grads(model, x, y, "mean" if mean else "sum")
    assert again["bias"].flatten().tolist() == pytest.approx([want[2]], rel=1e-12)
