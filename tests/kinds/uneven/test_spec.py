"""The ``[uneven]`` table: each field's bounds, both sides, and the words a refusal says (the
form shows them beside the field); the steps the table gives the run and each rank (pure)."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.uneven.spec import UnevenSpec
from ddp_viz.model.scenario import Scenario, ScenarioError

X = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]


def scenario(table: dict, world: int = 3, **rest) -> Scenario:
    return Scenario.from_mapping(
        {"x": X, "y": [2 * v + 1 for v in X], "world_size": world, "uneven": table, **rest}
    )


def refused(table: dict, world: int = 3, **rest) -> ScenarioError:
    with pytest.raises(ScenarioError) as err:
        scenario(table, world, **rest)
    return err.value


@pytest.mark.parametrize(
    ("key", "low", "high"), [("batches", 1, 1000), ("extra", 0, 100)], ids=["batches", "extra"]
)
def test_whole_fields_take_their_bounds_and_refuse_one_past(key: str, low: int, high: int) -> None:
    for ok in (low, high):
        assert getattr(UnevenSpec.from_mapping({key: ok}), key) == ok
    for bad in (low - 1, high + 1):
        with pytest.raises(ScenarioError) as err:
            UnevenSpec.from_mapping({key: bad})
        assert err.value.field == f"uneven.{key}"
        assert err.value.message == f"must be a whole number from {low} to {high:,}, got {bad}"


@pytest.mark.parametrize("seconds", [1, 1.0, 4.5, 30])
def test_the_timeout_takes_1_to_30_seconds_as_a_float(seconds: float) -> None:
    spec = UnevenSpec.from_mapping({"timeout_s": seconds})
    assert spec.timeout_s == seconds and type(spec.timeout_s) is float


@pytest.mark.parametrize("bad", [0.99, 30.01, 0, True, "4", None])
def test_a_timeout_out_of_range_or_not_a_number_is_refused_in_words(bad: object) -> None:
    with pytest.raises(ScenarioError) as err:
        UnevenSpec.from_mapping({"timeout_s": bad})
    assert err.value.field == "uneven.timeout_s"
    assert err.value.message == f"must be 1 to 30 seconds, got {bad!r}"


@pytest.mark.parametrize("debug", ["none", "detail", "monitored_barrier"])
def test_each_debug_tool_is_taken(debug: str) -> None:
    assert UnevenSpec.from_mapping({"debug": debug, "timeout_s": 5}).debug == debug


def test_an_unknown_debug_tool_is_refused_with_the_three_it_takes() -> None:
    with pytest.raises(ScenarioError) as err:
        UnevenSpec.from_mapping({"debug": "loud"})
    assert err.value.field == "uneven.debug"
    assert err.value.message == "must be one of none, detail, monitored_barrier"


def test_the_monitored_barrier_needs_a_group_timeout_above_its_own_2_s() -> None:
    for t in (1.0, 2.0):
        with pytest.raises(ScenarioError) as err:
            UnevenSpec.from_mapping({"debug": "monitored_barrier", "timeout_s": t})
        assert err.value.field == "uneven.timeout_s"
        assert err.value.message == "monitored_barrier waits 2 s: give the process group longer"
    assert UnevenSpec.from_mapping({"debug": "monitored_barrier", "timeout_s": 2.01}).timeout_s
    # the other tools wait no time of their own: the shortest timeout is theirs to take
    assert UnevenSpec.from_mapping({"debug": "detail", "timeout_s": 1}).timeout_s == 1.0
    assert UnevenSpec.from_mapping({"timeout_s": 2}).timeout_s == 2.0


def test_join_must_be_a_flag() -> None:
    assert UnevenSpec.from_mapping({"join": True}).join is True
    with pytest.raises(ScenarioError) as err:
        UnevenSpec.from_mapping({"join": "maybe"})
    assert err.value.field == "uneven.join"


def test_the_table_writes_back_every_field() -> None:
    table = {"batches": 5, "extra": 2, "join": True, "timeout_s": 7.5, "debug": "detail"}
    spec = UnevenSpec.from_mapping(table)
    assert spec.to_dict() == table
    assert UnevenSpec.from_mapping(spec.to_dict()) == spec
    assert UnevenSpec.from_mapping({}) == UnevenSpec()


def test_the_run_is_as_long_as_the_last_ranks_batches() -> None:
    s = scenario({"batches": 2, "extra": 3})
    spec = s.table("uneven")
    assert s.steps == 5 == spec.steps == spec.fixed_steps(3)
    # the odd rank last: only it has the extra batches
    assert [spec.steps_of(r, 3) for r in range(3)] == [2, 2, 5]
    assert [spec.steps_of(r, 4) for r in range(4)] == [2, 2, 2, 5]
    assert scenario({"batches": 4, "extra": 0}).steps == 4


def test_a_step_count_of_its_own_is_refused_naming_the_last_ranks_batches() -> None:
    err = refused({"batches": 2, "extra": 3}, steps=4)
    assert err.field == "steps"
    assert err.message == (
        "[uneven] gives the last rank 5 batches: the run is that long; leave steps out"
    )
    assert scenario({"batches": 2, "extra": 3}, steps=5).steps == 5


def test_one_rank_is_refused_two_are_taken() -> None:
    err = refused({}, world=1)
    assert (err.field, err.message) == ("world_size", "uneven inputs need at least 2 ranks")
    assert scenario({}, world=2).world_size == 2


@pytest.mark.parametrize(
    ("rest", "field", "words"),
    [
        (
            {"data": {"sampler": "distributed"}},
            "uneven",
            "uneven inputs use contiguous blocks, one step each",
        ),
        (
            {"train": {"accumulate": 2}},
            "uneven",
            "uneven inputs use contiguous blocks, one step each",
        ),
        (
            {"model": {"kind": "mlp", "norm": "batch"}},
            "model.norm",
            "BatchNorm trains here on contiguous blocks, one each step",
        ),
        (
            {"model": {"kind": "mlp", "unused": True}},
            "model.unused",
            "the unused branch trains on contiguous blocks, one each step",
        ),
    ],
    ids=["distributed", "accumulate", "batchnorm", "unused"],
)
def test_what_the_rest_of_the_scenario_may_not_ask(rest: dict, field: str, words: str) -> None:
    err = refused({}, **rest)
    assert (err.field, err.message) == (field, words)


def test_the_plain_scenario_beside_it_is_taken() -> None:
    s = scenario({}, train={"accumulate": 1}, model={"kind": "mlp"})
    assert s.train.accumulate == 1 and s.model.norm == "none" and not s.model.unused
