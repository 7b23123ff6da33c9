"""Uneven inputs on real ranks: who is blocked in which collective, and for how long.

A rank blocked in gloo cannot report from its main thread, so a small thread beats every
quarter second while a collective has been outstanding for over half a second: an all-reduce
the comm hook launched and has not seen come back, or a barrier the script entered. The
beats are real waits, measured in the rank; the stage shows their latest value.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ddp_viz.engine.tensors import encode_all
from ddp_viz.model import protocol
from ddp_viz.model.uneven_events import JoinShadow, Stalled, Waiting

BEAT_S = 0.25
QUIET_S = 0.5  # a normal step's all-reduce takes milliseconds: no beats for those


@dataclass
class WaitState:
    """What the rank's main thread is blocked in, if the script says (a barrier); all-reduces
    are read from the comm hook's outstanding buckets."""

    what: str = ""
    since: float = 0.0
    outstanding: dict[int, float] = field(default_factory=dict)  # bucket -> launched
    completed: int = 0  # steps this rank finished

    def enter(self, what: str) -> None:
        self.since = time.monotonic()  # before ``what``: a beat never sees a stale start
        self.what = what

    def leave(self) -> None:
        self.what = ""

    def current(self) -> tuple[str, float] | None:
        if self.what:
            return self.what, self.since
        pending = dict(self.outstanding)  # the hook's callbacks change it from gloo's thread
        if pending:
            return "all-reduce", min(pending.values())
        return None


class Heartbeat:
    """Beats ``Waiting`` events through ``send`` (which must be safe to call from here)."""

    def __init__(
        self, run: int, rank: int, state: WaitState, send: Callable[[dict[str, Any]], None]
    ):
        self.run, self.rank, self.state, self.send = run, rank, state, send
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="ddp-viz-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    def _beat(self) -> None:
        while not self._stop.wait(BEAT_S):
            waiting = self.state.current()
            now = time.monotonic()
            if waiting is None or now - waiting[1] < QUIET_S:
                continue
            event = Waiting(self.run, self.rank, waiting[0], waiting[1], now)
            self.send({"ctl": "lines", "text": protocol.encode(event) + "\n"})


def locked(send: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """``send`` made safe to call from the heartbeat thread and the main thread at once."""
    lock = threading.Lock()

    def safe(message: dict[str, Any]) -> None:
        with lock:
            send(message)

    return safe


CALLBACK = "Got the following error when running the callback: RuntimeError: "


def report_stall(run: int, rank: int, waits: WaitState, exc: Exception, outbox: Any) -> None:
    """The wait the timeout ended, with gloo's words: without the Python stack after them,
    without the future callbacks' wrapping around them, and without an emoji no stage font
    draws. Whichever rank's timeout fires first closes gloo's connection, so its peer may
    report "Connection closed by peer" instead of a timeout of its own: both are gloo's."""
    waiting = waits.current() or ("a collective", time.monotonic())
    error = str(exc).split("\n\nAt:")[0].replace(CALLBACK, "").strip()
    error = "".join(c for c in error if ord(c) <= 0xFFFF).strip()
    outbox.add(Stalled(run, rank, waiting[0], time.monotonic() - waiting[1], error))
    outbox.control({"ctl": "done", "steps": waits.completed})


def report_shadows(
    run: int, rank: int, first: int, steps: list[tuple[dict, dict]], outbox: Any
) -> None:
    """Join's shadow all-reduces of a rank that ran out at step ``first``, one event a step."""
    for i, (local, averaged) in enumerate(steps):
        local_values = encode_all(local, False)
        averaged_values = encode_all(averaged)
        outbox.add(JoinShadow(run, first + i, rank, local_values, averaged_values))
    outbox.flush()
