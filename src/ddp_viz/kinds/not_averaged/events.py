"""Events about what DDP does not average: buffers, parameters that get no gradient, and the
checkpoint a script saves (pure; defining them registers them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

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
    action: Literal["saved", "loaded"]
    sha256: str
    size: int
    same_params: bool = True
    replaced: list[str] | None = None


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
