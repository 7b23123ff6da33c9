"""A kind's own ``[train]`` flags: declared in its ``RunKind``, parsed and written back by the
core's ``[train]`` table, refused once no kind declares them (pure: no torch, no Qt)."""

from __future__ import annotations

import pytest

from ddp_viz.model import registry
from ddp_viz.model.registry import RunKind
from ddp_viz.model.scenario import Scenario, ScenarioError


@pytest.fixture
def toy_flag():
    registry.register(RunKind(id="toy_flags", train_flags={"toy_after": "a toy's extra pass"}))
    yield "toy_after"
    registry.unregister("toy_flags")


def test_a_kinds_flag_is_parsed_written_back_and_read(toy_flag: str) -> None:
    s = Scenario.from_mapping({"world_size": 3, "train": {toy_flag: True, "accumulate": 2}})
    assert s.train.flag(toy_flag) and not s.train.flag("checkpoint")
    assert s.train.accumulate == 2
    written = s.to_dict()["train"]
    assert written[toy_flag] is True and written["checkpoint"] is False
    assert Scenario.from_mapping(s.to_dict()) == s
    off = Scenario.from_mapping({"world_size": 3, "train": {toy_flag: False}})
    assert not off.train.flag(toy_flag) and off.to_dict()["train"][toy_flag] is False
    with pytest.raises(ScenarioError) as err:
        Scenario.from_mapping({"world_size": 3, "train": {toy_flag: "yes"}})
    assert err.value.field == f"train.{toy_flag}"


def test_a_flag_no_kind_declares_is_an_unknown_key() -> None:
    with pytest.raises(ScenarioError) as err:
        Scenario.from_mapping({"world_size": 2, "train": {"toy_after": True}})
    assert err.value.field == "train.toy_after"
    assert "checkpoint" in str(err.value) and "overlap_cost" in str(err.value)


def test_the_course_kinds_declare_their_own_flags() -> None:
    owners = {n: k.id for k in registry.kinds() for n in k.train_flags}
    assert owners == {"checkpoint": "not_averaged", "overlap_cost": "bucket_timeline"}
