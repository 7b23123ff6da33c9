"""Bytes from an engine (or any event source) to events: one decoder for every transport.

Splits a byte stream into lines, decodes each with :func:`protocol.decode`, and reports bad
lines as :class:`protocol.ProtocolError` values instead of raising, so a broken line never takes
the reader down. A line that never ends is dropped once it passes the size cap.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from ddp_viz.model import protocol

MAX_BUFFER = 4 * protocol.MAX_LINE_BYTES


@dataclass(frozen=True)
class Skimmed:
    """A line passed on undecoded: its kind, read from the line's start (see ``skim``); from
    :meth:`LineDecoder.batch`, ``lines`` lines in a row, ``kind`` the first one's."""

    kind: str
    lines: int = 1


Item = protocol.Event | protocol.ProtocolError | Skimmed


class LineDecoder:
    """``skim``: kinds of event to pass on as lines without decoding them, for a reader that
    only forwards them (``ddp-viz run --json``): decoding and validating every step's events
    was most of that process's work, on the cores the ranks train on."""

    def __init__(self, skim: frozenset[str] = frozenset()) -> None:
        self._skim = skim
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
        if self._skim and (kind := protocol.line_kind(raw)) in self._skim:
            return Skimmed(kind), raw
        try:
            return protocol.decode(raw), raw
        except protocol.ProtocolError as exc:
            return protocol.ProtocolError(f"{exc}: {raw[:120]!r}"), raw

    def batch(self) -> list[tuple[Item, bytes]]:
        """Every waiting line as :meth:`next_with_line` hands it over, but each run of skimmed
        lines in a row as one :class:`Skimmed`, its line theirs joined by newlines. A reader
        that only passes them on (``ddp-viz run --json``) then writes a burst of steps at
        once: a write, a queue item and a check per line were most of its CPU, on the cores
        the ranks train on."""
        out: list[tuple[Item, bytes]] = []
        run: list[tuple[str, bytes]] = []  # the skimmed lines in a row so far: kind, line

        def end_run() -> None:
            if run:
                out.append((Skimmed(run[0][0], len(run)), b"\n".join(raw for _, raw in run)))
                run.clear()

        while (pair := self.next_with_line()) is not None:
            if isinstance(pair[0], Skimmed):
                run.append((pair[0].kind, pair[1]))
                continue
            end_run()
            out.append(pair)
        end_run()
        return out

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
