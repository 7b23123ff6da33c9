"""Which scenarios the not-averaged kind claims, and what it refuses before a rank starts, with
the field and the words a learner reads (pure: no torch, no Qt)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ddp_viz.kinds.not_averaged.checks import check_scenario, claims
from ddp_viz.model.assets import asset
from ddp_viz.model.dataspec import DataSpec, TrainSpec
from ddp_viz.model.scenario import Scenario, ScenarioError

LESSON = Scenario.load(asset("lessons", "not-averaged", "scenario.toml"))
ROWS = list(range(8))  # the lesson's eight rows, numbered


@pytest.mark.parametrize(
    ("scenario", "claimed"),
    [
        ({}, False),
        ({"model": {"norm": "none"}, "train": {"checkpoint": False}}, False),
        ({"model": {"norm": "batch"}}, True),
        ({"model": {"norm": "layer"}}, True),
        ({"model": {"unused": True}}, True),
        ({"model": {"unused": False}}, False),
        ({"train": {"checkpoint": True}}, True),
        ({"train": {"accumulate": 2}}, False),
    ],
)
def test_batchnorm_the_unused_branch_or_a_checkpoint_make_a_scenario_this_kinds(
    scenario, claimed
) -> None:
    assert claims(scenario) is claimed


def _with(
    world: int = 2,
    rows: int = 8,
    norm: str = "batch",
    unused: bool = False,
    sampler: str = "contiguous",
    accumulate: int = 1,
    no_sync: str = "none",
) -> Scenario:
    return replace(
        LESSON,
        x=[float(i) for i in range(rows)],
        y=[2.0 * i for i in range(rows)],
        world_size=world,
        model=replace(LESSON.model, norm=norm, unused=unused),
        data=replace(LESSON.data or DataSpec(), sampler=sampler),
        train=replace(LESSON.train or TrainSpec(), accumulate=accumulate, no_sync=no_sync),
    )


def _refused(**change) -> ScenarioError:
    """A Scenario runs its kinds' checks as it is built: the refusal comes from there."""
    with pytest.raises(ScenarioError) as err:
        _with(**change)
    return err.value


def test_the_lesson_itself_passes() -> None:
    check_scenario(LESSON)
    check_scenario(_with(world=4))  # two rows each
    check_scenario(_with(world=3, rows=7))  # 3, 2, 2


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"sampler": "distributed"}, "model.norm"),
        ({"accumulate": 2}, "model.norm"),
        ({"no_sync": "backward_only"}, "model.norm"),
    ],
)
def test_batchnorm_trains_on_one_contiguous_block_a_step(change, field) -> None:
    err = _refused(**change)
    assert (err.field, err.message) == (
        field,
        "BatchNorm trains here on contiguous blocks, one each step",
    )


@pytest.mark.parametrize(("world", "rows", "smallest"), [(5, 8, 1), (4, 7, 1), (8, 8, 1)])
def test_batchnorm_needs_two_rows_on_every_rank_the_last_one_too(world, rows, smallest) -> None:
    err = _refused(world=world, rows=rows)
    assert err.field == "world_size"
    assert err.message == (
        f"BatchNorm needs at least 2 rows per rank to train; {rows} rows over {world} ranks "
        f"leave a rank {smallest}"
    )


def test_without_batchnorm_one_row_a_rank_is_fine() -> None:
    check_scenario(_with(world=8, norm="none"))
    check_scenario(_with(world=8, norm="layer"))


@pytest.mark.parametrize(
    "change", [{"sampler": "distributed"}, {"accumulate": 3}, {"no_sync": "backward_only"}]
)
def test_the_unused_branch_trains_on_one_contiguous_block_a_step(change) -> None:
    err = _refused(norm="none", unused=True, **change)
    assert (err.field, err.message) == (
        "model.unused",
        "the unused branch trains on contiguous blocks, one each step",
    )
    check_scenario(_with(norm="none", unused=True))
    check_scenario(_with(norm="none", unused=False, **change))


def test_the_checks_run_when_a_scenario_is_read() -> None:
    base = LESSON.to_dict()
    with pytest.raises(ScenarioError) as err:
        Scenario.from_mapping({**base, "train": {"checkpoint": True, "accumulate": 2}})
    assert err.value.field == "model.norm"
