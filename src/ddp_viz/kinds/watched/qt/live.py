"""A watched run, live in the window: ``ddp-viz watch -- COMMAND`` with the window open.

The listener and the command run on a thread of their own (asyncio, no torch). The listener's
events wait in a queue; a timer on the window's thread hands them to the session a few
milliseconds at a time, as the engine's are, so a fast run never floods the event loop.
Closing the window stops the command's whole process group.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal

from ddp_viz.kinds.watched.watch.command import stop_command, watch_live
from ddp_viz.kinds.watched.watch.relay import Relay
from ddp_viz.model import protocol

DRAIN_EVERY_MS = 16
DRAIN_BUDGET_S = 0.006  # per timer tick: painting keeps its share of the thread
# The watch's thread decodes the ranks' events at this nice, below the window's thread: the
# two share the window process's share of the CPU (each torchrun rank is a session, so a
# scheduling group, of its own), and the thread's bursts as 8 ranks reported held the window's
# frames back. Its events wait in a queue, so a late decode costs nothing the user sees.
# Lowered once the command has started: a process inherits the nice of the thread that starts
# it, and the user's ranks must run at the priority they were given.
WATCH_NICE = 10  # added to the window's own


class LiveWatch(QObject):
    ended = Signal(int)  # the command's exit status, once its last events were handed over

    def __init__(
        self,
        command: list[str],
        record: str | None,
        budget: float | None,
        listen: str = "127.0.0.1:0",
    ) -> None:
        super().__init__()
        self.command, self.record, self.budget, self.listen = command, record, budget, listen
        self.pid: int | None = None
        self.code: int | None = None
        self.deliver: Callable[[protocol.Event], None] = lambda _e: None
        self.relay = Relay()  # the command's output, dropped once the window stops it
        self._events: deque[protocol.Event] = deque()
        self._thread = threading.Thread(target=self._run, name="ddp-viz-watch", daemon=True)
        self._timer = QTimer(self)
        self._timer.setInterval(DRAIN_EVERY_MS)
        self._timer.timeout.connect(self._on_timer_timeout)

    def start(self) -> None:
        self._timer.start()
        self._thread.start()

    def _run(self) -> None:  # the watch's thread
        try:
            code = watch_live(
                self.command, self.record, self.listen, self.budget, self._events.append,
                self._started, relay=self.relay,
            )  # fmt: skip
        except Exception as exc:  # a thread's error must reach the user, not vanish
            print(f"ddp-viz watch: {exc}")
            code = 1
        self.code = code

    def _started(self, pid: int) -> None:  # on the watch's thread, the command started
        self.pid = pid
        if sys.platform == "linux":  # a thread's own nice (elsewhere the id is not a pid)
            me = threading.get_native_id()
            with contextlib.suppress(OSError):
                nice = min(19, os.getpriority(os.PRIO_PROCESS, me) + WATCH_NICE)
                os.setpriority(os.PRIO_PROCESS, me, nice)

    def _on_timer_timeout(self) -> None:
        deadline = time.perf_counter() + DRAIN_BUDGET_S
        while self._events and time.perf_counter() < deadline:
            self.deliver(self._events.popleft())
        if not self._events and self.code is not None:
            self._timer.stop()
            self.ended.emit(self.code)

    def stop(self, wait_s: float = 15.0) -> None:
        """Stop the command (if still running) and wait for the watch to wind down."""
        self._timer.stop()
        if self.pid is not None and self.code is None:
            self.relay.mute()  # its tracebacks answer our Ctrl-C: one line says it instead
            with contextlib.suppress(OSError):
                stop_command(self.pid)
        if self._thread.is_alive():
            self._thread.join(wait_s)
