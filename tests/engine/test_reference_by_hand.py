"""Rank 0's hand-made shard average (the CLI's "shard average by hand") against what DDP really
averaged in recorded runs, with and without accumulation, scaled and unscaled (torch in this
process, float64; no process group, no ranks). The recorded average came from real gloo ranks,
so it is an oracle independent of the code under test; with 3 micro-batches a dropped 1/k scale
is off by 3x, and a 1/k applied to an unscaled run is off by 3x the other way."""

from __future__ import annotations

import pytest
import torch

from ddp_viz.engine.data import rank_batches, take
from ddp_viz.engine.models import build_model
from ddp_viz.engine.reference import Oracle
from ddp_viz.model.scenario import Scenario
from ddp_viz.model.tensors import tensor_sample
from tests.conftest import load_recording


@pytest.mark.parametrize(
    "name",
    [
        "accumulate-3-micro.jsonl",  # scaled by 1/3, no_sync around forward and backward
        "accumulate-unscaled.jsonl",  # scale_loss = false
        "accumulate-4-ranks.jsonl",
        "accumulate-mlp-buckets.jsonl",
        "default-run.jsonl",  # no accumulation at all
    ],
)
def test_the_shard_average_by_hand_is_what_ddp_averaged(name) -> None:
    events = load_recording(name)
    (started,) = [e for e in events if e.kind == "run_started"]
    scenario = Scenario.from_mapping(started.scenario)
    model = build_model(scenario)
    (initial,) = [e for e in events if e.kind == "initial_params" and e.rank == 0]
    with torch.no_grad():  # the parameters the recorded run started from
        for n, p in model.named_parameters():
            if not isinstance(initial.params[n], list):
                continue  # a summary: the model's seed made the same values
            p.copy_(torch.tensor(initial.params[n], dtype=p.dtype).reshape(p.shape))
    oracle = Oracle(scenario, model)
    loaders = [rank_batches(scenario, r) for r in range(scenario.world_size)]
    batches = [take(it, scenario.train.accumulate) for it in loaders]
    ref, _ = oracle.step(1, 0, batches)
    (ddp,) = [e for e in events if e.kind == "averaged_grad" and e.step == 0 and e.rank == 0]
    assert set(ref.manual_average) == set(ddp.grads)
    for n, got in ref.manual_average.items():
        want = tensor_sample(ddp.grads[n])
        mine = tensor_sample(got)
        assert mine == pytest.approx(want, rel=1e-4, abs=1e-5), n
