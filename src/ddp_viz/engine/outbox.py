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
event of the Linear model and orjson 2, on a step of about 1.5 ms. So are a step's value
events when every float in them is finite: the buckets MLP's three took 270 µs of a 5 ms
step by the standard library and 100 by orjson (the Linear model's four, 52 and 40).
orjson writes a non-finite float as ``null``, so a line with one, or anything else orjson
cannot write as the standard library does, goes through :func:`protocol.encode`, whose
strict JSON spells non-finite values as words. The two agree on every line but how a number
is spelled (``1e-05`` or ``0.00001``): the same float.
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
    """:func:`protocol.encode`'s line for ``event``, by orjson where that is safe: every float
    in it finite (a timing's are clock readings) and the line plain ASCII, as the standard
    library writes it. Anything else, or anything orjson refuses (an integer past 64 bits, a
    type it does not know), is written by :func:`protocol.encode`."""
    if orjson is None:  # pragma: no cover - a dependency
        return protocol.encode(event)
    line = protocol.to_dict(event)
    if isinstance(event, protocol.Timing) or _all_finite(line):
        try:
            text = orjson.dumps(line).decode()
        except TypeError:  # orjson.JSONEncodeError is one
            return protocol.encode(event)
        if text.isascii():
            return text
    return protocol.encode(event)


def _all_finite(value: object) -> bool:
    """Whether every float in a JSON value is finite. A list of numbers is summed in one call:
    a NaN or an infinity anywhere makes the sum non-finite (so does a sum that overflows, and
    the line is then written by the strict encoder, which is only slower)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        try:
            return math.isfinite(sum(value))
        except (TypeError, OverflowError):  # lists, strings or dicts inside; a huge integer
            return all(_all_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_all_finite(v) for v in value.values())
    return True  # a string, an integer, a bool or None


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
    def __init__(
        self,
        send: Callable[[dict[str, Any]], None],
        interval_s: float = INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,  # a test's own, never the time module's
    ):
        self._send = send
        self._interval = interval_s
        self._clock = clock
        self._lines: list[str] = []
        self._last = clock()

    def add(self, *events: protocol.Event, now: bool = False) -> None:
        """Queue ``events``; hand everything over if ``now`` or if the interval has passed."""
        self.add_lines([encode(e) for e in events], now=now)

    def add_lines(self, lines: list[str], now: bool = False) -> None:
        """:meth:`add` for events already encoded (:func:`plain_line`)."""
        self._lines += lines
        if now or self._clock() - self._last >= self._interval:
            self.flush()

    def flush(self) -> None:
        if self._lines:
            self._send({"ctl": "lines", "text": "\n".join(self._lines) + "\n"})
            self._lines = []
        self._last = self._clock()

    def control(self, message: dict[str, Any]) -> None:
        """A control message for the launcher, after every event queued before it."""
        self.flush()
        self._send(message)
