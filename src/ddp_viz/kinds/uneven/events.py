"""Events of a run with uneven inputs (``[uneven]``): ranks running out of batches, waiting in
a collective that does not match, the timeout's error, and Join's shadow all-reduces.

Pure model layer; :mod:`ddp_viz.model.protocol` lists them with the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ddp_viz.model.event_base import Event, Grads


@dataclass(frozen=True)
class OutOfData(Event):
    """A rank trained all its batches (``steps``) and left its loop: with Join it now
    shadows the others' all-reduces; without, it goes on to the script's next collective."""

    kind: ClassVar[str] = "out_of_data"
    run: int
    rank: int
    steps: int
    joined: bool


@dataclass(frozen=True)
class Waiting(Event):
    """A heartbeat from a rank blocked in a collective: ``what`` (``all-reduce`` inside
    backward, or ``barrier``), blocked since ``since``, sent at ``now`` (monotonic seconds)."""

    kind: ClassVar[str] = "waiting"
    run: int
    rank: int
    what: str
    since: float
    now: float


@dataclass(frozen=True)
class HangCheck(Event):
    """How a rank's process group looks for a hang, read from the group once it exists:
    ``debug`` the scenario asked for, ``level`` torch's debug level (``dist.get_debug_level()``)
    and ``backend`` the class of the group's CPU backend (``_ProcessGroupWrapper`` when DETAIL
    wrapped gloo's, so that every collective is checked first)."""

    kind: ClassVar[str] = "hang_check"
    run: int
    rank: int
    debug: str
    level: str
    backend: str


@dataclass(frozen=True)
class Stalled(Event):
    """A rank's wait ended with an error, word for word: the process group's timeout, a peer
    closing the connection, DETAIL's mismatch check or ``monitored_barrier``'s; ``waited_s``
    from entering the collective to the error."""

    kind: ClassVar[str] = "stalled"
    run: int
    rank: int
    what: str
    waited_s: float
    error: str


@dataclass(frozen=True)
class JoinShadow(Event):
    """A finished rank's contribution to another rank's step under Join: the buckets its DDP
    hook all-reduced (zeros, from the comm hook) and the averaged result it got back."""

    kind: ClassVar[str] = "join_shadow"
    run: int
    step: int
    rank: int
    grads: Grads
    averaged: Grads


@dataclass(frozen=True)
class FinalParams(Event):
    """A rank's parameters after its loop and the barrier after it: under Join, what DDP's
    join hook copied from the last rank to finish; without Join, the last step's."""

    kind: ClassVar[str] = "final_params"
    run: int
    rank: int
    params: Grads
    # rank 0 under Join: the same run in one float64 process (a labelled reference)
    one_process: Grads | None = None
