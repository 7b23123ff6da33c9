"""A rank's events on their way to the launcher, a few steps at a time.

Each message wakes the launcher and the reader behind it, and on a machine with few cores
those wake-ups take the ranks' cores in the middle of a step. Steps of a small model take a
millisecond or two, so a rank collects its encoded lines and hands them over at most every
``INTERVAL_S``, and at once for the first step, before a control message, and at the end. A
slow step (a big model) still goes out as soon as it is done. The window shows a streaming run
20 times a second, so 50 ms holds nothing back by more than one of its refreshes; at 20 ms the
engine and ``ddp-viz run`` took about 0.57 ms of CPU per step of a 2-rank Linear run between
them, on the cores the ranks train on, and at 50 ms about 0.44 (2,500 steps, twice each way).

The two events every step sends, its timings and (at a step without values) its loss and
buckets, are written by orjson: the standard library's encoder took 50-65 µs for a timing
event of the Linear model and orjson 2, on a step of about 1.5 ms. orjson writes a
non-finite float as ``null``, so it writes only what is finite by construction (clock
readings) or checked (the loss); everything else, tensors included, goes through
:func:`protocol.encode`, whose strict JSON spells non-finite values as words. The two agree
on every line but how an exponent is spelled (``1e-5`` for ``1e-05``): the same number.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from ddp_viz.model import protocol

try:
    import orjson
except ImportError:  # pragma: no cover - a dependency; the standard library writes all then
    orjson = None

INTERVAL_S = 0.05


def encode(event: protocol.Event) -> str:
    """:func:`protocol.encode`'s line for ``event``, by orjson where that is safe."""
    if orjson is not None and (
        isinstance(event, protocol.Timing)
        or (
            isinstance(event, protocol.LocalGrad) and not event.values and math.isfinite(event.loss)
        )
    ):
        return orjson.dumps(protocol.to_dict(event)).decode()
    return protocol.encode(event)


def plain_line(cls: type[protocol.Event], *values: object) -> str:
    """:func:`encode`'s line for ``cls(*values)`` (every field, in order), without building
    the event: for the two events of a step without values, whose fields are clock readings,
    names, row numbers and a loss the caller checked finite. Built only to be turned into a
    dict, the two took about 4 µs of a step's 50 over the floor (a world of one, measured)."""
    if orjson is None:  # pragma: no cover - a dependency
        return protocol.encode(cls(*values))
    line = {"event": cls.kind}  # first: a reader that skims reads the kind at the start
    line.update(zip(protocol.field_names(cls), values, strict=True))
    return orjson.dumps(line).decode()


class Outbox:
    def __init__(self, send: Callable[[dict[str, Any]], None], interval_s: float = INTERVAL_S):
        self._send = send
        self._interval = interval_s
        self._lines: list[str] = []
        self._last = time.monotonic()

    def add(self, *events: protocol.Event, now: bool = False) -> None:
        """Queue ``events``; hand everything over if ``now`` or if the interval has passed."""
        self.add_lines([encode(e) for e in events], now=now)

    def add_lines(self, lines: list[str], now: bool = False) -> None:
        """:meth:`add` for events already encoded (:func:`plain_line`)."""
        self._lines += lines
        if now or time.monotonic() - self._last >= self._interval:
            self.flush()

    def flush(self) -> None:
        if self._lines:
            self._send({"ctl": "lines", "text": "\n".join(self._lines) + "\n"})
            self._lines = []
        self._last = time.monotonic()

    def control(self, message: dict[str, Any]) -> None:
        """A control message for the launcher, after every event queued before it."""
        self.flush()
        self._send(message)
