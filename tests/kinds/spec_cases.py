"""Building a scenario with one kind's table, and the error a bad one is refused with: what
the kinds' form-bound tests share."""

from __future__ import annotations

import pytest

from ddp_viz.model.scenario import Scenario, ScenarioError


def table_scenario(name: str, world: int, steps: int | None = None, **table: object) -> Scenario:
    data: dict = {"world_size": world, name: table}
    if steps is not None:
        data["steps"] = steps
    return Scenario.from_mapping(data)


def table_refused(
    name: str, world: int, steps: int | None = None, **table: object
) -> ScenarioError:
    with pytest.raises(ScenarioError) as err:
        table_scenario(name, world, steps, **table)
    return err.value
