"""Bytes from an engine (or any event source) to events: one decoder for every transport.

Splits a byte stream into lines, decodes each with :func:`protocol.decode`, and reports bad
lines as :class:`protocol.ProtocolError` values instead of raising, so a broken line never takes
the reader down. A line that never ends is dropped once it passes the size cap.
"""

from __future__ import annotations

from collections import deque

from ddp_viz.model import protocol

MAX_BUFFER = 4 * protocol.MAX_LINE_BYTES

Item = protocol.Event | protocol.ProtocolError


class LineDecoder:
    def __init__(self) -> None:
        self._buffer = b""
        self._lines: deque[bytes] = deque()
        self._errors: deque[protocol.ProtocolError] = deque()

    def feed(self, data: bytes) -> None:
        """Take a chunk of the stream; complete lines wait in :meth:`pending` order."""
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        self._lines.extend(line for line in lines if line.strip())
        if len(self._buffer) > MAX_BUFFER:
            self._lines.append(b"")  # keep order: the error comes after the lines before it
            self._errors.append(
                protocol.ProtocolError(f"line longer than {MAX_BUFFER} bytes discarded")
            )
            self._buffer = b""

    def __bool__(self) -> bool:
        return bool(self._lines)

    def next(self) -> Item | None:
        """The next decoded event (or the error for a bad line), None when none is waiting."""
        pair = self.next_with_line()
        return None if pair is None else pair[0]

    def next_with_line(self) -> tuple[Item, bytes] | None:
        """Like :meth:`next`, with the line it came from (empty for an overlong line), for a
        reader that passes lines on as they were written."""
        if not self._lines:
            return None
        raw = self._lines.popleft()
        if raw == b"":
            return self._errors.popleft(), raw
        try:
            return protocol.decode(raw), raw
        except protocol.ProtocolError as exc:
            return protocol.ProtocolError(f"{exc}: {raw[:120]!r}"), raw

    def drain(self) -> list[Item]:
        out = []
        while (item := self.next()) is not None:
            out.append(item)
        return out

    def close(self) -> protocol.ProtocolError | None:
        """The stream ended: an unfinished last line is an error."""
        rest, self._buffer = self._buffer, b""
        if rest.strip():
            return protocol.ProtocolError(f"truncated last line: {rest[:120]!r}")
        return None
