"""Events about what DDP does not average: buffers, parameters that get no gradient, the
checkpoint a script saves, and the environment a launcher gives each rank.

Pure model layer; :mod:`ddp_viz.model.protocol` lists them with the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from ddp_viz.model.event_base import Event, Grads


@dataclass(frozen=True)
class BufferValues(Event):
    """A rank's floating-point buffers (BatchNorm's running statistics) in one step: as its
    module's forward began (after DDP's broadcast, when it broadcasts) and after it returned."""

    kind: ClassVar[str] = "buffers"
    run: int
    step: int
    rank: int
    before: Grads
    after: Grads


@dataclass(frozen=True)
class ReducerError(Event):
    """DDP's reducer refused to start a step: its error, word for word, and the parameters it
    names (from the indices in its text, mapped to ``named_parameters()`` names)."""

    kind: ClassVar[str] = "reducer_error"
    run: int
    step: int
    rank: int
    error: str
    unused: list[str]


@dataclass(frozen=True)
class Checkpoint(Event):
    """One part of saving a checkpoint as scripts do: rank 0 ``saved`` its ``state_dict()``;
    after a barrier, every rank ``loaded`` it with ``map_location``. ``sha256`` and ``size``
    are the file's as that rank read or wrote it; ``same_params``: the loaded parameters equal
    the rank's own bit for bit; ``replaced``: the buffers whose values the load changed."""

    kind: ClassVar[str] = "checkpoint"
    run: int
    rank: int
    action: str  # "saved" | "loaded"
    sha256: str
    size: int
    same_params: bool = True
    replaced: list[str] | None = None


@dataclass(frozen=True)
class LaunchEnv(Event):
    """The variables a launcher such as ``torchrun`` sets, as the rank read them when
    ``init_process_group`` used them (``init_method``: ``env://`` or ``file://``)."""

    kind: ClassVar[str] = "launch_env"
    run: int
    rank: int
    init_method: str
    env: dict[str, str]


@dataclass(frozen=True)
class UnusedCost(Event):
    """What ``find_unused_parameters=True`` cost in this run: seconds per training step
    (forward, backward with its all-reduce, optimizer step), timed alternately on two fresh
    copies of the model: with the flag as the run trains it, and without it, where ``aux``
    must be used for the model to train at all."""

    kind: ClassVar[str] = "unused_cost"
    run: int
    rank: int
    with_flag: list[float]
    without_flag: list[float]
    # the first steps of each copy, counted under the profiler (not timed): every all-reduce
    # gloo ran in the step, as [dtype, elements]; an int one is the used-parameter bitmap
    allreduces_with: list[list[list[Any]]] = field(default_factory=list)
    allreduces_without: list[list[list[Any]]] = field(default_factory=list)


@dataclass(frozen=True)
class BackwardCost(Event):
    """What DDP's overlapped all-reduces cost backward on this rank (``[train] overlap_cost``):
    after the loop, on the run's model and batch, backward passes alternating between DDP's
    all-reduces (the run's comm hook) and ``no_sync()`` (no all-reduce at all), no optimizer
    step. Each pass as ``[start, last gradient ready, returned]`` (monotonic seconds) and the
    number of buckets the comm hook all-reduced in it (none under ``no_sync()``)."""

    kind: ClassVar[str] = "backward_cost"
    run: int
    rank: int
    synced: list[list[float]]
    alone: list[list[float]]
