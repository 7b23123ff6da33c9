"""The watched command's output, passed on to ours until the window that runs it closes.

Closing the window stops the command with Ctrl-C, as a user would, and every process in it
answers the way Python does: each rank's ``KeyboardInterrupt``, torchrun's
``SignalException``, three tracebacks for something the user asked for. So with the window,
the command writes into a pipe (a terminal of its own where ours is one, so it buffers and
colours its lines as it would have) that a thread copies to our stdout and stderr; once the
window has closed, what the stopping command still writes is dropped and one line says what
happened instead.
"""

from __future__ import annotations

import contextlib
import os
import threading

from ddp_viz import platform

STREAMS = (1, 2)  # our stdout and stderr, by file descriptor


class Relay:
    """Copies the command's stdout and stderr to ours until :meth:`mute`."""

    def __init__(self) -> None:
        self.muted = False
        self._threads: list[threading.Thread] = []
        self._child_ends: dict[int, int] = {}

    def open(self) -> dict[str, int]:
        """The ``stdout`` and ``stderr`` to start the command with; call :meth:`started`
        once it has started."""
        for fd in STREAMS:
            read, write = self._pair(fd)
            self._child_ends[fd] = write
            t = threading.Thread(target=self._copy, args=(read, fd), daemon=True)
            t.name = f"ddp-viz-relay-{fd}"
            self._threads.append(t)
        return {"stdout": self._child_ends[1], "stderr": self._child_ends[2]}

    def started(self) -> None:
        """The command holds its ends now: close ours (its exit then ends the copying)."""
        for fd in self._child_ends.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._child_ends.clear()
        for t in self._threads:
            t.start()

    def mute(self) -> None:
        """From now on, drop what the command writes (it is being stopped)."""
        self.muted = True

    def join(self, timeout: float = 2.0) -> None:
        """Wait for the last of the command's output (its processes may outlive it briefly)."""
        for t in self._threads:
            if t.is_alive():
                t.join(timeout)

    @staticmethod
    def _pair(fd: int) -> tuple[int, int]:
        """(our end, the command's end): a terminal of its own where ``fd`` is a terminal and
        the system has them, a pipe otherwise."""
        return platform.output_pair(fd)

    def _copy(self, read: int, to: int) -> None:
        try:
            while True:
                try:
                    data = os.read(read, 65536)
                except OSError:  # a terminal's end reads EIO once every writer is gone
                    return
                if not data:
                    return
                while data and not self.muted:
                    try:
                        data = data[os.write(to, data) :]
                    except OSError:
                        break
        finally:
            with contextlib.suppress(OSError):
                os.close(read)
