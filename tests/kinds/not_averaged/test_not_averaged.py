"""What DDP does not average, on real gloo ranks: BatchNorm buffers copied from rank 0 at the
start of every forward (or left to drift), the reducer's own error for a parameter with no
gradient and the cost of find_unused_parameters, a checkpoint saved once and loaded by every
rank, and an env:// start with torchrun's variables."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
import torch.distributed as dist

from ddp_viz.engine.launch import torchrun_env
from ddp_viz.kinds.not_averaged.engine import REDUCER_UNFINISHED
from ddp_viz.model.assets import asset
from ddp_viz.model.modelspec import DDPSpec
from ddp_viz.model.scenario import Scenario, ScenarioError
from ddp_viz.model.timeline import RunStatus, grads_close, record

LESSON = Scenario.load(asset("lessons", "not-averaged", "scenario.toml"))


def variant(sync: bool = True, unused: bool = False, find: bool = False) -> Scenario:
    return replace(
        LESSON,
        model=replace(LESSON.model, unused=unused),
        ddp=DDPSpec(forward_sync_buffers=sync, find_unused_parameters=find),
    )


def test_the_lesson_fields_are_checked_before_anything_runs() -> None:
    base = LESSON.to_dict()
    for change, field in [
        ({"world_size": 8}, "world_size"),  # one row per rank: BatchNorm cannot train
        ({"ddp": {"forward_sync_buffers": "sometimes"}}, "ddp.forward_sync_buffers"),
        ({"ddp": {"find_unused_parameters": 2}}, "ddp.find_unused_parameters"),
        ({"model": {**base["model"], "norm": "layer"}}, "model.norm"),
        ({"model": {**base["model"], "unused": "yes"}}, "model.unused"),
        ({"launch": {"init_method": "tcp"}}, "launch.init_method"),
        ({"train": {"checkpoint": "maybe"}}, "train.checkpoint"),
        ({"data": {"sampler": "distributed", "batch_size": 2}}, "model.norm"),
    ]:
        with pytest.raises(ScenarioError) as err:
            Scenario.from_mapping({**base, **change})
        assert err.value.field == field, (change, err.value)


def test_torchrun_env_sets_what_env_init_reads_and_puts_the_environment_back(tmp_path) -> None:
    os.environ.pop("MASTER_PORT", None)
    os.environ["RANK"] = "unchanged"
    store = dist.FileStore(str(tmp_path / "store"), 1)
    with torchrun_env(0, 1, store) as env:
        assert os.environ["MASTER_ADDR"] == "127.0.0.1" and int(env["MASTER_PORT"]) > 0
        assert os.environ["TORCHELASTIC_USE_AGENT_STORE"] == "True"
        assert env == {k: os.environ[k] for k in env} and env["RANK"] == "0"
    assert os.environ.pop("RANK") == "unchanged" and "MASTER_PORT" not in os.environ


@pytest.mark.gloo
def test_buffers_are_rank_0s_as_every_forward_begins_then_each_ranks_own(engine) -> None:
    rec = record(engine.run(LESSON, timeout=60))
    assert rec.status is RunStatus.FINISHED, rec.reason
    world, steps, state = rec.world_size, rec.steps_planned, rec.parts["not_averaged"]
    assert len(state.buffers) == world * steps
    for s in range(steps):
        before = [state.buffers[(s, r)].before for r in range(world)]
        after = [state.buffers[(s, r)].after for r in range(world)]
        # DDP's broadcast happened before the module ran: bit for bit rank 0's values
        assert all(b == before[0] for b in before), s
        if s:
            assert before[0] == state.buffers[(s - 1, 0)].after
        # the forward folded each rank's own batch in: the ranks differ again
        assert all(a != after[0] for a in after[1:]), s
        assert state.agreement(s, world, "before").same
        assert not state.agreement(s, world, "after").same
    # the parameters stay identical: their gradients are averaged
    assert all(st.ranks_agree() for st in rec.complete_steps())


@pytest.mark.gloo
def test_without_forward_sync_buffers_each_rank_keeps_its_own(engine) -> None:
    rec = record(engine.run(variant(sync=False), timeout=60))
    assert rec.status is RunStatus.FINISHED, rec.reason
    state = rec.parts["not_averaged"]
    for s in range(1, rec.steps_planned):
        for r in range(rec.world_size):
            # nothing copied: each rank starts the forward from its own last values
            assert state.buffers[(s, r)].before == state.buffers[(s - 1, r)].after
        assert not state.agreement(s, rec.world_size, "before").same
    assert state.agreement(0, rec.world_size, "before").same  # DDP(model) synced them once
    assert all(st.ranks_agree() for st in rec.complete_steps())


@pytest.mark.gloo
def test_an_unused_parameter_stops_the_run_with_the_reducers_own_words_then_the_flag_works(
    engine,
) -> None:
    rec = record(engine.run(variant(unused=True), timeout=60))
    assert rec.status is RunStatus.FINISHED, rec.reason
    errors = rec.parts["not_averaged"].reducer_errors
    assert set(errors) == {0, 1}
    for e in errors.values():
        assert e.step == 1 and e.error.startswith(REDUCER_UNFINISHED)
        assert "find_unused_parameters=True" in e.error
        assert e.unused == ["aux.weight", "aux.bias"]
    # step 1 finished without any all-reduce: each rank stepped with its own gradient
    assert rec.complete_prefix() == 1
    first = rec.steps[0]
    assert all(rs.buckets == [] and rs.averaged == {} for rs in first.ranks.values())
    assert not grads_close(first.ranks[0].params, first.ranks[1].params)

    rec = record(engine.run(variant(unused=True, find=True), timeout=120))
    assert rec.status is RunStatus.FINISHED and rec.complete_prefix() == rec.steps_planned
    assert not rec.parts["not_averaged"].reducer_errors
    assert all(st.averaged_agree() and st.ranks_agree() for st in rec.complete_steps())
    for r in range(rec.world_size):
        cost = rec.parts["not_averaged"].cost[r]
        assert len(cost.with_flag) == len(cost.without_flag) > 0
        assert all(t > 0 for t in cost.with_flag + cost.without_flag)
    assert rec.parts["not_averaged"].cost_ms() is not None


@pytest.mark.gloo
def test_the_checkpoint_is_one_file_every_rank_reads_and_the_launch_is_torchruns(engine) -> None:
    rec = record(engine.run(LESSON, timeout=60))
    state = rec.parts["not_averaged"]
    assert state.saved is not None and state.saved.rank == 0 and state.saved.size > 0
    assert set(state.loaded) == {0, 1}
    for loaded in state.loaded.values():
        assert loaded.sha256 == state.saved.sha256 and loaded.size == state.saved.size
        assert loaded.same_params
    # rank 0's file carries rank 0's running statistics: loading replaced rank 1's own
    assert state.loaded[0].replaced == []
    assert state.loaded[1].replaced == ["1.running_mean", "1.running_var"]
    launch = rec.launch
    assert set(launch) == {0, 1}
    ports = {ev.env["MASTER_PORT"] for ev in launch.values()}
    assert len(ports) == 1 and int(ports.pop()) > 0
    for r, ev in launch.items():
        assert ev.init_method == "env://"
        assert ev.env["RANK"] == ev.env["LOCAL_RANK"] == str(r)
        assert ev.env["WORLD_SIZE"] == "2" and ev.env["MASTER_ADDR"] == "127.0.0.1"
    # the pooled ranks serve the next run, started the default way, with nothing left over
    rec = record(engine.run(replace(LESSON, launch=replace(LESSON.launch, init_method="file"))))
    assert rec.status is RunStatus.FINISHED and not rec.launch


@pytest.mark.gloo
def test_find_unused_parameters_adds_the_bitmap_all_reduce_and_buckets_by_size_from_step_1(
    engine,
) -> None:
    """Counted by the profiler in the ranks, at a cap of 52 bytes so the MLP needs buckets:
    with the flag every step all-reduces the same cap-sized buckets plus one ``int`` bitmap of
    one element per parameter; without it step 1 is one bucket, rebuilt into more after it."""
    s = variant(unused=True, find=True)
    s = replace(s, ddp=replace(s.ddp, bucket_cap_mb=0.00005))
    rec = record(engine.run(s, timeout=120))
    assert rec.status is RunStatus.FINISHED, rec.reason
    n_params = len(rec.params)
    for cost in rec.parts["not_averaged"].cost.values():
        for step in cost.allreduces_with:
            assert [n for dtype, n in step if dtype == "int"] == [n_params]
        assert all(d != "int" for step in cost.allreduces_without for d, _ in step)
    counts = rec.parts["not_averaged"].allreduce_counts()
    assert counts is not None
    buckets_with = [b for b, _ in counts[True]]
    assert len(set(buckets_with)) == 1 and buckets_with[0] > 1  # by size, from step 1
    assert [m for _, m in counts[True]] == [1, 1, 1]
    without = [b for b, _ in counts[False]]
    assert without[0] == 1 and without[1] == without[2] > 1  # one bucket, then rebuilt
