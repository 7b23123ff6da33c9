"""The engine as a child process of the window, driven through QProcess (never blocks)."""

from __future__ import annotations

import contextlib
from typing import Any

from PySide6.QtCore import QObject, QProcess, QProcessEnvironment, Signal

from ddp_viz import protocol
from ddp_viz.client import engine_command, engine_env

MAX_BUFFER = 4 * protocol.MAX_LINE_BYTES


class EngineProcess(QObject):
    """Starts ``python -m ddp_viz.engine``, sends commands, decodes its event lines.

    Malformed, oversized or unknown lines are reported through ``bad_line`` and counted,
    never raised: a broken line must not take the window down.
    """

    event_received = Signal(object)  # protocol.Event
    bad_line = Signal(str)
    stderr_text = Signal(str)
    state_changed = Signal(str)  # starting | running | stopped | crashed

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._proc: QProcess | None = None
        self._buffer = b""
        self._stopping = False
        self.bad_lines = 0
        self.state = "stopped"

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        if self._proc is not None and self._proc.state() != QProcess.ProcessState.NotRunning:
            return
        self._stopping = False
        self._buffer = b""
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
        self._set_state("starting")
        proc.start()

    def stop(self, timeout_ms: int = 3000) -> None:
        """Ask the engine to shut down; kill it if it does not. Blocks at most ``timeout_ms``."""
        proc = self._proc
        if proc is None or proc.state() == QProcess.ProcessState.NotRunning:
            return
        self._stopping = True
        with contextlib.suppress(RuntimeError):
            self.send("shutdown")
            proc.closeWriteChannel()
        if not proc.waitForFinished(timeout_ms):
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

    def send(self, cmd: str, **args: Any) -> None:
        if self._proc is None or self._proc.state() != QProcess.ProcessState.Running:
            raise RuntimeError("the engine is not running")
        self._proc.write((protocol.command(cmd, **args) + "\n").encode())

    # --- slots -------------------------------------------------------------------------------
    def _set_state(self, state: str) -> None:
        self.state = state
        self.state_changed.emit(state)

    def _on_stdout_ready(self) -> None:
        assert self._proc is not None
        self.feed_stdout(bytes(self._proc.readAllStandardOutput().data()))

    def feed_stdout(self, data: bytes) -> None:
        """Split engine output into lines and decode each; bad lines are counted, not fatal."""
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        if len(self._buffer) > MAX_BUFFER:  # a line that never ends: drop it
            self._report_bad(f"line longer than {MAX_BUFFER} bytes discarded")
            self._buffer = b""
        for raw in lines:
            if not raw.strip():
                continue
            try:
                event = protocol.decode(raw)
            except protocol.ProtocolError as exc:
                self._report_bad(f"{exc}: {raw[:120]!r}")
                continue
            if isinstance(event, protocol.EngineReady):
                self._set_state("running")
            self.event_received.emit(event)

    def _report_bad(self, text: str) -> None:
        self.bad_lines += 1
        self.bad_line.emit(text)

    def _on_stderr_ready(self) -> None:
        assert self._proc is not None
        text = bytes(self._proc.readAllStandardError().data()).decode("utf-8", "replace")
        if text:
            self.stderr_text.emit(text)

    def _on_process_finished(self, code: int, status: QProcess.ExitStatus) -> None:
        if self._buffer.strip():
            self._report_bad(f"truncated last line: {self._buffer[:120]!r}")
            self._buffer = b""
        crashed = not self._stopping
        if crashed:
            how = "crashed" if status == QProcess.ExitStatus.CrashExit else f"exited ({code})"
            self.stderr_text.emit(f"[window] the engine process {how}\n")
        self._set_state("crashed" if crashed else "stopped")

    def _on_process_error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            self.stderr_text.emit("[window] the engine process failed to start\n")
            self._set_state("crashed")
