"""What the not-averaged kind asks of a scenario, and whether a scenario is about it (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ddp_viz.model.errors import ScenarioError

if TYPE_CHECKING:
    from ddp_viz.model.scenario import Scenario


def claims(scenario: Mapping[str, Any]) -> bool:
    """A scenario with BatchNorm, the unused branch or a checkpoint is about this kind."""
    model, train = scenario.get("model", {}), scenario.get("train", {})
    return (
        model.get("norm", "none") != "none"
        or bool(model.get("unused"))
        or bool(train.get("checkpoint"))
    )


def check_scenario(s: Scenario) -> None:
    """BatchNorm and the unused branch are taught with one contiguous batch per rank and step:
    BatchNorm needs two rows or more to train, and the reducer's error is caught there."""
    one_batch = not (s.data.distributed or s.train.accumulate > 1 or s.train.no_sync != "none")
    if s.model.norm == "batch":
        if not one_batch:
            raise ScenarioError(
                "model.norm", "BatchNorm trains here on contiguous blocks, one each step"
            )
        smallest = min(len(shard) for shard in s.shards())
        if smallest < 2:
            raise ScenarioError(
                "world_size",
                f"BatchNorm needs at least 2 rows per rank to train; {s.rows} rows over "
                f"{s.world_size} ranks leave a rank {smallest}",
            )
    if s.model.unused and not one_batch:
        raise ScenarioError(
            "model.unused", "the unused branch trains on contiguous blocks, one each step"
        )
