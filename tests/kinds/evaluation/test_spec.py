"""The ``[evaluation]`` table: what it asks of the scenario, each bound both sides and the
words a refusal says (the form shows them beside the field); the places the sampler hands
out (pure)."""

from __future__ import annotations

import functools
from types import SimpleNamespace

import pytest

from ddp_viz.kinds.evaluation.spec import EvalSpec, padded_total
from ddp_viz.model.scenario import ScenarioError
from tests.kinds.spec_cases import table_refused, table_scenario

scenario = functools.partial(table_scenario, "evaluation")
refused = functools.partial(table_refused, "evaluation")


@pytest.mark.parametrize("world", [2, 5, 8])
def test_two_to_eight_ranks_make_a_one_step_run(world: int) -> None:
    s = scenario(world)
    assert s.world_size == world and s.steps == 1  # the four phases are one step
    assert not s.trains


def test_one_rank_is_refused_in_words() -> None:
    world = 1
    err = refused(world)
    assert (err.field, err.message) == ("world_size", "evaluating under DDP needs 2 to 8 ranks")


def test_every_rank_needs_a_held_out_row_of_its_own() -> None:
    assert scenario(4, eval_rows=4).table("evaluation").eval_rows == 4
    err = refused(4, eval_rows=3)
    assert err.field == "evaluation.eval_rows"
    assert err.message == "4 ranks need at least 4 held-out rows"
    err = refused(7, eval_rows=6)
    assert err.message == "7 ranks need at least 7 held-out rows"


def test_a_step_count_of_its_own_is_refused() -> None:
    assert scenario(3, steps=1).steps == 1
    err = refused(3, steps=2)
    assert err.field == "steps"
    assert err.message == "[evaluation] train_steps sets the training; leave steps out"


@pytest.mark.parametrize(
    ("table", "field"),
    [
        ({"eval_rows": 1}, "evaluation.eval_rows"),
        ({"eval_rows": 501}, "evaluation.eval_rows"),
        ({"train_steps": 0}, "evaluation.train_steps"),
        ({"timeout_s": 0.5}, "evaluation.timeout_s"),
        ({"timeout_s": 31}, "evaluation.timeout_s"),
        ({"dropout": 1.0}, "evaluation.dropout"),
        ({"hang": "maybe"}, "evaluation.hang"),
    ],
)
def test_a_field_out_of_its_bounds_is_refused_by_name(table: dict, field: str) -> None:
    assert refused(2, **table).field == field


@pytest.mark.parametrize(
    ("rows", "world", "places"),
    # ceil(rows / world) places a rank, counted by hand
    [(25, 4, 28), (24, 4, 24), (25, 3, 27), (2, 2, 2), (3, 2, 4), (9, 8, 16), (500, 7, 504)],
)
def test_the_sampler_pads_every_share_to_the_longest(rows: int, world: int, places: int) -> None:
    assert padded_total(rows, world) == places


def test_nine_ranks_are_refused_by_the_table_too() -> None:
    """The scenario stops at 8 ranks itself; the table says its own bound when asked."""
    with pytest.raises(ScenarioError) as err:
        EvalSpec().check_scenario(SimpleNamespace(world_size=9, steps=1))
    assert (err.value.field, err.value.message) == (
        "world_size",
        "evaluating under DDP needs 2 to 8 ranks",
    )
