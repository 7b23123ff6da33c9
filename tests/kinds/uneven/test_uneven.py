"""Uneven inputs on real gloo ranks: without Join the run stalls until the process group's
timeout and ends with gloo's own error, cleanly; with Join it finishes, the finished rank
all-reducing zeros, and its parameters are what a single process computes."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from ddp_viz.engine.models import build_model
from ddp_viz.model.scenario import Scenario, ScenarioError
from ddp_viz.model.timeline import RunStatus, record

X = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


def scenario(join: bool, timeout_s: float = 2.0, **extra) -> Scenario:
    return Scenario.from_mapping(
        {
            "x": X,
            "y": [2 * v + 1 for v in X],
            "world_size": 2,
            "lr": 0.01,
            "model": {"dtype": "float64"},
            "uneven": {"batches": 3, "extra": 1, "join": join, "timeout_s": timeout_s, **extra},
        }
    )


def test_uneven_fields_are_checked_before_anything_runs() -> None:
    for data, field in [
        ({"uneven": {"timeout_s": 0.5}}, "uneven.timeout_s"),
        ({"uneven": {"extra": -1}}, "uneven.extra"),
        ({"uneven": {"join": "maybe"}}, "uneven.join"),
        ({"uneven": {}, "steps": 9}, "steps"),
        ({"uneven": {}, "world_size": 1}, "world_size"),
    ]:
        with pytest.raises(ScenarioError) as err:
            Scenario.from_mapping(data)
        assert err.value.field == field
    assert scenario(True).steps == 4 and scenario(True).table("uneven").steps_of(0, 2) == 3


@pytest.mark.gloo
def test_without_join_the_stall_ends_at_the_timeout_with_gloos_words_and_the_next_run_works(
    engine,
) -> None:
    s = scenario(join=False, timeout_s=2.0)
    rec = record(engine.run(s, timeout=60))
    assert rec.status is RunStatus.FINISHED, rec.reason
    assert rec.parts["uneven"].out_of_data == {0: 3} and rec.complete_prefix() == 3
    assert set(rec.parts["uneven"].stalled) == {0, 1}
    assert (
        rec.parts["uneven"].stalled[0].what == "barrier"
        and rec.parts["uneven"].stalled[1].what == "all-reduce"
    )
    errors = [stall.error for stall in rec.parts["uneven"].stalled.values()]
    # gloo's own words: a timeout, and on the peer either its own timeout or the connection
    # the first one's timeout closed (which fires first is a race inside gloo)
    assert any("Timed out waiting 2000ms" in e for e in errors), errors
    assert all("Timed out waiting 2000ms" in e or "Connection closed by peer" in e for e in errors)
    for stall in rec.parts["uneven"].stalled.values():
        assert "callback" not in stall.error  # not the futures' wrapping around them
        # a rank's own timeout ends its wait after 2 s; the connection its peer's timeout
        # closed can end it sooner, by the time between the two entering their collectives
        # (1.97 s once, on a loaded machine)
        low = 2.0 if "Timed out waiting 2000ms" in stall.error else 1.0
        assert low <= stall.waited_s <= 2.0 + 2.0, (stall.waited_s, stall.error[:80])
    # heartbeats while blocked: rank 1 in its all-reduce, rank 0 in the barrier
    assert (
        rec.parts["uneven"].waiting[1].what == "all-reduce"
        and rec.parts["uneven"].waiting[0].what == "barrier"
    )
    assert rec.parts["uneven"].waiting[1].now - rec.parts["uneven"].waiting[1].since >= 1.0
    again = record(engine.run(scenario(join=True)))  # the same pool, straight after
    assert again.status is RunStatus.FINISHED and not again.parts["uneven"].stalled


@pytest.mark.gloo
def test_with_join_the_finished_rank_all_reduces_zeros_and_the_run_ends_where_it_should(
    engine,
) -> None:
    s = scenario(join=True)
    rec = record(engine.run(s))
    assert rec.status is RunStatus.FINISHED, rec.reason
    assert rec.parts["uneven"].out_of_data == {0: 3, 1: 4} and rec.complete_prefix() == 4
    shadow = rec.parts["uneven"].shadows[(3, 0)]
    assert all(v == [0.0] for v in shadow.grads.values())  # what rank 0 contributed
    # by hand, in one process: blocks of 3 rows; rank 1 alone in step 4, its gradient divided
    # by the initial world size (Join's divide_by_initial_world_size=True, DDP's default hook)
    model = build_model(s).double()
    blocks = s.shards()
    for step in range(4):
        grads = []
        for r in range(2) if step < 3 else [1]:
            m = copy.deepcopy(model)
            x = torch.tensor([s.x[i] for i in blocks[r]], dtype=torch.float64).unsqueeze(1)
            y = torch.tensor([s.y[i] for i in blocks[r]], dtype=torch.float64).unsqueeze(1)
            nn.functional.mse_loss(m(x), y).backward()
            grads.append({n: p.grad for n, p in m.named_parameters()})
        with torch.no_grad():
            for n, p in model.named_parameters():
                p -= s.lr * sum(g[n] for g in grads) / 2
        if step == 3:
            for n in shadow.averaged:
                assert shadow.averaged[n][0] == pytest.approx(float(grads[0][n] / 2), abs=1e-9)
    got = rec.steps[3].ranks[1].params
    for n, p in model.named_parameters():
        assert got[n] == pytest.approx(p.detach().flatten().tolist(), abs=1e-6), n
        # the reference rank 0 reports for the stage is this same computation
        assert rec.parts["uneven"].one_process[n] == pytest.approx(
            p.detach().flatten().tolist(), abs=1e-12
        ), n
    # Join's hook copied the last rank's parameters to rank 0, whose own last step was 3
    assert rec.parts["uneven"].final_params[0] == rec.parts["uneven"].final_params[1] == got
    assert rec.steps[2].ranks[0].params != got


def test_join_shadow_steps_start_at_bucket_zero_and_merge_names() -> None:
    """The capture hands over every bucket in the order the hook ran; the uneven kind groups
    them into the training ranks' steps: bucket 0 starts a step (DDP launches the buckets in
    order), later buckets add their parameters to it."""
    from ddp_viz.kinds.uneven.engine import shadow_steps

    copies = [
        (0, {"b": 0.0}, {"b": 1.5}),
        (1, {"w": 0.0}, {"w": 2.5}),
        (0, {"b": 0.0}, {"b": -1.0}),
        (1, {"w": 0.0}, {}),  # the last all-reduce never came back (a stall)
        (0, {"b": 0.0}, {"b": 3.0}),
    ]
    assert shadow_steps(copies) == [
        ({"b": 0.0, "w": 0.0}, {"b": 1.5, "w": 2.5}),
        ({"b": 0.0, "w": 0.0}, {"b": -1.0}),
        ({"b": 0.0}, {"b": 3.0}),
    ]
    # a run whose first copy is not bucket 0 (a rebuild mid-step) still starts a step
    assert shadow_steps([(1, {"w": 0.0}, {"w": 1.0})]) == [({"w": 0.0}, {"w": 1.0})]
    assert shadow_steps([]) == []
