"""Who gives each rank its rows (``[data]``) and how the loss adds them up (``[train]``).

Pure model layer. DDP never splits data: the training script does, usually through
``torch.utils.data.DistributedSampler``. ``contiguous`` is this app's own choice for the first
lessons (rank r takes the r-th block, the whole block every step); ``distributed`` runs a real
``DistributedSampler`` and ``DataLoader`` in every rank, and the rows each rank received in
each step are what the events report.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ddp_viz.model import registry
from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.modelspec import spec_table
from ddp_viz.model.values import choice, flag, whole

SAMPLERS = ("contiguous", "distributed")
REDUCTIONS = ("mean", "sum")
DATA_KEYS = ("sampler", "shuffle", "seed", "drop_last", "batch_size", "epochs", "set_epoch")
# the core's own [train] keys; a kind adds flags of its own (RunKind.train_flags)
TRAIN_KEYS = ("loss_reduction", "accumulate", "no_sync", "scale_loss")
MAX_EPOCHS = 1000


@dataclass(frozen=True)
class DataSpec:
    """``sampler``: ``contiguous`` (blocks, the whole block each step) or ``distributed``
    (``DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle, seed,
    drop_last)`` feeding a ``DataLoader(batch_size)``). ``batch_size`` 0 means the rank's whole
    share in one batch. ``epochs``, when set, fixes the run's length in steps; ``set_epoch``
    calls ``sampler.set_epoch(epoch)`` at the start of every epoch (without it every epoch
    repeats the first one's order)."""

    sampler: str = "contiguous"
    shuffle: bool = True
    seed: int = 0
    drop_last: bool = False
    batch_size: int = 0
    epochs: int = 0  # 0: the scenario's `steps` decides the length
    set_epoch: bool = True

    @classmethod
    def from_mapping(cls, data: Any) -> DataSpec:
        table = spec_table(data, "data", DATA_KEYS)
        values: dict[str, Any] = {}
        if "sampler" in table:
            values["sampler"] = choice("data.sampler", table["sampler"], SAMPLERS)
        for key in ("shuffle", "drop_last", "set_epoch"):
            if key in table:
                values[key] = flag(f"data.{key}", table[key])
        if "seed" in table:
            values["seed"] = whole("data.seed", table["seed"], 0, 2**31 - 1)
        if "batch_size" in table:
            values["batch_size"] = whole("data.batch_size", table["batch_size"], 0, 10_000)
        if "epochs" in table:
            values["epochs"] = whole("data.epochs", table["epochs"], 0, MAX_EPOCHS)
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in DATA_KEYS}

    @property
    def distributed(self) -> bool:
        return self.sampler == "distributed"

    def per_rank(self, rows: int, world_size: int) -> int:
        """How many rows each rank gets per epoch: ``DistributedSampler.num_samples`` (padded
        up to equal shares, or cut down with ``drop_last``); contiguous blocks are uneven."""
        if self.distributed:
            if self.drop_last and rows % world_size:
                return math.ceil((rows - world_size) / world_size)
            return math.ceil(rows / world_size)
        return math.ceil(rows / world_size)

    def run_steps(self, rows: int, world_size: int) -> int:
        """The run's length when ``epochs`` sets it: epochs × batches per epoch."""
        return self.epochs * self.steps_per_epoch(rows, world_size)

    def steps_per_epoch(self, rows: int, world_size: int) -> int:
        share = self.per_rank(rows, world_size)
        if self.batch_size == 0 or share == 0:
            return 1
        return math.ceil(share / self.batch_size)


def with_run_epochs(values: Mapping[str, Any]) -> Mapping[str, Any]:
    """A scenario (``to_dict()`` form) whose ``[data] epochs`` names the epochs its run reaches:
    a run whose length ``steps`` set (``epochs = 0``) still loops over some, and a listing's
    ``range(${data.epochs})`` must not say ``range(0)``. A run that ends inside an epoch
    reaches that epoch."""
    data = values.get("data")
    if not isinstance(data, Mapping) or data.get("epochs"):
        return values
    try:
        spec = DataSpec.from_mapping(data)
        world = max(1, int(values.get("world_size", 1)))
        micro = int(values.get("steps", 1)) * int(values.get("train", {}).get("accumulate", 1))
    except (ScenarioError, TypeError, ValueError):
        return values
    per_epoch = spec.steps_per_epoch(len(values.get("x", [])), world)
    return {**values, "data": {**data, "epochs": max(1, math.ceil(micro / per_epoch))}}


PLACEMENTS = ("none", "forward_and_backward", "backward_only")
# what the form calls each placement (short: the form's column is narrow)
PLACEMENT_LABELS = {
    "none": "none",
    "forward_and_backward": "fwd + backward",
    "backward_only": "backward only",
}
MAX_ACCUMULATE = 64


@dataclass(frozen=True)
class TrainSpec:
    """``loss_reduction``: ``nn.MSELoss(reduction=…)``. DDP averages the ranks' gradients either
    way, so with ``sum`` the result is the global sum's gradient divided by the world size.

    ``accumulate``: micro-batches per optimizer step (each a fresh batch from the rank's
    loader; ``.grad`` adds them up). ``no_sync``: where the script puts ``with
    model.no_sync():`` on every micro-batch but the last: ``none`` (nowhere),
    ``forward_and_backward`` (around both, as the docstring asks) or ``backward_only`` (around
    ``loss.backward()`` alone, the classic mistake). ``scale_loss``: divide each micro-batch's
    loss by ``accumulate`` before backward. ``flags``: the kinds' own flags that are set
    (``checkpoint``, ``overlap_cost``: each kind says what its flag does in its
    ``RunKind.train_flags``)."""

    loss_reduction: str = "mean"
    accumulate: int = 1
    no_sync: str = "none"
    scale_loss: bool = True
    flags: frozenset[str] = frozenset()

    @classmethod
    def from_mapping(cls, data: Any) -> TrainSpec:
        kinds_flags = tuple(registry.train_flags())
        table = spec_table(data, "train", TRAIN_KEYS + kinds_flags)
        values: dict[str, Any] = {}
        if "loss_reduction" in table:
            values["loss_reduction"] = choice(
                "train.loss_reduction", table["loss_reduction"], REDUCTIONS
            )
        if "accumulate" in table:
            values["accumulate"] = whole("train.accumulate", table["accumulate"], 1, MAX_ACCUMULATE)
        if "no_sync" in table:
            values["no_sync"] = choice("train.no_sync", table["no_sync"], PLACEMENTS)
        if "scale_loss" in table:
            values["scale_loss"] = flag("train.scale_loss", table["scale_loss"])
        on = {n for n in kinds_flags if n in table and flag(f"train.{n}", table[n])}
        return cls(**values, flags=frozenset(on))

    def to_dict(self) -> dict[str, Any]:
        core = {k: getattr(self, k) for k in TRAIN_KEYS}
        return core | {name: name in self.flags for name in sorted(registry.train_flags())}

    def flag(self, name: str) -> bool:
        """Whether the kinds' ``[train]`` flag ``name`` is set."""
        return name in self.flags

    @property
    def loss_scale(self) -> float:
        """What each micro-batch's loss is multiplied by before backward."""
        return 1.0 / self.accumulate if self.scale_loss else 1.0
