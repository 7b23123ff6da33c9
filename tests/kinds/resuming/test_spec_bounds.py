"""The ``[resuming]`` table at its edges: each check both sides of its bound and the words a
refusal says (the form shows them beside the field), and the step part one saves after, at a
world size where an epoch is more than one step (pure)."""

from __future__ import annotations

import functools
from types import SimpleNamespace

import pytest

from ddp_viz.kinds.resuming.spec import RestartSpec
from ddp_viz.model.scenario import ScenarioError
from tests.kinds.spec_cases import table_refused, table_scenario

scenario = functools.partial(table_scenario, "resuming")
refused = functools.partial(table_refused, "resuming")


@pytest.mark.parametrize("world", [2, 8])
def test_two_and_eight_ranks_make_a_one_step_run(world: int) -> None:
    s = scenario(world, kill_after=1)
    assert s.world_size == world and s.steps == 1 and not s.trains


def test_one_rank_is_refused_in_words() -> None:
    world = 1
    err = refused(world, kill_after=1)
    assert (err.field, err.message) == ("world_size", "a rank dying needs 2 to 8 ranks")


def test_every_rank_needs_a_row() -> None:
    """The table's own bound (8 rows) keeps this from a form; a spec built in code meets it."""
    s = scenario(4, kill_after=1)
    RestartSpec(rows=4, batch=1, kill_after=1).check_scenario(s)  # a row each: taken
    with pytest.raises(ScenarioError) as err:
        RestartSpec(rows=3, batch=1, kill_after=1).check_scenario(s)
    assert (err.value.field, err.value.message) == ("resuming.rows", "4 ranks need 4 rows")
    assert refused(2, rows=7).field == "resuming.rows"


def test_the_kill_must_come_before_the_last_step() -> None:
    # 48 rows at 3 ranks: 16 places a rank, 4 steps an epoch of batch 4, 16 steps in 4 epochs
    assert scenario(3, kill_after=15).table("resuming").kill_after == 15
    err = refused(3, kill_after=16)
    assert err.field == "resuming.kill_after"
    assert err.message == "must be below the run's 16 steps at 3 ranks"
    # 48 rows at 5 ranks: 10 places, 3 steps an epoch (the last one short), 12 in all
    err = refused(5, kill_after=12)
    assert err.message == "must be below the run's 12 steps at 5 ranks"
    assert scenario(5, kill_after=11).table("resuming").kill_after == 11


def test_the_resume_epoch_must_be_below_the_epochs() -> None:
    assert scenario(2, epochs=3, resume_epoch=2, kill_after=1).table("resuming").resume_epoch == 2
    for resume in (3, 4):
        err = refused(2, epochs=3, resume_epoch=resume, kill_after=1)
        assert (err.field, err.message) == ("resuming.resume_epoch", "must be below epochs")


def test_a_step_count_of_its_own_is_refused() -> None:
    assert scenario(2, steps=1).steps == 1
    err = refused(2, steps=3)
    assert err.field == "steps"
    assert err.message == "[resuming] epochs sets the training; leave steps out"


@pytest.mark.parametrize(
    ("rows", "batch", "world", "per_epoch"),
    # ceil(ceil(rows / world) / batch), by hand: the sampler's share, then the loader's batches
    [(48, 4, 3, 4), (48, 4, 5, 3), (50, 3, 4, 5), (9, 2, 8, 1), (10, 1, 3, 4), (512, 64, 2, 4)],
)
def test_an_epochs_steps_and_the_resume_step(rows, batch, world, per_epoch) -> None:
    spec = RestartSpec(rows=rows, batch=batch, epochs=5, resume_epoch=3)
    assert spec.steps_per_epoch(world) == per_epoch
    assert spec.total_steps(world) == 5 * per_epoch
    assert spec.resume_step(world) == 3 * per_epoch


def test_nine_ranks_are_refused_by_the_table_too() -> None:
    """The scenario stops at 8 ranks itself; the table says its own bound when asked."""
    with pytest.raises(ScenarioError) as err:
        RestartSpec().check_scenario(SimpleNamespace(world_size=9, steps=1))
    assert (err.value.field, err.value.message) == ("world_size", "a rank dying needs 2 to 8 ranks")
