"""The rows a real DistributedSampler hands each rank, captured in the ranks, and what DDP does
with them: checked against the sampler and against a single-process computation."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler

from ddp_viz.engine.models import build_model
from ddp_viz.model.scenario import Scenario
from ddp_viz.model.timeline import RunStatus, record

pytestmark = pytest.mark.gloo

X = [float(i) for i in range(1, 8)]  # 7 rows: no world size 2 or 3 divides them


def scenario(world_size: int, **data) -> Scenario:
    train = {"loss_reduction": data.pop("loss_reduction", "mean")}
    spec = {"sampler": "distributed", "batch_size": 2, "epochs": 2, "seed": 3, **data}
    return Scenario.from_mapping(
        {
            "x": X,
            "y": [2 * v + 1 for v in X],
            "world_size": world_size,
            "lr": 0.01,
            "model": {"dtype": "float64"},
            "data": spec,
            "train": train,
        }
    )


def sampler_batches(s: Scenario, rank: int) -> list[tuple[int, list[int]]]:
    """What DistributedSampler and a DataLoader yield for ``rank`` in this very process."""
    sampler = DistributedSampler(
        list(range(s.rows)),
        num_replicas=s.world_size,
        rank=rank,
        shuffle=s.data.shuffle,
        seed=s.data.seed,
        drop_last=s.data.drop_last,
    )
    loader = DataLoader(list(range(s.rows)), batch_size=s.data.batch_size, sampler=sampler)
    out = []
    for epoch in range(s.data.epochs):
        if s.data.set_epoch:
            sampler.set_epoch(epoch)
        out += [(epoch, [int(i) for i in b]) for b in loader]
    return out


def what_ddp_should_do(s: Scenario, batches: list[list[list[int]]]) -> dict[str, torch.Tensor]:
    """One process: each rank's gradient on its rows, their plain average, an SGD step."""
    model = build_model(s)
    for per_rank in batches:
        grads = []
        for rows in per_rank:
            m = copy.deepcopy(model)
            x = torch.tensor([s.x[i] for i in rows], dtype=torch.float64).unsqueeze(1)
            y = torch.tensor([s.y[i] for i in rows], dtype=torch.float64).unsqueeze(1)
            nn.functional.mse_loss(m(x), y, reduction=s.train.loss_reduction).backward()
            grads.append({n: p.grad for n, p in m.named_parameters()})
        with torch.no_grad():
            for n, p in model.named_parameters():
                p -= s.lr * sum(g[n] for g in grads) / len(grads)
    return dict(model.named_parameters())


@pytest.mark.parametrize(
    ("world_size", "data"),
    [
        (2, {}),
        (3, {}),
        (2, {"drop_last": True}),
        (3, {"drop_last": True}),
        (2, {"set_epoch": False}),
        (3, {"shuffle": False}),
        (2, {"loss_reduction": "sum"}),
    ],
)
def test_each_rank_trains_on_what_the_sampler_yields_and_ends_where_ddp_should(
    engine, world_size, data
) -> None:
    s = scenario(world_size, **data)
    rec = record(engine.run(s))
    assert rec.status is RunStatus.FINISHED, rec.reason
    expected = {r: sampler_batches(s, r) for r in range(world_size)}
    assert len(rec.steps) == s.steps == len(expected[0])
    for st in rec.steps:
        for r, rs in st.ranks.items():
            assert (rs.epoch, rs.rows) == expected[r][st.step], (st.step, r)
    want = what_ddp_should_do(
        s, [[expected[r][k][1] for r in range(world_size)] for k in range(s.steps)]
    )
    for r in range(world_size):
        got = rec.steps[-1].ranks[r].params
        for n, p in want.items():
            assert got[n] == pytest.approx(p.detach().flatten().tolist(), abs=1e-6), (r, n)


def test_without_set_epoch_every_epoch_repeats_the_first_order(engine) -> None:
    rec = record(engine.run(scenario(2, set_epoch=False, epochs=3)))
    per_epoch = {}
    for st in rec.steps:
        per_epoch.setdefault(st.ranks[0].epoch, []).append(st.ranks[0].rows)
    assert per_epoch[0] == per_epoch[1] == per_epoch[2]
    rec = record(engine.run(scenario(2, set_epoch=True, epochs=3)))
    orders = {}
    for st in rec.steps:
        orders.setdefault(st.ranks[0].epoch, []).append(st.ranks[0].rows)
    assert len({str(v) for v in orders.values()}) > 1  # reshuffled


def test_a_summed_loss_averaged_by_ddp_is_not_the_global_sum(engine) -> None:
    """DDP divides by the world size whatever the loss does: with reduction="sum" the average
    is the global batch's sum-gradient divided by the world size."""
    rec = record(engine.run(scenario(2, loss_reduction="sum")))
    st = rec.steps[0]
    full = st.reference.full_batch_grads  # the sum-loss gradient over both ranks' rows
    avg = st.ranks[0].averaged
    for n in full:
        assert avg[n][0] == pytest.approx(full[n][0] / 2, rel=1e-9)
    assert st.average_is_full_batch() is False
