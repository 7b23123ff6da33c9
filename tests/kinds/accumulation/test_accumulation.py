"""Gradient accumulation with ``no_sync`` on real gloo ranks: the all-reduces DDP's comm hook
counts in each placement, the rows every micro-batch came from, ``.grad`` as a running sum,
and the parameters after the run against single-process computations."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from ddp_viz.engine.models import build_model
from ddp_viz.kinds.accumulation.counts import allreduces
from ddp_viz.kinds.accumulation.record import micro_of
from ddp_viz.model.scenario import Scenario
from ddp_viz.model.timeline import RunStatus, record
from tests.kinds.data_split.test_data_sampler import sampler_batches

pytestmark = pytest.mark.gloo

X = [float(i) for i in range(1, 13)]  # 12 rows


def scenario(world_size: int, **train) -> Scenario:
    return Scenario.from_mapping(
        {
            "x": X,
            "y": [2 * v + 1 for v in X],
            "world_size": world_size,
            "lr": 0.002,
            "model": {"dtype": "float64"},
            "data": {"sampler": "distributed", "batch_size": 2, "epochs": 2, "seed": 1},
            "train": {"accumulate": 2, "no_sync": "forward_and_backward", **train},
        }
    )


def grad_of(model: nn.Module, s: Scenario, rows: list[int]) -> dict[str, torch.Tensor]:
    m = copy.deepcopy(model)
    x = torch.tensor([s.x[i] for i in rows], dtype=torch.float64).unsqueeze(1)
    y = torch.tensor([s.y[i] for i in rows], dtype=torch.float64).unsqueeze(1)
    nn.functional.mse_loss(m(x), y).backward()
    return {n: p.grad for n, p in m.named_parameters()}


def what_ddp_should_do(s: Scenario, steps: list[list[list[list[int]]]]) -> dict:
    """One process, by hand: per step, every rank's micro-batch gradients scaled and added up
    (as .grad does), averaged over the ranks (as the all-reduce does), one SGD step."""
    model = build_model(s).double()  # float64: sharper than the ranks it checks
    scale = s.train.loss_scale
    for per_rank in steps:
        sums = [
            {
                n: scale * sum(g[n] for g in (grad_of(model, s, rows) for rows in micro))
                for n in dict(model.named_parameters())
            }
            for micro in per_rank
        ]
        with torch.no_grad():
            for n, p in model.named_parameters():
                p -= s.lr * sum(g[n] for g in sums) / len(sums)
    return dict(model.named_parameters())


def one_process_large_batch(s: Scenario, steps: list[list[list[list[int]]]]) -> dict:
    """One process, one batch per step: every row the step's micro-batches held, mean loss."""
    model = build_model(s).double()  # float64: sharper than the ranks it checks
    for per_rank in steps:
        rows = [i for micro in per_rank for batch in micro for i in batch]
        g = grad_of(model, s, rows)
        with torch.no_grad():
            for n, p in model.named_parameters():
                p -= s.lr * g[n]
    return dict(model.named_parameters())


def planned(s: Scenario) -> list[list[list[list[int]]]]:
    """steps -> ranks -> micro-batches -> rows, from DistributedSampler in this process."""
    k, world = s.train.accumulate, s.world_size
    batches = {r: [rows for _, rows in sampler_batches(s, r)] for r in range(world)}
    return [
        [batches[r][step * k : (step + 1) * k] for r in range(world)] for step in range(s.steps)
    ]


FLAGS = {  # (at forward, at backward) for a micro-batch that is not the step's last
    "none": (True, True),
    "forward_and_backward": (False, False),
    "backward_only": (True, False),
}


def close_to(got: dict, want: dict) -> None:
    for n, p in want.items():
        assert got[n] == pytest.approx(p.detach().flatten().tolist(), abs=1e-6), n


@pytest.mark.parametrize(
    ("world_size", "placement", "counts"),
    [
        (2, "none", [1, 1]),
        (2, "forward_and_backward", [0, 1]),
        (2, "backward_only", [1, 1]),
        (3, "forward_and_backward", [0, 1]),
        (3, "backward_only", [1, 1]),
    ],
)
def test_the_hook_counts_the_all_reduces_each_placement_really_makes(
    engine, world_size, placement, counts
) -> None:
    s = scenario(world_size, no_sync=placement)
    rec = record(engine.run(s))
    assert rec.status is RunStatus.FINISHED, rec.reason
    plan = planned(s)
    assert len(rec.steps) == s.steps == len(plan)
    for st in rec.steps:
        for r in st.ranks:
            micro = micro_of(rec, st.step, r)
            # per micro-batch, the buckets the hook ran for (one bucket: nn.Linear's two values)
            assert [len(m.allreduced) for m in micro] == counts, (st.step, r)
            # DDP's flag as each forward and backward began: no_sync() really ran where
            # the placement puts it (False inside the block), and nowhere else
            assert [(m.sync_at_forward, m.sync_at_backward) for m in micro] == [
                FLAGS[placement],
                (True, True),
            ]
            assert allreduces(micro) == sum(counts)
            assert [m.rows for m in micro] == plan[st.step][r]
    close_to(rec.steps[-1].ranks[world_size - 1].params, what_ddp_should_do(s, plan))
    # with the 1/k scale and equal micro-batches: one process on the large batch, which rank 0
    # also ran beside the ranks and reported
    solo = one_process_large_batch(s, plan)
    close_to(rec.steps[-1].ranks[0].params, solo)
    close_to(rec.steps[-1].reference.one_process_params, solo)
    assert all(st.average_is_full_batch() for st in rec.steps)


def test_grad_is_a_running_sum_and_the_synced_backward_averages_it(engine) -> None:
    s = scenario(2, accumulate=3)  # three batches per epoch: one optimizer step each
    rec = record(engine.run(s))
    st = rec.steps[0]
    model = build_model(s).double()  # float64: sharper than the ranks it checks
    plan = planned(s)[0]
    for r in st.ranks:
        running = {n: torch.zeros_like(p) for n, p in model.named_parameters()}
        for j, m in enumerate(micro_of(rec, 0, r)[:-1]):  # inside no_sync(): this rank's own sum
            for n, g in grad_of(model, s, plan[r][j]).items():
                running[n] += g / 3
            for n in running:
                assert m.grads[n] == pytest.approx(running[n].flatten().tolist(), abs=1e-9)
    # after the synchronised backward every rank holds the same average of the ranks' sums
    last = [micro_of(rec, 0, r)[-1].grads for r in st.ranks]
    assert last[0] == last[1]
    assert last[0] == st.ranks[0].averaged


def test_without_the_1_over_k_scale_the_step_is_k_times_the_large_batch(engine) -> None:
    s = scenario(2, accumulate=2, scale_loss=False)
    rec = record(engine.run(s))
    plan = planned(s)
    close_to(rec.steps[-1].ranks[1].params, what_ddp_should_do(s, plan))
    close_to(rec.steps[-1].reference.one_process_params, one_process_large_batch(s, plan))
    st = rec.steps[0]
    full, avg = st.reference.full_batch_grads, st.ranks[0].averaged
    for n in full:
        assert avg[n][0] == pytest.approx(2 * full[n][0], rel=1e-9)
    assert st.average_is_full_batch() is False


@pytest.mark.parametrize("lesson", ["accumulate-with-no-sync", "who-splits-the-data"])
def test_each_lesson_s_own_run_ends_where_ddp_should(engine, lesson) -> None:
    """The lessons' default scenarios as they ship (float32 ranks): the rows each rank trained
    on are what DistributedSampler yields for it here, and the parameters after the run are a
    single-process computation of DDP's steps to 1e-6."""
    from ddp_viz.model.course import load_lesson

    s = load_lesson(lesson).scenario()
    rec = record(engine.run(s))
    assert rec.status is RunStatus.FINISHED, rec.reason
    plan = planned(s)
    for st in rec.steps:
        for r, rs in st.ranks.items():
            assert rs.rows == [i for micro in plan[st.step][r] for i in micro], (st.step, r)
    for r in range(s.world_size):
        close_to(rec.steps[-1].ranks[r].params, what_ddp_should_do(s, plan))


def test_one_micro_batch_with_no_sync_set_still_reports_its_backward(engine) -> None:
    """accumulate = 1 with a placement: the only micro-batch is the last, so it syncs."""
    rec = record(engine.run(scenario(2, accumulate=1, no_sync="backward_only")))
    assert rec.status is RunStatus.FINISHED, rec.reason
    for st in rec.steps:
        for r in st.ranks:
            assert [len(m.allreduced) for m in micro_of(rec, st.step, r)] == [1]
