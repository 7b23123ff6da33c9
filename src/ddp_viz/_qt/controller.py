"""RunController: owns the engine process and the recorded run; the window listens to it."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from ddp_viz._qt.engine_process import EngineProcess
from ddp_viz.model import protocol
from ddp_viz.model.scenario import Scenario
from ddp_viz.model.timeline import RunRecord


class RunController(QObject):
    """Turns Run/Cancel into engine commands and engine events into a :class:`RunRecord`.

    Views get ``record_updated`` at most once per display frame (``refresh_ms``), however fast
    events arrive, so a 1,000-step run streams without flooding the event loop with redraws.
    """

    run_started = Signal(object)  # RunRecord
    record_updated = Signal(object)  # RunRecord (throttled)
    run_ended = Signal(object)  # RunRecord, status finished | failed | cancelled
    workers_changed = Signal(object)  # dict slot -> protocol.WorkerState
    engine_state_changed = Signal(str)
    log_text = Signal(str)
    busy_changed = Signal(bool)
    command_rejected = Signal(str, str)  # field, message

    def __init__(self, parent: QObject | None = None, refresh_ms: int = 16) -> None:
        super().__init__(parent)
        self.engine = EngineProcess(self)
        self.engine.event_received.connect(self._on_engine_event)
        self.engine.stderr_text.connect(self.log_text)
        self.engine.bad_line.connect(self._on_engine_bad_line)
        self.engine.state_changed.connect(self._on_engine_state_changed)
        self.record = RunRecord()
        self.workers: dict[int, protocol.WorkerState] = {}
        self._next_run = 1
        self._pending_run: int | None = None
        self._dirty = False
        self._refresh = QTimer(self)
        self._refresh.setInterval(refresh_ms)
        self._refresh.timeout.connect(self._on_refresh_timeout)

    # --- commands ----------------------------------------------------------------------------
    def start_engine(self) -> None:
        self.engine.start()

    @property
    def busy(self) -> bool:
        return self._pending_run is not None or self.record.status == "running"

    @property
    def engine_ready(self) -> bool:
        return self.engine.state == "running"

    def run(self, scenario: Scenario) -> int:
        if self.busy:
            raise RuntimeError("a run is already in progress")
        run_id = self._next_run
        self._next_run += 1
        self._pending_run = run_id
        self.engine.send("run", run=run_id, scenario=scenario.to_dict())
        self.busy_changed.emit(True)
        return run_id

    def cancel(self) -> None:
        run_id = self._pending_run or (self.record.run if self.record.status == "running" else None)
        if run_id is not None and self.engine_ready:
            self.engine.send("cancel", run=run_id)

    def warm(self, world_size: int) -> None:
        if self.engine_ready and not self.busy:
            self.engine.send("warm", world_size=world_size)

    def shutdown(self) -> None:
        self._refresh.stop()
        self.engine.stop()

    def restart_engine(self) -> None:
        self.engine.stop()
        self.workers.clear()
        self.workers_changed.emit(dict(self.workers))
        self.engine.start()

    # --- events ------------------------------------------------------------------------------
    def _on_engine_event(self, event: protocol.Event) -> None:
        if isinstance(event, protocol.WorkerState):
            self.workers[event.slot] = event
            if event.state == "exited":
                self.workers.pop(event.slot, None)
            self.workers_changed.emit(dict(self.workers))
            return
        if isinstance(event, protocol.CommandError):
            self.log_text.emit(f"[engine] refused: {event.message}\n")
            if self._pending_run is not None:
                self._pending_run = None
                self.busy_changed.emit(False)
            self.command_rejected.emit(event.field, event.message)
            return
        if isinstance(event, protocol.RunStarted):
            if event.run != self._pending_run:
                return
            self._pending_run = None
            self.record = RunRecord()
            self.record.apply(event)
            self.run_started.emit(self.record)
            self._refresh.start()
            return
        if not self.record.apply(event):
            return
        self._dirty = True
        if self.record.done:
            self._flush()
            self._refresh.stop()
            self.busy_changed.emit(False)
            self.run_ended.emit(self.record)

    def _on_refresh_timeout(self) -> None:
        self._flush()

    def _flush(self) -> None:
        if self._dirty:
            self._dirty = False
            self.record_updated.emit(self.record)

    def _on_engine_bad_line(self, text: str) -> None:
        self.record.bad_lines += 1
        self.log_text.emit(f"[window] ignored a bad line from the engine: {text}\n")

    def _on_engine_state_changed(self, state: str) -> None:
        if state in ("crashed", "stopped"):
            self.workers.clear()
            self.workers_changed.emit({})
            if self.busy:
                self._pending_run = None
                if self.record.status == "running":
                    self.record.status = "failed"
                    self.record.reason = "the engine process ended during the run (incomplete)"
                    self._refresh.stop()
                    self.run_ended.emit(self.record)
                self.busy_changed.emit(False)
        self.engine_state_changed.emit(state)
