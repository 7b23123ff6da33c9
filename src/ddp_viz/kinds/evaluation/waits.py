"""Where a blocked rank waits, said by the rank itself (no torch, no Qt).

A rank blocked in gloo cannot report from its main thread, so a small thread beats every
quarter second once an attempt has run for over half a second: it reads the main thread's
Python stack (``sys._current_frames``) and sends the innermost frames. The rank waiting in
DDP's buffer broadcast then says so in torch's own function names and lines, and a rank
waiting in a barrier says ``barrier``: nothing is inferred from the script.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from ddp_viz.kinds.evaluation.events import Attempt, EvalWait

BEAT_S = 0.25
QUIET_S = 0.5  # an attempt that ends in milliseconds sends no beats
DEPTH = 6  # frames a beat carries, innermost first


class LockedOutbox:
    """An outbox two threads may use: the program's and the heartbeat's."""

    def __init__(self, outbox: Any) -> None:
        self._outbox = outbox
        self._lock = threading.Lock()

    def add(self, *events: Any, now: bool = False) -> None:
        with self._lock:
            self._outbox.add(*events, now=now)

    def flush(self) -> None:
        with self._lock:
            self._outbox.flush()


def short(path: str) -> str:
    """A frame's file, from the package it belongs to (``torch/nn/parallel/distributed.py``),
    with ``/`` between names on every system (Windows' frames spell ``\\``)."""
    path = path.replace("\\", "/")
    for marker in ("site-packages/", "/src/"):
        if marker in path:  # the last: a checkout under ~/src/ has its own src/ after it
            return path.rsplit(marker, 1)[1]
    return path.rsplit("/", 1)[-1]


def frames_of(thread_id: int, stop: str = "") -> list[str]:
    """The innermost Python frames of thread ``thread_id``: ``function (file:line)``, innermost
    first, up to :data:`DEPTH` or the first frame in a file ending with ``stop`` (included).
    torch's logging wrapper around its collectives is left out: it names nothing."""
    frame = sys._current_frames().get(thread_id)
    out: list[str] = []
    while frame is not None and len(out) < DEPTH:
        code = frame.f_code
        path = short(code.co_filename)
        if not (code.co_name == "wrapper" and path.endswith("c10d_logger.py")):
            out.append(f"{code.co_qualname} ({path}:{frame.f_lineno})")
        if stop and path.endswith(stop):
            break
        frame = frame.f_back
    return out


class Heartbeat:
    """Beats :class:`EvalWait` events for the thread that enters it, while it is inside."""

    def __init__(
        self, run: int, rank: int, attempt: Attempt, outbox: LockedOutbox, stop: str = ""
    ) -> None:
        self.run, self.rank, self.attempt, self.outbox, self.stop = run, rank, attempt, outbox, stop
        self.since = 0.0
        self.beats = 0
        self._main = threading.get_ident()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="ddp-viz-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self.outbox.flush()  # what came before reaches the window before the wait
        self._main = threading.get_ident()
        self.since = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(timeout=2)

    def _beat(self) -> None:
        while not self._done.wait(BEAT_S):
            now = time.monotonic()
            if now - self.since < QUIET_S:
                continue
            where = frames_of(self._main, self.stop)
            # the wait is over (the main thread is back in the script, or joining this
            # thread): a beat only says where a rank waits inside torch
            if self._done.is_set() or not where or not where[0].split("(")[-1].startswith("torch/"):
                continue
            event = EvalWait(self.run, self.rank, self.attempt, where, self.since, now)
            self.outbox.add(event, now=True)
            self.beats += 1


def clean_error(exc: BaseException) -> str:
    """An exception's words as gloo or torch wrote them: without the Python stack after them
    and without characters no stage font draws."""
    text = str(exc).split("\n\nAt:")[0].strip()
    return "".join(c for c in text if ord(c) <= 0xFFFF).strip()[:600]


def timed(call: Callable[[], Any]) -> tuple[float, str]:
    """Run ``call``; the seconds it took and the error it raised ("" when none)."""
    start = time.monotonic()
    try:
        call()
    except RuntimeError as exc:  # gloo's timeout (DistBackendError is a RuntimeError)
        return time.monotonic() - start, clean_error(exc)
    return time.monotonic() - start, ""
