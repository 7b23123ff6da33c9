"""The engine as a child process of the window, driven through QProcess (never blocks).

:class:`EngineProcess` is the window's :class:`~ddp_viz.model.session.Transport`:
:func:`connect_session` routes what it reports into a :class:`SessionController`.
"""

from __future__ import annotations

import contextlib
import time

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, QTimer, Signal

from ddp_viz.client import engine_command, engine_env
from ddp_viz.model import protocol
from ddp_viz.model.decoder import LineDecoder
from ddp_viz.model.session import EngineState, SessionController

DECODE_BUDGET_S = 0.006


class EngineProcess(QObject):
    """Starts ``python -m ddp_viz.engine``, sends commands, decodes its event lines.

    Malformed, oversized or unknown lines are reported through ``bad_line`` and counted,
    never raised: a broken line must not take the window down.
    """

    event_received = Signal(object)  # protocol.Event
    bad_line = Signal(str)
    stderr_text = Signal(str)
    state_changed = Signal(object)  # EngineState

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._proc: QProcess | None = None
        self._decoder = LineDecoder()
        self._stopping = False
        self.bad_lines = 0
        self.state = EngineState.STOPPED
        self._resume = QTimer(self)
        self._resume.setSingleShot(True)
        self._resume.setInterval(0)
        self._resume.timeout.connect(self._decode_pending)

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        if self._proc is not None and self._proc.state() != QProcess.ProcessState.NotRunning:
            return
        self._stopping = False
        self._decoder = LineDecoder()
        proc = QProcess(self)
        env = QProcessEnvironment()
        for key, value in engine_env().items():
            env.insert(key, value)
        proc.setProcessEnvironment(env)
        cmd = engine_command()
        proc.setProgram(cmd[0])
        proc.setArguments(cmd[1:])
        proc.readyReadStandardOutput.connect(self._on_stdout_ready)
        proc.readyReadStandardError.connect(self._on_stderr_ready)
        proc.finished.connect(self._on_process_finished)
        proc.errorOccurred.connect(self._on_process_error)
        self._proc = proc
        self._set_state(EngineState.STARTING)
        proc.start()

    def stop(self, grace_ms: int = 500) -> None:
        """Shut the engine down: ask, then SIGTERM, then SIGKILL. Blocks about 2 s at most.

        The engine stops its ranks on ``shutdown`` and on SIGTERM; its ranks also die with it
        (parent-death signal), so nothing outlives the window.
        """
        proc = self._proc
        if proc is None or proc.state() == QProcess.ProcessState.NotRunning:
            return
        self._stopping = True
        with contextlib.suppress(RuntimeError):
            self.send(protocol.ShutdownCommand())
            proc.closeWriteChannel()
        if proc.waitForFinished(grace_ms):
            return
        proc.terminate()  # e.g. still starting its pool: SIGTERM is handled at once
        if not proc.waitForFinished(1000):
            proc.kill()
            proc.waitForFinished(1000)

    def kill(self) -> None:
        """Kill the engine outright (used by tests and the restart path)."""
        if self._proc is not None:
            self._proc.kill()

    @property
    def pid(self) -> int | None:
        if self._proc is None:
            return None
        pid = self._proc.processId()
        return int(pid) if pid else None

    def send(self, cmd: protocol.Command) -> None:
        if self._proc is None or self._proc.state() != QProcess.ProcessState.Running:
            raise RuntimeError("the engine is not running")
        self._proc.write((protocol.encode_command(cmd) + "\n").encode())

    # --- slots -------------------------------------------------------------------------------
    def _set_state(self, state: EngineState) -> None:
        self.state = state
        self.state_changed.emit(state)

    def _on_stdout_ready(self) -> None:
        assert self._proc is not None
        self.feed_stdout(bytes(self._proc.readAllStandardOutput().data()))

    def feed_stdout(self, data: bytes) -> None:
        """Split engine output into lines and decode each; bad lines are counted, not fatal.

        Decoding stops after a few milliseconds and resumes on the next event-loop turn, so
        a burst of thousands of lines never stalls painting.
        """
        self._decoder.feed(data)
        self._decode_pending()

    def _decode_pending(self) -> None:
        deadline = time.perf_counter() + DECODE_BUDGET_S
        while self._decoder:
            if time.perf_counter() > deadline:
                if not self._resume.isActive():
                    self._resume.start()
                return
            self._deliver(self._decoder.next())

    def _deliver(self, item: protocol.Event | protocol.ProtocolError | None) -> None:
        if isinstance(item, protocol.ProtocolError):
            self._report_bad(str(item))
        elif item is not None:
            if isinstance(item, protocol.EngineReady):
                self._set_state(EngineState.READY)
            self.event_received.emit(item)

    def _report_bad(self, text: str) -> None:
        self.bad_lines += 1
        self.bad_line.emit(text)

    def _on_stderr_ready(self) -> None:
        assert self._proc is not None
        text = bytes(self._proc.readAllStandardError().data()).decode("utf-8", "replace")
        if text:
            self.stderr_text.emit(text)

    def _on_process_finished(self, code: int, status: QProcess.ExitStatus) -> None:
        self._resume.stop()
        for item in self._decoder.drain():
            self._deliver(item)
        self._deliver(self._decoder.close())
        crashed = not self._stopping
        if crashed:
            how = "crashed" if status == QProcess.ExitStatus.CrashExit else f"exited ({code})"
            self.stderr_text.emit(f"[window] the engine process {how}\n")
        self._set_state(EngineState.CRASHED if crashed else EngineState.STOPPED)

    def _on_process_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            self.stderr_text.emit("[window] the engine process failed to start\n")
            self._set_state(EngineState.CRASHED)


def connect_session(engine: EngineProcess, session: SessionController) -> None:
    """Everything the engine process reports goes to the session controller."""
    engine.event_received.connect(session.on_transport_event)
    engine.bad_line.connect(session.on_transport_bad_line)
    engine.stderr_text.connect(session.on_transport_log)
    engine.state_changed.connect(session.on_transport_state)
