"""Events of an evaluation run (``[evaluation]``). Pure model layer; defining them registers
them (:mod:`ddp_viz.model.event_base`).

A run sends, per rank: the dropout masks of the first training step under each way of
seeding (:class:`DropoutMask`); its share of the held-out rows as its ``DistributedSampler``
handed it, and which of its predictions were right (:class:`EvalShare`); what the ranks'
all-reduces made of them (:class:`EvalNumbers`); heartbeats while it waits in the rank-0-only
evaluation (:class:`EvalWait`) and how each attempt ended (:class:`EvalOutcome`). Rank 0 also
sends the held-out rows and the trained model's state with a one-process float64 evaluation
of them (:class:`EvalReference`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from ddp_viz.model.event_base import Event

Seeding = Literal["same", "seed_plus_rank"]
Attempt = Literal["wrapper", "module"]


@dataclass(frozen=True)
class DropoutMask(Event):
    """The first training step's dropout mask on one rank (1: the unit was kept), rows of the
    rank's batch by hidden units, after ``torch.manual_seed(seed)`` (``same``) or
    ``torch.manual_seed(seed + rank)`` (``seed_plus_rank``) on every rank. ``weights`` is a
    CRC-32 of the model's parameters after that step (equal on every rank: DDP kept them so)."""

    kind: ClassVar[str] = "dropout_mask"
    run: int
    rank: int
    seeding: Seeding
    seed: int
    mask: list[list[int]]
    weights: str


@dataclass(frozen=True)
class EvalShare(Event):
    """One rank's share of the held-out rows: ``indices`` exactly as its
    ``DistributedSampler`` yielded them, ``padding[i]`` whether place i is one the sampler
    added to even the shares out (its place in the padded list is past the last row), and
    ``correct[i]`` whether the rank's float32 prediction of that row was right."""

    kind: ClassVar[str] = "eval_share"
    run: int
    rank: int
    indices: list[int]
    padding: list[bool]
    correct: list[bool]


@dataclass(frozen=True)
class EvalNumbers(Event):
    """What one rank computed: its own right answers and rows with the padding (``own``) and
    without it (``own_kept``), each ``[right, rows]``; the mean of every rank's accuracy on its
    rows without the padding (an all-reduce of accuracies divided by the world size); and the
    all-reduced sums ``[right, rows]`` over the padded shares and without the padding."""

    kind: ClassVar[str] = "eval_numbers"
    run: int
    rank: int
    own: list[float]
    own_kept: list[float]
    mean_of_ranks: float
    padded_sums: list[float]
    kept_sums: list[float]


@dataclass(frozen=True)
class EvalReference(Event):
    """Rank 0, after training: the held-out rows (``x``, labels ``y``), the model's state
    (every parameter and buffer, flattened, by name) and a float64 copy of that model
    evaluated on every row once, in one process: its right answers out of ``rows``."""

    kind: ClassVar[str] = "eval_reference"
    run: int
    x: list[list[float]]
    y: list[int]
    state: dict[str, list[float]]
    correct: list[bool]
    rows: int


@dataclass(frozen=True)
class EvalWait(Event):
    """A heartbeat from a rank blocked in an attempt (``attempt``): the innermost Python frames
    of its main thread (``where``, innermost first, ``function (file:line)``), blocked since
    ``since``, sent at ``now`` (monotonic seconds, the rank's own clock)."""

    kind: ClassVar[str] = "eval_wait"
    run: int
    rank: int
    attempt: Attempt
    where: list[str]
    since: float
    now: float


@dataclass(frozen=True)
class EvalOutcome(Event):
    """How one rank's part of an attempt ended after ``seconds``: ``error`` is the exception's
    words when it raised ("" when it completed); ``what`` is what the rank did (``forward
    through DDP``, ``model.module forward``, ``barrier``); ``accuracy`` is rank 0's accuracy on
    every held-out row when it evaluated them (-1 otherwise)."""

    kind: ClassVar[str] = "eval_outcome"
    run: int
    rank: int
    attempt: Attempt
    what: str
    seconds: float
    error: str
    accuracy: float = -1.0
