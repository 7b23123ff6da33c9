"""Events of a watched run (a user's own DDP script under ``ddp-viz watch``), added by the
listener around what the ranks send. Pure model layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, TypedDict

from ddp_viz.model.event_base import Event

# the kind's id: the lesson word a watched run's recording names (its page, not a lesson of
# the course)
KIND = "watched"
# 2: a failure names the thread it was raised in, when not the main one
# 3: a rank's exit says whether torchrun saw it before it began stopping its workers; a rank
# says when gradients reached its DDP's parameters though DDP's forward never ran
# 4: a collective names its tensors' dtypes when one is not float32, and its subgroup's ranks
# (a subgroup's collectives are numbered apart, per group)
EVENTS_VERSION = 4


def _thread_added(obj: dict[str, Any]) -> dict[str, Any]:
    """Version 1 to 2 only gave a failure its ``thread`` (default "": the main thread, the
    only one version 1 reported): an event of 1 is one of 2."""
    return obj


def _first_added(obj: dict[str, Any]) -> dict[str, Any]:
    """Version 2 to 3 gave a rank's exit its ``first`` (default False: not known, which
    version 2's doctor assumed of every SIGTERM) and added an event: one of 2 is one of 3."""
    return obj


def _dtypes_added(obj: dict[str, Any]) -> dict[str, Any]:
    """Version 3 to 4 let a collective name its tensors' dtypes (absent: float32, or not
    known, which version 3's doctor assumed of every call) and its subgroup (absent: every
    rank's, as version 3 numbered every call): a call of 3 is one of 4."""
    return obj


UPGRADES = {1: _thread_added, 2: _first_added, 3: _dtypes_added}


@dataclass(frozen=True)
class WatchedRank(Event):
    """A rank proved the token and joined: where it runs, and how far its monotonic clock is
    ahead of the listener's (every time it sends is shifted by this, so all ranks of all
    hosts share the listener's clock)."""

    kind: ClassVar[str] = "watched_rank"
    run: int
    rank: int
    host: str
    pid: int
    local_rank: int
    world_size: int
    clock_offset_s: float
    round_trip_s: float


@dataclass(frozen=True)
class WatchSummary(Event):
    """What the listener refused or lost, counted, when the watched command ended."""

    kind: ClassVar[str] = "watch_summary"
    run: int
    exit_code: int
    refused: dict[str, int] = field(default_factory=dict)  # reason -> connections
    bad_lines: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # rank -> events its queue dropped
    stopped: bool = False  # the user stopped it (Ctrl-C, or the window closed): no crash


@dataclass(frozen=True)
class WatchDropped(Event):
    """A watched rank's last word: how many of its events its bounded queue dropped (a slow or
    gone listener never slows the training; what it could not take is counted instead)."""

    kind: ClassVar[str] = "watch_dropped"
    run: int
    rank: int
    dropped: int
    steps: int = -1  # steps the rank began in all (-1: an older recording, not said)


# --- the doctor: what a rank is doing, and what went wrong (schema 3) ----------------------
# point to point: a call between two ranks, which the others do not make (and not numbered
# with the collectives, which every rank of the group makes in the same order)
P2P_OPS = frozenset({"send", "recv", "isend", "irecv", "batch_isend_irecv"})
# rooted collectives whose root receives (the others' roots send: broadcast, scatter)
TO_ROOT = frozenset({"reduce", "gather", "gather_object"})


class _CallKeys(TypedDict):
    seq: int  # the rank's own count of the collectives it issued, from 1 (of its p2p calls)
    op: str  # all_reduce, barrier, … ("all_reduce" for DDP's gradient buckets too)
    site: str  # the script's line that issued it: file:line in function


# total=False rather than NotRequired: postponed annotations hide NotRequired from Python 3.11
class CommCall(_CallKeys, total=False):
    """One collective a watched rank issued: its place in the rank's sequence, its op, the
    shapes of its tensors, the script's call site; DDP's bucket index for a gradient bucket,
    the step it belongs to, and how long the rank has been inside it (while it is)."""

    sizes: list[list[int]]
    bucket: int
    step: int  # the step it belongs to, from 0
    for_s: float
    peer: int  # a point-to-point call's other rank (-1: any, a recv without src)
    root: int  # a rooted collective's root as this rank named it (broadcast's src, reduce's dst)
    dtypes: list[str]  # beside sizes, each tensor's dtype, sent when one is not float32
    group: list[int]  # a subgroup's ranks (its calls numbered apart, per group); absent: all


@dataclass(frozen=True)
class WatchBeat(Event):
    """A rank's heartbeat (every half second, from a thread of its own): the step it is on, a
    counter that moves whenever it starts or ends a collective or a step, the collective it is
    inside (or none) and the last it issued; its main thread's Python stack, innermost last,
    once it has not moved for a while. The listener reads beats and records none of them: it
    turns them into a :class:`WatchHang` when no rank moves."""

    kind: ClassVar[str] = "watch_beat"
    run: int
    rank: int
    step: int  # steps begun (forwards of the watched DDP): 3 in the third step or just after
    progress: int
    step_s: float  # the rank's median step time lately (NaN: no step yet)
    inside: CommCall | None = None
    last: CommCall | None = None
    stack: list[str] = field(default_factory=list)


class _StuckKeys(TypedDict):
    rank: int
    state: str  # "inside" a collective, "outside" any, "gone" (its process vanished), "ended"


class StuckRank(_StuckKeys, total=False):
    """One rank in a hang: what it is in, the last collective it issued, its stack."""

    step: int  # steps it had begun
    inside: CommCall
    last: CommCall
    stack: list[str]
    quiet_s: float  # how long since it last moved


@dataclass(frozen=True)
class WatchHang(Event):
    """No rank moved for ``stalled_s`` (the threshold was ``threshold_s``): where each rank
    was. :mod:`ddp_viz.kinds.watched.doctor` says it in words."""

    kind: ClassVar[str] = "watch_hang"
    run: int
    stalled_s: float
    threshold_s: float
    ranks: list[StuckRank]


@dataclass(frozen=True)
class WatchRankLost(Event):
    """A rank's connection closed without its last word: its process was killed or crashed.
    ``step`` is the step it was on, ``inside`` the collective it was in, by its last beat."""

    kind: ClassVar[str] = "watch_rank_lost"
    run: int
    rank: int
    pid: int
    step: int  # steps it had begun
    inside: CommCall | None = None
    last: CommCall | None = None


@dataclass(frozen=True)
class WatchAround(Event):
    """Gradients reached this rank's DDP parameters though DDP's forward had never run: the
    script's forward went around DDP (``model.module(x)``, or the model it wrapped), and DDP
    averages a step's gradients only after its own forward prepared it, so it averaged none.
    ``site`` is the script's line that ran the backward."""

    kind: ClassVar[str] = "watch_around"
    run: int
    rank: int
    site: str


@dataclass(frozen=True)
class WatchNeverSynced(Event):
    """At this rank's end: every one of its ``backwards`` followed a forward run inside
    ``model.no_sync()``, so DDP all-reduced none of them. ``site`` is the script's line of the
    first such forward."""

    kind: ClassVar[str] = "watch_never_synced"
    run: int
    rank: int
    backwards: int
    site: str


@dataclass(frozen=True)
class WatchNonFinite(Event):
    """The first step at which this rank's loss (the scalar it called ``backward`` on) or one
    of its local gradients held a NaN or an infinity, and which tensors did."""

    kind: ClassVar[str] = "watch_non_finite"
    run: int
    step: int
    rank: int
    loss: float | None
    tensors: list[str]


@dataclass(frozen=True)
class WatchDigests(Event):
    """A CRC-32 of every parameter's and buffer's bytes on this rank as it enters ``step``
    (after DDP's buffer broadcast, before the forward): ranks in sync hold equal digests.
    Sent with the steps captured in full."""

    kind: ClassVar[str] = "watch_digests"
    run: int
    step: int
    rank: int
    digests: dict[str, str]


class ParamShape(TypedDict):
    """A parameter of the model a rank built: its name and shape."""

    name: str
    shape: list[int]


@dataclass(frozen=True)
class WatchFailure(Event):
    """A watched rank raised and did not catch it: what, where in the user's code (its
    innermost frame outside torch and ddp-viz), at which step, and when (the listener's
    clock: the first failure across ranks is the cause). Sent by the rank's exception hook
    before its process exits. ``no_grad`` names the parameters that got no gradient in the
    rank's step before (DDP's "Expected to have finished reduction" is about them);
    ``params`` the model's parameters and shapes where DDP's construction failed."""

    kind: ClassVar[str] = "watch_failure"
    run: int
    rank: int
    step: int  # steps begun (as WatchBeat's), 0 before the first forward
    at: float  # when the hook ran, on the rank's clock (moved onto the listener's)
    type: str
    message: str
    site: str  # "train.py:52 in main", the innermost frame in the user's code ("?": none)
    stack: list[str] = field(default_factory=list)  # the user's frames, innermost last
    inside: CommCall | None = None  # the collective it was inside, if any
    no_grad: list[str] = field(default_factory=list)
    params: list[ParamShape] = field(default_factory=list)  # at DDP's construction
    # raised in a thread other than the main one: its name. The thread ended, not the rank
    # (Python prints it and goes on), and what the rank then does tells whether it mattered
    thread: str = ""


@dataclass(frozen=True)
class WatchExit(Event):
    """How a rank's process ended, as its launcher (torchrun) saw it: the exit status, or
    the signal that killed it (negative status), and when (the launcher's wall clock).
    torchrun reports only processes that did not exit with 0."""

    kind: ClassVar[str] = "watch_exit"
    run: int
    rank: int
    pid: int
    exitcode: int
    signal: str = ""  # "SIGKILL", … for a negative status
    at: float = 0.0
    # seen before torchrun began stopping its workers: one of the exits that made it stop
    # them, so a SIGTERM then came from outside torchrun (False: after, or not known)
    first: bool = False
