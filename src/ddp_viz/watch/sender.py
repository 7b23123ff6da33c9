"""A watched rank's events on their way to the listener, never in the training's way.

The training thread only puts encoded lines into a bounded queue (``put_nowait``); a daemon
thread connects, proves the token, and writes. A full queue drops the line and counts it; a
listener that cannot be reached or goes away turns the sender off (``alive`` False), and the
capture then stops copying tensors, so a dead listener costs the training nothing.
"""

from __future__ import annotations

import queue
import socket
import threading
from collections.abc import Callable
from contextlib import suppress

from ddp_viz.model import watch_wire as wire

CONNECT_S = 3.0
QUEUE_LINES = 4096
CLOSE_S = 2.0  # at exit, how long the last lines may take to leave


class Sender:
    def __init__(self, addr: str, token: str, hello: Callable[[], wire.Hello]) -> None:
        host, _, port = addr.rpartition(":")
        self.address = (host.strip("[]") or "127.0.0.1", int(port))
        self.token, self.hello = token, hello
        self.lines: queue.Queue[str | None] = queue.Queue(QUEUE_LINES)
        self.dropped = 0
        self.alive = True
        self.error = ""
        self._thread = threading.Thread(target=self._run, name="ddp-viz-sender", daemon=True)
        self._thread.start()

    def send(self, line: str) -> None:
        if not self.alive:
            self.dropped += 1
            return
        try:
            self.lines.put_nowait(line)
        except queue.Full:
            self.dropped += 1

    def close(self, last: str | None = None) -> None:
        """Send ``last`` (the count of dropped lines) after everything queued, then stop."""
        with suppress(queue.Full):
            if last is not None and self.alive:
                self.lines.put(last, timeout=CLOSE_S)
            self.lines.put(None, timeout=CLOSE_S)
        self._thread.join(CLOSE_S)

    def _run(self) -> None:
        try:
            with socket.create_connection(self.address, timeout=CONNECT_S) as sock:
                reader = sock.makefile("rb")
                nonce, _ = wire.parse_challenge(reader.readline(wire.MAX_HELLO_BYTES))
                sock.sendall((wire.answer(self.token, nonce, self.hello()) + "\n").encode())
                sock.settimeout(None)
                while True:
                    line = self.lines.get()
                    if line is None:
                        return
                    sock.sendall(line.encode() + b"\n")
        except (OSError, ValueError) as exc:  # no listener, a refusal, a closed connection
            self.error = str(exc) or type(exc).__name__
        finally:
            self.alive = False
            while True:  # what was queued is lost: count it
                try:
                    if self.lines.get_nowait() is not None:
                        self.dropped += 1
                except queue.Empty:
                    break
