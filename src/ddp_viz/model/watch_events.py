"""Events of a watched run (a user's own DDP script under ``ddp-viz watch``), added by the
listener around what the ranks send. Pure model layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ddp_viz.model.event_base import Event


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


@dataclass(frozen=True)
class WatchDropped(Event):
    """A watched rank's last word: how many of its events its bounded queue dropped (a slow or
    gone listener never slows the training; what it could not take is counted instead)."""

    kind: ClassVar[str] = "watch_dropped"
    run: int
    rank: int
    dropped: int
