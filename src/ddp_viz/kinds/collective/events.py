"""Events of a collective run (``[collective]``): the all-reduce by hand, chunk by chunk.

Pure model layer; :mod:`ddp_viz.model.protocol` lists them with the others. Vectors travel as
lists up to 64 values and as summaries above (``ddp_viz.model.tensors``); times are seconds
of the machine's monotonic clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from ddp_viz.model.event_base import Event, Values


@dataclass(frozen=True)
class CollectiveInput(Event):
    """A rank's vector before any all-reduce, and the chunks the ring cuts it into."""

    kind: ClassVar[str] = "collective_input"
    run: int
    rank: int
    values: Values
    chunks: list[list[int]] = field(default_factory=list)  # [start, stop) per chunk
    # the first values of every chunk (up to 8): what the stage shows of a long vector, whose
    # ``values`` travel as a summary
    heads: list[list[float]] = field(default_factory=list)


@dataclass(frozen=True)
class RingStep(Event):
    """One rank in one ring step: the chunk it sent to ``to`` and the one it received from
    ``source``; ``chunk`` is the received chunk's values on this rank after the step (added
    to its own in reduce-scatter, copied in all-gather)."""

    kind: ClassVar[str] = "ring_step"
    run: int
    step: int
    rank: int
    phase: Literal["reduce_scatter", "all_gather"]
    sent: int
    to: int
    received: int
    source: int
    bytes_sent: int
    bytes_received: int
    chunk: Values
    started: float
    finished: float


@dataclass(frozen=True)
class NaiveStep(Event):
    """One rank in one step of the naive all-reduce: step 0 gathers every vector on rank 0,
    step 1 sends the sum back."""

    kind: ClassVar[str] = "naive_step"
    run: int
    step: int
    rank: int
    sent_to: list[int]
    received_from: list[int]
    bytes_sent: int
    bytes_received: int
    started: float
    finished: float


@dataclass(frozen=True)
class CollectiveResult(Event):
    """A rank's result of one algorithm (``naive``, ``ring`` or ``all_reduce``), whether it
    equals ``dist.all_reduce``'s bit for bit, and the bytes the rank sent and received."""

    kind: ClassVar[str] = "collective_result"
    run: int
    rank: int
    algo: str
    values: Values
    equal: bool
    bytes_sent: int
    bytes_received: int
    seconds: float


@dataclass(frozen=True)
class CollectiveTiming(Event):
    """Rank 0's measurement: the median over ``repeats`` of the slowest rank's time for one
    all-reduce of ``length`` values with ``algo``."""

    kind: ClassVar[str] = "collective_timing"
    run: int
    algo: str
    length: int
    seconds: float
    repeats: int = 1
