"""One warm engine per test worker, lent to the window tests that drive runs through it.

A cold engine takes about five seconds of CPU to become ready (its forkserver imports torch
and what DDP imports lazily), and a window test that only needs real runs paid it each time.
The window tests that test the engine's own life (killed, dying mid-run, stopped with the
window) still start their own: this stands in for :class:`EngineProcess` as the session's
transport, and only that, so the window's own engine code stays covered by them.

Lending is the transport's whole contract: ``start`` attaches the window's session to the
shared engine and tells it what a fresh engine would (its state, its ``engine_ready``, its
workers); ``stop`` cancels whatever run the window left and waits until every worker is
free again, so the next test's first run is not refused or confused by this one's events.
"""

from __future__ import annotations

import os
import time

from PySide6.QtCore import QEventLoop, QObject, Signal, SignalInstance
from PySide6.QtWidgets import QApplication

from ddp_viz._qt.engine_process import EngineProcess, connect_session
from ddp_viz.model import protocol
from ddp_viz.model.protocol import WorkerStatus
from ddp_viz.model.session import EngineState

IDLE_TIMEOUT_S = 60.0
ENDS = (protocol.RunFinished, protocol.RunFailed, protocol.RunCancelled)


class SharedEngine(QObject):
    """The worker's engine, and what a newcomer must be told about it."""

    def __init__(self) -> None:
        super().__init__()
        self.process = EngineProcess()
        self.ready: protocol.EngineReady | None = None
        self.workers: dict[int, protocol.WorkerState] = {}
        self.active: set[int | None] = set()  # runs sent or started, not ended yet
        self.process.event_received.connect(self._on_engine_event)
        self.process.start()

    def _on_engine_event(self, event: protocol.Event) -> None:
        match event:
            case protocol.EngineReady():
                self.ready = event
            case protocol.WorkerState(slot=slot, state=state):
                self.workers[slot] = event
                if state == WorkerStatus.EXITED:
                    self.workers.pop(slot, None)
            case protocol.RunStarted(run=run):
                self.active.discard(None)
                self.active.add(run)
            case protocol.CommandError():
                self.active.discard(None)
            case _ if isinstance(event, ENDS):
                self.active.clear()  # one run at a time: its end ends them all

    def idle(self) -> bool:
        busy = any(w.state == WorkerStatus.BUSY for w in self.workers.values())
        return self.process.state is EngineState.READY and not self.active and not busy

    def wait_idle(self, timeout_s: float = IDLE_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        app = QApplication.instance()
        while not self.idle():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the shared engine stayed busy: {self.workers}")
            app.processEvents(QEventLoop.ProcessEventsFlag.WaitForMoreEvents, 50)


class LentEngine(QObject):
    """A window session's transport on :class:`SharedEngine` (the signals of EngineProcess)."""

    event_received = Signal(object)
    bad_line = Signal(str)
    stderr_text = Signal(str)
    state_changed = Signal(object)

    def __init__(self, shared: SharedEngine, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.shared = shared
        self.attached = False
        self.state = EngineState.STOPPED

    @property
    def pid(self) -> int | None:
        return self.shared.process.pid

    def start(self) -> None:
        if self.attached:
            return
        self.attached = True
        engine = self.shared.process
        for theirs, ours in self._links():
            theirs.connect(ours)
        self._on_engine_state_changed(engine.state)
        if engine.state is EngineState.READY and self.shared.ready is not None:
            self.event_received.emit(self.shared.ready)
        for worker in list(self.shared.workers.values()):
            self.event_received.emit(worker)

    def _links(self) -> list[tuple[SignalInstance, object]]:
        engine = self.shared.process
        return [
            (engine.event_received, self.event_received),
            (engine.bad_line, self.bad_line),
            (engine.stderr_text, self.stderr_text),
            (engine.state_changed, self._on_engine_state_changed),
        ]

    def _on_engine_state_changed(self, state: EngineState) -> None:
        self.state = state
        self.state_changed.emit(state)

    def send(self, cmd: protocol.Command) -> None:
        if isinstance(cmd, protocol.RunCommand):
            self.shared.active.add(None)  # until it starts or is refused
        self.shared.process.send(cmd)

    def stop(self) -> None:
        """Give the engine back as the next window must find it: no run, every rank free."""
        if not self.attached:
            return
        engine = self.shared.process
        for theirs, ours in self._links():
            theirs.disconnect(ours)
        self.attached = False
        if self.shared.active and engine.state is EngineState.READY:
            engine.send(protocol.CancelCommand(run=None))
        self.shared.wait_idle()
        self._on_engine_state_changed(EngineState.STOPPED)


_shared: SharedEngine | None = None


def lend_engine(window) -> LentEngine:  # window: MainWindow
    """Make the worker's shared engine ``window``'s transport (started on first use)."""
    global _shared
    if _shared is None or _shared.process.state in (EngineState.CRASHED, EngineState.STOPPED):
        from tests.conftest import SHARED_ROOTS

        _shared = SharedEngine()
        pid = _shared.process.pid
        assert pid is not None and pid != os.getpid()
        SHARED_ROOTS.add(pid)  # its processes outlive the test that started it, by design
    lent = LentEngine(_shared, window)
    window.session.transport = lent
    connect_session(lent, window.session)
    return lent


def close_shared() -> None:
    """At the end of the test session: the shared engine stops like any other."""
    global _shared
    if _shared is not None:
        _shared.process.stop()
        _shared = None
