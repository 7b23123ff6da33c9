"""The ``[resuming]`` table: its defaults, what it refuses, and the steps it makes (pure)."""

from __future__ import annotations

import math

import pytest

from ddp_viz.kinds.resuming.spec import RestartSpec, steps_lost
from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.scenario import Scenario


def scenario(world: int, **table: object) -> Scenario:
    return Scenario.from_mapping({"world_size": world, "resuming": table})


@pytest.mark.parametrize("world", [2, 3, 5, 8])
def test_steps_are_the_samplers_batches(world: int) -> None:
    spec = RestartSpec(rows=50, batch=4, epochs=3, resume_epoch=1)
    per_rank = math.ceil(50 / world)  # DistributedSampler pads every share to this
    assert spec.steps_per_epoch(world) == math.ceil(per_rank / 4)
    assert spec.total_steps(world) == 3 * math.ceil(per_rank / 4)
    assert spec.resume_step(world) == math.ceil(per_rank / 4)


@pytest.mark.parametrize(("after", "every", "lost"), [(5, 3, 2), (6, 3, 0), (7, 1, 0), (4, 10, 4)])
def test_a_death_costs_the_steps_since_the_last_checkpoint(after, every, lost) -> None:
    assert steps_lost(after, every) == lost


def test_the_lessons_table_reads_and_writes_back() -> None:
    s = scenario(3, interval=4, kill_after=7, attempt_keys=False)
    spec = s.table("resuming")
    assert (spec.interval, spec.kill_after, spec.attempt_keys) == (4, 7, False)
    assert RestartSpec.from_mapping(spec.to_dict()) == spec


@pytest.mark.parametrize(
    ("world", "table", "field"),
    [
        (1, {}, "world_size"),
        (2, {"kill_after": 24}, "resuming.kill_after"),  # 24 steps at 2 ranks: none after
        (8, {"kill_after": 8}, "resuming.kill_after"),  # 8 steps at 8 ranks
        (2, {"resume_epoch": 4}, "resuming.resume_epoch"),
        (2, {"max_restarts": 0}, "resuming.max_restarts"),
        (2, {"dropout": 1.0}, "resuming.dropout"),
        (2, {"attempt_keys": "maybe"}, "resuming.attempt_keys"),
    ],
)
def test_what_it_refuses_names_the_field(world, table, field) -> None:
    with pytest.raises(ScenarioError) as err:
        scenario(world, **table)
    assert err.value.field == field


def test_the_last_step_but_one_may_be_the_death() -> None:
    assert scenario(2, kill_after=23).table("resuming").kill_after == 23
