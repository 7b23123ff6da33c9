"""Every kind's scenario table, found through the registry: a key it does not know and a value
that is not a table are refused, naming the field as ``[table]`` and ``table.key`` (the form
shows the message beside that field, the CLI prints it), before any process starts."""

from __future__ import annotations

import pytest

from ddp_viz.model.registry import tables
from ddp_viz.model.scenario import Scenario, ScenarioError

TABLES = sorted(tables())


def refused(data: dict) -> ScenarioError:
    with pytest.raises(ScenarioError) as err:
        Scenario.from_mapping({"world_size": 3, **data})
    return err.value


def test_the_registry_lists_each_kinds_table() -> None:
    # one of each sort: a collective, a training kind, a kind of its own module layout
    assert {"collective", "uneven", "mixed_precision"} <= set(TABLES), TABLES


@pytest.mark.parametrize("table", TABLES)
def test_an_unknown_key_is_refused_naming_the_table_and_the_key(table: str) -> None:
    err = refused({table: {"zz_not_a_key": 1}})
    assert err.field == f"{table}.zz_not_a_key"
    assert err.message.startswith("unknown key; allowed: ")
    allowed = err.message.removeprefix("unknown key; allowed: ").split(", ")
    assert "zz_not_a_key" not in allowed and allowed == sorted(set(allowed), key=allowed.index)


@pytest.mark.parametrize("table", TABLES)
def test_a_value_that_is_not_a_table_is_refused_naming_the_table(table: str) -> None:
    err = refused({table: 5})
    assert (err.field, err.message) == (table, f"must be a table ([{table}])")
