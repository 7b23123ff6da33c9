"""The rows a real DistributedSampler deals each rank, step by step (torch, no Qt).

What a training script does: ``DistributedSampler(dataset, num_replicas, rank, shuffle, seed,
drop_last)`` under a ``DataLoader``, with ``sampler.set_epoch(epoch)`` at the start of every
epoch when the scenario says so. The dataset is the row indices, so what the loader hands over
is exactly the rows the rank trains on; they go into the events as they are.
"""

from __future__ import annotations

from collections.abc import Iterator

from torch.utils.data import DataLoader, DistributedSampler

from ddp_viz.model.scenario import Scenario


def BATCHES(scenario: Scenario, rank: int) -> Iterator[tuple[int, list[int]]]:
    """(epoch, rows) for every step of ``rank``, without end."""
    spec = scenario.data
    # listing: batches
    sampler = DistributedSampler(
        list(range(scenario.rows)),
        num_replicas=scenario.world_size,
        rank=rank,
        shuffle=spec.shuffle,
        seed=spec.seed,
        drop_last=spec.drop_last,
    )
    size = spec.batch_size or max(1, len(sampler))
    loader = DataLoader(list(range(scenario.rows)), batch_size=size, sampler=sampler)
    epoch = 0
    while True:
        if spec.set_epoch:
            sampler.set_epoch(epoch)
        for batch in loader:
            yield epoch, [int(i) for i in batch]
        epoch += 1
    # end listing
