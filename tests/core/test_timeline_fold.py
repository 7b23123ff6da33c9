"""Each event folded into the record where the views read it (model/timeline.py, pure): a
three-rank run built here event by event, each rank's values different, the record asked
after each event as well as at the end."""

from __future__ import annotations

import math

from ddp_viz.model import protocol
from ddp_viz.model.launchspec import LaunchEnv
from ddp_viz.model.scenario import default_scenario
from ddp_viz.model.timeline import RunRecord, RunStatus, record
from tests.conftest import load_recording

PARAMS = [{"name": "weight", "shape": [1, 1]}, {"name": "bias", "shape": [1]}]


def start(world: int = 3, steps: int = 2, cores: int = 6) -> RunRecord:
    rec = RunRecord()
    assert rec.cores == 0 and rec.run is None
    scenario = default_scenario().with_changes(world_size=world, steps=steps).to_dict()
    rec.apply(
        protocol.RunStarted(
            run=4,
            world_size=world,
            steps=steps,
            scenario=scenario,
            shards=[[0, 1], [2], [3]],
            params=PARAMS,
            cores=cores,
        )
    )
    return rec


def test_run_started_sets_the_run_its_shape_and_its_parameters() -> None:
    rec = start()
    assert (rec.run, rec.world_size, rec.steps_planned, rec.status) == (4, 3, 2, "running")
    assert rec.shards == [[0, 1], [2], [3]] and rec.cores == 6
    assert rec.param_names == ["weight", "bias"]
    assert [(p.name, p.shape) for p in rec.params] == [("weight", (1, 1)), ("bias", (1,))]
    assert not rec.done and not rec.foreign_model
    assert rec.events[0].kind == "run_started"


def test_each_ranks_start_and_launch_are_kept_by_rank() -> None:
    rec = start()
    for r, rows in ((2, [3]), (0, [0, 1]), (1, [2])):
        rec.apply(protocol.RankStarted(run=4, rank=r, pid=100 + r, rows=rows))
    assert rec.pids == {0: 100, 1: 101, 2: 102}
    assert rec.rank_rows == {0: [0, 1], 1: [2], 2: [3]}
    env = LaunchEnv(run=4, rank=2, init_method="env://", env={"RANK": "2"})
    rec.apply(env)
    assert rec.launch == {2: env}
    assert len(rec.events) == 5


def test_a_ranks_step_is_folded_from_its_events_in_any_order() -> None:
    rec = start()
    rec.apply(protocol.Params(run=4, step=1, rank=2, params={"weight": [0.3], "bias": [0.1]}))
    assert len(rec.steps) == 2 and rec.steps[0].ranks == {}  # step 1 made room for step 2
    rec.apply(
        protocol.LocalGrad(
            run=4,
            step=1,
            rank=2,
            loss=1.5,
            grads={"weight": [-2.0], "bias": [1.0]},
            buckets=[["bias", "weight"]],
            rows=[3],
            epoch=1,
        )
    )
    rec.apply(
        protocol.AveragedGrad(
            run=4, step=1, rank=2, grads={"weight": [-1.0], "bias": [0.5]}, vs_full_batch={"w": 0}
        )
    )
    spans = {"forward": [[1.0, 1.5]]}
    ready = [["weight", 1.6]]
    buckets = [{"index": 0, "launched": 1.7}]
    rec.apply(protocol.Timing(run=4, step=1, rank=2, spans=spans, ready=ready, buckets=buckets))
    rs = rec.steps[1].ranks[2]
    assert (rs.loss, rs.local, rs.averaged, rs.params) == (
        1.5,
        {"weight": [-2.0], "bias": [1.0]},
        {"weight": [-1.0], "bias": [0.5]},
        {"weight": [0.3], "bias": [0.1]},
    )
    assert rs.buckets == [["bias", "weight"]] and rs.rows == [3] and rs.epoch == 1
    assert rs.values is True and rs.vs_full_batch == {"w": 0}
    assert (rs.spans, rs.ready, rs.bucket_spans) == (spans, ready, buckets)
    assert rs.complete


def test_a_step_without_values_keeps_its_loss_and_no_gradient() -> None:
    rec = start()
    rec.apply(
        protocol.LocalGrad(
            run=4, step=0, rank=1, loss=0.25, grads={"weight": [9.0]}, rows=[2], values=False
        )
    )
    rs = rec.steps[0].ranks[1]
    assert rs.loss == 0.25 and rs.local is None and rs.values is False and rs.rows == [2]


def test_the_initial_parameters_are_kept_by_rank() -> None:
    rec = start()
    rec.apply(protocol.InitialParams(run=4, rank=1, params={"weight": [0.5]}))
    rec.apply(protocol.InitialParams(run=4, rank=0, params={"weight": [0.25]}))
    assert rec.initial == {1: {"weight": [0.5]}, 0: {"weight": [0.25]}}
    assert rec.initial_params() == {"weight": [0.25]}


def test_how_a_run_ends_is_kept_with_its_reason() -> None:
    rec = start()
    rec.apply(protocol.RunFinished(run=4, steps_completed=2, elapsed_s=1.25))
    assert rec.status is RunStatus.FINISHED and rec.elapsed_s == 1.25 and rec.done
    failed = start()
    failed.apply(protocol.RunFailed(run=4, reason="rank 2 raised", rank=2))
    assert (failed.status, failed.reason, failed.failed_rank) == ("failed", "rank 2 raised", 2)
    assert failed.done
    cancelled = start()
    cancelled.apply(protocol.RunCancelled(run=4))
    assert cancelled.status is RunStatus.CANCELLED and cancelled.done
    assert cancelled.reason == "cancelled by the user"


def test_events_of_another_run_or_before_any_run_are_not_folded() -> None:
    empty = RunRecord()
    assert empty.apply(protocol.RunFinished(run=4, steps_completed=1, elapsed_s=1.0)) is False
    assert empty.events == [] and empty.status is RunStatus.IDLE
    rec = start()
    assert rec.apply(protocol.Params(run=5, step=0, rank=0, params={"w": [1.0]})) is False
    assert rec.steps == [] and len(rec.events) == 1
    assert rec.apply(protocol.Params(run=4, step=0, rank=0, params={"w": [1.0]})) is True


def test_the_steps_complete_so_far_are_counted_as_each_event_arrives() -> None:
    """Asked after every event: a step counts once its last rank's last report arrived."""
    events = load_recording("four-ranks-3-steps.jsonl")
    rec = RunRecord()
    seen: list[int] = []
    for e in events:
        rec.apply(e)
        seen.append(rec.complete_prefix())
        assert [s.step for s in rec.complete_steps()] == list(range(seen[-1]))
    # by hand: step s is complete once params of all 4 ranks for s arrived (they come last)
    want, have = [], set()
    n = 0
    for e in events:
        if e.kind == "params":
            have.add((e.step, e.rank))
        while all((n, r) in have for r in range(4)) and n < 3:
            n += 1
        want.append(n)
    assert seen == want and seen[-1] == 3


def test_a_watched_run_is_a_users_own_model() -> None:
    rec = record(load_recording("watched-2-ranks.jsonl"))
    assert rec.foreign_model and "watched" in [k.id for k in rec.kinds()]
    assert not record(load_recording("default-run.jsonl")).foreign_model


def test_an_old_recording_without_a_model_table_is_the_linear_model() -> None:
    rec = RunRecord()
    scenario = {"x": [1.0], "y": [2.0], "init_weight": 0.5, "init_bias": -0.25}
    rec.apply(protocol.RunStarted(run=1, world_size=3, steps=1, scenario=scenario, params=PARAMS))
    assert rec.initial_params() == {"weight": [0.5], "bias": [-0.25]}
    no_init = RunRecord()
    no_init.apply(protocol.RunStarted(run=1, world_size=3, steps=1, scenario={}, params=PARAMS))
    got = no_init.initial_params()
    assert list(got) == ["weight", "bias"] and all(math.isnan(v[0]) for v in got.values())


def test_a_run_with_no_parameters_compared_judges_no_agreement() -> None:
    rec = start()
    for r in range(3):
        rec.apply(protocol.LocalGrad(run=4, step=0, rank=r, loss=1.0, grads={}, values=False))
        rec.apply(protocol.Timing(run=4, step=0, rank=r, spans={"forward": [[0.0, 1.0]]}))
    assert rec.complete_prefix() == 1
    assert rec.check_summary() == {"ranks_agree": None, "average_is_full_batch": None}
