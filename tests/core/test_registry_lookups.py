"""The registry's look-ups, with toy kinds registered by the test (and taken out again): which
kind owns a scenario (its table, else the claiming kind of the highest precedence, a tie to
the first registered), folds, pages, scenes, flags and tables, the events' kinds and versions,
and a second kind under one id refused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ddp_viz.model import registry
from ddp_viz.model.registry import DuplicateKind, RunKind


@pytest.fixture
def toys() -> Iterator[list[RunKind]]:
    made: list[RunKind] = []
    yield made
    for kind in made:
        registry.unregister(kind.id)


def add(toys: list[RunKind], kind: RunKind) -> RunKind:
    toys.append(kind)
    return registry.register(kind)


def claims_key(key: str):
    return lambda scenario: key in scenario


def test_a_kind_owns_a_scenario_by_its_table_else_by_its_claim_and_folds_every_run() -> None:
    tabled = RunKind(id="t", table="tt", claims=lambda s: True)
    assert tabled.owns({"tt": {}}) and not tabled.owns({"t": {}})  # the table decides alone
    claiming = RunKind(id="c", claims=claims_key("mine"))
    assert claiming.owns({"mine": 1}) and not claiming.owns({})
    assert not RunKind(id="n").owns({"n": {}})  # neither: owns nothing
    assert not claiming.folds({}) and claiming.folds({"mine": 1})
    assert RunKind(id="e", every_run=True).folds({})


def test_the_kind_of_a_scenario_is_its_table_else_the_highest_claim(toys) -> None:
    add(toys, RunKind(id="toy_low", claims=claims_key("toy"), precedence=50))
    add(toys, RunKind(id="toy_high", claims=claims_key("toy"), precedence=60))
    add(toys, RunKind(id="toy_tie", claims=claims_key("toy"), precedence=60))
    add(toys, RunKind(id="toy_table", table="toy_table"))
    assert registry.kind_of({"toy": 1}).id == "toy_high"  # a tie: the first registered
    assert registry.kind_of({"toy": 1, "toy_table": {}}).id == "toy_table"
    assert registry.kind_of({"toy_table": {}}).id == "toy_table"
    assert registry.kind_of({"model": {"kind": "linear"}}).id == "ddp_step"


def test_a_second_kind_under_one_id_is_refused_and_the_same_one_again_is_not(toys) -> None:
    kind = add(toys, RunKind(id="toy_once"))
    assert registry.register(kind) is kind
    with pytest.raises(DuplicateKind) as caught:
        registry.register(RunKind(id="toy_once", plots=False))
    assert str(caught.value) == "a kind 'toy_once' is already registered"
    assert registry.get("toy_once") is kind
    registry.unregister("toy_once")
    assert registry.get("toy_once") is None
    registry.unregister("toy_once")  # gone already: nothing to do


def test_pages_scenes_flags_and_tables_are_found_across_the_kinds(toys) -> None:
    spec = type("ToySpec", (), {})
    add(
        toys,
        RunKind(
            id="toy_page",
            table="toy_page",
            spec=spec,
            page="toy-folder",
            scenes={"toy_scene": lambda *a: None},
            train_flags={"toy_flag": "does a toy thing"},
        ),
    )
    add(toys, RunKind(id="toy_specless", table="toy_specless"))
    assert registry.page_of("toy_page") == "toy-folder"
    assert registry.page_of("watched") == "watched" and registry.page_of("ddp-pattern") is None
    assert registry.page_of("collective") is None
    assert registry.kind_showing("toy_scene").id == "toy_page"
    assert registry.kind_showing("ring").id == "collective"
    assert registry.kind_showing("nothing") is None
    assert registry.train_flags()["toy_flag"] == "does a toy thing"
    assert set(registry.train_flags()) == {"toy_flag", "checkpoint", "overlap_cost"}
    tables = registry.tables()
    assert tables["toy_page"] is spec and "toy_specless" not in tables
    assert tables["collective"] is registry.get("collective").spec


def test_the_default_scene_is_the_default_kinds_first() -> None:
    assert registry.default_scene() == "ddp_step"


def test_without_a_default_kind_with_a_scene_there_is_no_default_scene(monkeypatch) -> None:
    bare = {"x": RunKind(id="x", default=True)}
    monkeypatch.setattr(registry, "_KINDS", bare)
    with pytest.raises(LookupError, match="no default kind of run with a scene is registered"):
        registry.default_scene()
    monkeypatch.setattr(registry, "_KINDS", {"y": RunKind(id="y", scenes={"s": print})})
    with pytest.raises(LookupError):
        registry.default_scene()


def test_an_events_kind_is_its_folder_and_its_version_the_kinds() -> None:
    def cls_in(module: str):
        return type("E", (), {"__module__": module})

    assert registry.events_kind(cls_in("ddp_viz.kinds.uneven.events")) == "uneven"
    assert registry.events_kind(cls_in("ddp_viz.kinds.uneven")) == "uneven"
    assert registry.events_kind(cls_in("ddp_viz.kinds")) is None
    assert registry.events_kind(cls_in("ddp_viz.model.protocol")) is None
    assert registry.events_kind(cls_in("other.kinds.uneven")) is None
    assert registry.events_version("resuming") == 2
    assert registry.events_version("uneven") == 1 and registry.events_version("nobody") == 1
    versions = registry.event_versions()
    assert versions["resuming"] == 2 and list(versions) == sorted(versions)
    assert "ddp_step" not in versions and "data_split" not in versions  # no events of their own


def test_kinds_are_listed_in_registration_order_as_a_fresh_list(toys) -> None:
    before = [k.id for k in registry.kinds()]
    add(toys, RunKind(id="toy_last"))
    after = [k.id for k in registry.kinds()]
    assert after == [*before, "toy_last"]
    listed = registry.kinds()
    registry.unregister("toy_last")
    assert [k.id for k in listed][-1] == "toy_last"  # taken before: not changed under it
