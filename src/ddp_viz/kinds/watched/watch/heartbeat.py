"""A watched rank's heartbeat: every ``BEAT_S``, from a daemon thread, where the rank is.

The beat says the step, a counter that moves with every collective and step, the collective
the rank is inside and the last it issued (:mod:`.collectives`). Once the rank has not moved
for half the hang threshold it also carries the main thread's Python stack
(``sys._current_frames``), so the listener has every rank's stack by the time it names a hang.
The thread reads a few attributes per beat; the training's own thread does nothing for it.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import statistics
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable

import ddp_viz
from ddp_viz.kinds.watched.doctor import hang_threshold, threshold_from_env
from ddp_viz.kinds.watched.events import WatchBeat
from ddp_viz.kinds.watched.watch.calls import CALLS
from ddp_viz.model import protocol

_OURS = os.path.dirname(os.path.abspath(ddp_viz.__file__)) + os.sep  # ddp_viz's frames
BEAT_S = 0.5
# a step's start beats at once (at most this often): a rank killed in a step is then known to
# its peers' and its own beats as in that step, not in the one before (half a second stale)
MIN_GAP_S = 0.05
STACK_FRAMES = 12  # the innermost frames of a stack; a rank's stack is read only when stuck
RUN = 1


def stack_of(thread_id: int | None) -> list[str]:
    """A thread's Python stack, innermost last: ``file:line in function: code`` per frame."""
    frame = sys._current_frames().get(thread_id) if thread_id is not None else None
    if frame is None:
        return []
    out = []
    frames = [fs for fs in traceback.extract_stack(frame) if not fs.filename.startswith(_OURS)]
    for fs in frames[-STACK_FRAMES:]:
        where = f"{os.path.basename(fs.filename)}:{fs.lineno} in {fs.name}"
        out.append(f"{where}: {fs.line.strip()}" if fs.line else where)
    return out


class Heartbeat:
    """Beats for one rank until :meth:`stop`; ``send`` takes each beat's line."""

    def __init__(self, rank: int, send: Callable[[str], None]) -> None:
        self.rank, self.send = rank, send
        self.begun = 0  # steps begun (forwards of the watched DDP)
        self.starts: deque[float] = deque(maxlen=33)  # the latest steps' forward times
        self.main = threading.main_thread().ident
        self.fixed = threshold_from_env(os.environ)
        self._stop = threading.Event()
        self._wake = threading.Event()
        CALLS.wake = self._wake.set
        self._moved = (-1, time.monotonic())  # the counter, and when it last changed
        self._thread = threading.Thread(target=self._run, name="ddp-viz-heartbeat", daemon=True)
        self._thread.start()

    def stepped(self, now: float) -> None:
        """A forward began (the training's thread: one append)."""
        self.starts.append(now)
        self.begun += 1
        CALLS.progress += 1
        self._wake.set()

    def step_s(self) -> float:
        starts = list(self.starts)
        gaps = [b - a for a, b in itertools.pairwise(starts)]
        return statistics.median(gaps) if gaps else math.nan

    def beat(self) -> WatchBeat:
        now = time.monotonic()
        moved, at = self._moved
        if CALLS.progress != moved:
            self._moved = moved, at = CALLS.progress, now
        step_s = self.step_s()
        inside = CALLS.inside()
        stuck = now - at >= hang_threshold(step_s, self.fixed) / 2
        return WatchBeat(
            RUN,
            self.rank,
            self.begun,
            CALLS.progress,
            step_s,
            inside.word(now) if inside is not None else None,
            CALLS.last.word() if CALLS.last is not None else None,
            stack_of(self.main) if stuck else [],
        )

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(BEAT_S - MIN_GAP_S)
            self._wake.clear()
            if self._stop.is_set():
                return
            with contextlib.suppress(Exception):  # a beat never raises into anything
                self.send(protocol.encode(self.beat()))
            self._stop.wait(MIN_GAP_S)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
