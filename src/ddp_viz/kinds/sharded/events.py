"""Events of a sharded run (``[sharded]``): one model trained with DDP, ZeRO-1 and FSDP2.

Pure model layer. Every rank reports, for every way and every step, what it holds and how
far its parameters are from plain DDP's (:class:`ShardedStep`), and every collective it issued
in that step, in order (:class:`ShardedCollective`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from ddp_viz.model.event_base import Event

WayWord = Literal["ddp", "zero", "fsdp"]


@dataclass(frozen=True)
class ShardedStep(Event):
    """One rank, one way, one step (from 0), after ``optimizer.step()``.

    ``params``, ``grads`` and ``state`` are the bytes the rank holds, counted from its tensors
    (a DTensor's local shard); ``gathered`` the most bytes of whole (all-gathered) parameters
    FSDP held at once beside the shards during the step, at the moment ``gathered_at`` names.
    ``owned[name]`` is [first row, rows] of the parameter whose optimizer state this rank
    keeps. ``param_diff`` is the largest ``|p − p_DDP|`` over every element of the full
    (gathered) parameters; ``grad_diff`` the largest difference between the gradient this
    rank holds and the matching rows of DDP's averaged gradient (0 for DDP itself).
    """

    kind: ClassVar[str] = "sharded_step"
    run: int
    rank: int
    way: WayWord
    step: int
    loss: float
    params: int
    grads: int
    state: int
    gathered: int
    gathered_at: str
    owned: dict[str, list[int]]
    param_diff: float
    grad_diff: float


@dataclass(frozen=True)
class ShardedCollective(Event):
    """One collective a rank issued in one step of one way, as torch.distributed was called.

    ``seq`` is its place in the rank's step (from 0); ``phase`` the part of the step that
    issued it; ``layer`` the layer it serves ("" when it spans layers, as a DDP bucket can);
    ``tensors`` the parameters in it. ``bytes_in`` is what the rank handed in, ``bytes_out``
    what it got back; ``start`` and ``end`` are seconds since the step began (the end of an
    asynchronous call is when its work completed); ``src`` a broadcast's source rank (-1).
    """

    kind: ClassVar[str] = "sharded_collective"
    run: int
    rank: int
    way: WayWord
    step: int
    seq: int
    op: Literal["all_reduce", "broadcast", "all_gather", "reduce_scatter"]
    phase: Literal["forward", "backward", "step"]
    layer: str
    tensors: list[str]
    bytes_in: int
    bytes_out: int
    start: float
    end: float
    src: int = -1
