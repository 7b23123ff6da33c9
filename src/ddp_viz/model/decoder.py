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
    was most of that process's work, on the cores the ranks train on.

    What :meth:`feed` took waits as whole blocks of complete lines, split only when a reader
    asks for them one by one. :meth:`batch` hands a block whose every line is of a skimmed
    kind over whole, found by counting how lines start: 19 µs for a rank's 50-line hand-over
    of a Linear run, where splitting, sorting and joining its lines took 51.
    """

    def __init__(self, skim: frozenset[str] = frozenset()) -> None:
        self._skim = skim
        self._buffer = b""
        # in order: blocks of complete lines (unsplit) and the errors between them
        self._pending: deque[bytes | protocol.ProtocolError] = deque()
        self._lines: deque[bytes] = deque()  # the head block's lines, once split
        # how a line of each skimmed kind starts, as encode writes it, after the line before
        self._starts = [b"\n" + protocol.KIND_PREFIX + k.encode() + b'"' for k in sorted(skim)]

    def feed(self, data: bytes) -> None:
        """Take a chunk of the stream; complete lines wait in :meth:`pending` order."""
        whole, end, self._buffer = (self._buffer + data).rpartition(b"\n")
        if end:
            self._pending.append(whole)
        if len(self._buffer) > MAX_BUFFER:  # after the lines before it
            self._pending.append(
                protocol.ProtocolError(f"line longer than {MAX_BUFFER} bytes discarded")
            )
            self._buffer = b""

    def __bool__(self) -> bool:
        return bool(self._lines) or any(
            isinstance(b, protocol.ProtocolError) or b.strip() for b in self._pending
        )

    def next(self) -> Item | None:
        """The next decoded event (or the error for a bad line), None when none is waiting."""
        pair = self.next_with_line()
        return None if pair is None else pair[0]

    def _next_raw(self) -> bytes | protocol.ProtocolError | None:
        while not self._lines:
            if not self._pending:
                return None
            head = self._pending.popleft()
            if isinstance(head, protocol.ProtocolError):
                return head
            self._lines.extend(line for line in head.split(b"\n") if line.strip())
        return self._lines.popleft()

    def next_with_line(self) -> tuple[Item, bytes] | None:
        """Like :meth:`next`, with the line it came from (empty for an overlong line), for a
        reader that passes lines on as they were written."""
        raw = self._next_raw()
        if raw is None:
            return None
        if isinstance(raw, protocol.ProtocolError):
            return raw, b""
        if self._skim and (kind := protocol.line_kind(raw)) in self._skim:
            return Skimmed(kind), raw
        return self._decoded(raw)

    @staticmethod
    def _decoded(raw: bytes) -> tuple[Item, bytes]:
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
        out = _Batch()
        while self._lines:  # a reader that took some lines one by one left these
            pair = self.next_with_line()
            assert pair is not None
            if isinstance(pair[0], Skimmed):
                out.skimmed(pair[1], 1)
            else:
                out.add(pair)
        while self._pending:
            head = self._pending.popleft()
            if isinstance(head, protocol.ProtocolError):
                out.add((head, b""))
            elif not self._skim:
                out.items += [self._decoded(line) for line in head.split(b"\n") if line.strip()]
            else:
                self._block(head, out)
        return out.close()

    def _block(self, head: bytes, out: _Batch) -> None:
        """A block of complete lines into ``out``: whole, when every line in it is of a
        skimmed kind (a few counts in C, the usual case of a stream of steps); else a line at
        a time."""
        lines = head.count(b"\n") + 1
        framed = b"\n" + head
        if sum(framed.count(start) for start in self._starts) == lines:
            out.skimmed(head, lines)
            return
        for line in head.split(b"\n"):
            if not line.strip():
                continue  # a blank line ends no run: it is no line at all
            if protocol.line_kind(line) in self._skim:
                out.skimmed(line, 1)
            else:
                out.add(self._decoded(line))

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


class _Batch:
    """What :meth:`LineDecoder.batch` hands over, built in order: skimmed stretches of whole
    lines in a row become one :class:`Skimmed` when anything else comes between."""

    def __init__(self) -> None:
        self.items: list[tuple[Item, bytes]] = []
        self._run: list[bytes] = []
        self._count = 0

    def skimmed(self, lines: bytes, count: int) -> None:
        self._run.append(lines)
        self._count += count

    def add(self, pair: tuple[Item, bytes]) -> None:
        self._end_run()
        self.items.append(pair)

    def _end_run(self) -> None:
        if self._run:
            kind = protocol.line_kind(self._run[0]) or ""
            self.items.append((Skimmed(kind, self._count), b"\n".join(self._run)))
            self._run, self._count = [], 0

    def close(self) -> list[tuple[Item, bytes]]:
        self._end_run()
        return self.items
