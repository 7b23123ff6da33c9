"""Which rows a rank trains on in each step: contiguous blocks, unless a kind of the run deals
them (its engine part's ``BATCHES``, see :mod:`ddp_viz.engine.kind_parts`)."""

from __future__ import annotations

from collections.abc import Iterator

from ddp_viz.engine.kind_parts import kind_batches
from ddp_viz.model.scenario import Scenario

Batch = tuple[int, list[int]]  # (epoch, rows)


def rank_batches(scenario: Scenario, rank: int) -> Iterator[tuple[int, list[int]]]:
    """(epoch, rows) for every step of ``rank``, without end."""
    dealt = kind_batches(scenario)
    if dealt is not None:
        yield from dealt(scenario, rank)
        return
    rows = scenario.shards()[rank]
    epoch = 0
    while True:  # the whole block every step; each step is a pass over the block
        yield epoch, rows
        epoch += 1


def first_epoch_rows(scenario: Scenario, rank: int) -> list[int]:
    """The rows ``rank`` gets in its first epoch (all its batches), for ``rank_started``."""
    if kind_batches(scenario) is None:
        return scenario.shards()[rank]
    out: list[int] = []
    for epoch, rows in rank_batches(scenario, rank):
        if epoch > 0:
            break
        out += rows
    return out


def take(batches: Iterator[Batch], k: int) -> list[Batch]:
    """The next ``k`` batches of a rank's loader: one optimizer step's micro-batches."""
    return [next(batches) for _ in range(k)]


def micro_rows(micro: list[Batch]) -> list[int]:
    """Every row of the step, micro-batch after micro-batch."""
    return [i for _, rows in micro for i in rows]
