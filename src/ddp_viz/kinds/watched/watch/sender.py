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
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Union

from ddp_viz.kinds.watched import wire

CONNECT_S = 3.0
QUEUE_LINES = 4096
CLOSE_S = 2.0  # at exit, how long the last lines may take to leave
BATCH_S = 0.05  # the sender wakes at most this often: every wake-up takes the rank's core
# steps whose tensors wait to be encoded hold copies of every gradient and parameter: past
# this many bytes (and two steps) a step is dropped and counted rather than piled up in memory
MAX_PENDING_BYTES = 256 << 20

# a line, or a step to encode into lines on the sender's thread, off the training's
Item = Union[str, Callable[[], list[str]], None]  # noqa: UP007


class Sender:
    def __init__(self, addr: str, token: str, hello: Callable[[], wire.Hello]) -> None:
        host, _, port = addr.rpartition(":")
        self.address = (host.strip("[]") or "127.0.0.1", int(port))
        self.token, self.hello = token, hello
        self.lines: queue.Queue[Item] = queue.Queue(QUEUE_LINES)
        self.pending: list[int] = []  # bytes held by each step waiting to be encoded
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

    def send_later(self, encode: Callable[[], list[str]], count: int, nbytes: int) -> None:
        """A step of ``count`` events, holding ``nbytes`` of tensor copies (0: its timings
        alone), encoded by ``encode`` on the sender's thread."""
        heavy = [b for b in self.pending if b]
        too_much = nbytes and len(heavy) >= 2 and sum(heavy) + nbytes > MAX_PENDING_BYTES
        if not self.alive or too_much:
            self.dropped += count
            return
        self.pending.append(nbytes)
        try:
            self.lines.put_nowait(encode)
        except queue.Full:
            self.pending.pop()
            self.dropped += count

    def close(self, last: str | None = None) -> None:
        """Send ``last`` (the count of dropped lines) after everything queued, then stop."""
        with suppress(queue.Full):
            if last is not None and self.alive:
                self.lines.put(last, timeout=CLOSE_S)
            self.lines.put(None, timeout=CLOSE_S)
        self._thread.join(CLOSE_S)

    def _lines(self, item: Item) -> list[str]:
        if isinstance(item, str):
            return [item]
        if item is None:
            return []
        self.pending.pop(0)  # FIFO: this item's entry
        return item()

    def _run(self) -> None:
        try:
            with socket.create_connection(self.address, timeout=CONNECT_S) as sock:
                sock.settimeout(wire.HANDSHAKE_S)  # connected: the listener's challenge comes
                reader = sock.makefile("rb")
                nonce, _ = wire.parse_challenge(reader.readline(wire.MAX_HELLO_BYTES))
                sock.sendall((wire.answer(self.token, nonce, self.hello()) + "\n").encode())
                sock.settimeout(None)
                while True:  # one write for everything waiting: fewer wake-ups, fewer sends
                    batch, last = [self.lines.get()], False
                    if batch[0] is not None:
                        time.sleep(BATCH_S)  # let a few steps gather: the rank's core is busy
                    with suppress(queue.Empty):
                        while len(batch) < 256:
                            batch.append(self.lines.get_nowait())
                    lines: list[str] = []
                    for item in batch:
                        if item is None:
                            last = True
                            break
                        lines += self._lines(item)
                    if lines:
                        sock.sendall("\n".join(lines).encode() + b"\n")
                    if last:
                        return
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
