"""Bytes to events, as any transport delivers them: lines split across chunks, blank lines,
a bad line reported in its place with its reason and its start, a line that never ends dropped
once it passes the cap (just past it, not at it), and an unfinished last line at the close."""

from __future__ import annotations

from ddp_viz.model import protocol
from ddp_viz.model.decoder import MAX_BUFFER, LineDecoder, Skimmed
from ddp_viz.model.protocol import ProtocolError, RunFinished

END = RunFinished(run=1, steps_completed=3, elapsed_s=0.5)
LINE = protocol.encode(END).encode()


def test_lines_split_across_chunks_are_decoded_in_order_and_blank_lines_skipped() -> None:
    d = LineDecoder()
    assert not d and d.next() is None and d.next_with_line() is None
    d.feed(LINE[:10])
    assert not d and d.next() is None
    d.feed(LINE[10:] + b"\n  \n\n" + LINE)
    assert d
    assert d.next_with_line() == (END, LINE)
    assert not d  # the second line has no end yet
    d.feed(b"\n")
    assert d.drain() == [END] and d.drain() == []
    assert d.close() is None


def test_a_bad_line_is_an_error_in_its_place_naming_the_reason_and_its_start() -> None:
    d = LineDecoder()
    bad = b'{"event": "nope", "x": "' + b"y" * 200 + b'"}'
    d.feed(LINE + b"\n" + bad + b"\n" + LINE + b"\n")
    first, error, last = d.drain()
    assert first == END and last == END
    assert isinstance(error, ProtocolError)
    assert str(error) == f"unknown event 'nope': {bad[:120]!r}"


def test_a_line_past_the_cap_is_dropped_after_the_lines_before_it() -> None:
    d = LineDecoder()
    d.feed(LINE + b"\n" + b"x" * MAX_BUFFER)  # at the cap: kept waiting for its end
    assert d.drain() == [END]
    d.feed(b"x")  # one byte more: gone
    (error,) = d.drain()
    assert isinstance(error, ProtocolError)
    assert str(error) == f"line longer than {MAX_BUFFER} bytes discarded"
    assert MAX_BUFFER == 4 * protocol.MAX_LINE_BYTES
    d.feed(LINE + b"\n")  # the stream goes on
    assert d.next_with_line() == (END, LINE)
    assert d.close() is None


def test_an_overlong_line_keeps_its_place_among_the_others() -> None:
    d = LineDecoder()
    d.feed(LINE + b"\n" + LINE + b"\n" + b"z" * (MAX_BUFFER + 1))
    d.feed(b"\n" + LINE + b"\n")
    items = [d.next_with_line() for _ in range(4)]
    assert [raw for _, raw in items] == [LINE, LINE, b"", LINE]
    assert isinstance(items[2][0], ProtocolError)


def test_the_close_names_an_unfinished_last_line_by_its_start() -> None:
    d = LineDecoder()
    tail = b'{"event": "run_finished", ' + b"q" * 200
    d.feed(LINE + b"\n" + tail)
    error = d.close()
    assert isinstance(error, ProtocolError)
    assert str(error) == f"truncated last line: {tail[:120]!r}"
    assert d.close() is None  # said once
    d.feed(b"  \t ")
    assert d.close() is None  # only whitespace left: nothing lost


def test_only_the_kinds_skimmed_pass_undecoded() -> None:
    d = LineDecoder(frozenset({"run_finished"}))
    d.feed(LINE + b"\n" + b"not json\n")
    assert d.next_with_line() == (Skimmed("run_finished"), LINE)
    error = d.next()
    assert isinstance(error, ProtocolError) and str(error).startswith("not JSON: ")
    other = LineDecoder(frozenset({"timing"}))
    other.feed(LINE + b"\n")
    assert other.next() == END


def _line(kind: str, n: int) -> bytes:
    """A line as encode writes it, for a kind the decoder skims (never decoded)."""
    return b'{"event":"' + kind.encode() + b'","n":' + str(n).encode() + b"}"


def test_a_batch_hands_over_each_run_of_skimmed_lines_as_one_in_its_place() -> None:
    d = LineDecoder(frozenset({"timing", "params"}))
    first, second, third = _line("params", 1), _line("timing", 2), _line("timing", 3)
    fourth = _line("params", 4)
    d.feed(first + b"\n" + second + b"\n\n" + third + b"\n" + LINE + b"\nnot json\n")
    d.feed(fourth + b"\n" + _line("timing", 5))  # the last line has no end yet
    (run, end, bad, last) = d.batch()
    assert run == (Skimmed("params", 3), first + b"\n" + second + b"\n" + third)
    assert end == (END, LINE)  # decoded, between the two runs, as before
    assert isinstance(bad[0], ProtocolError) and bad[1] == b"not json"
    assert last == (Skimmed("params", 1), fourth)
    assert d.batch() == []
    d.feed(b"\n")
    assert d.batch() == [(Skimmed("timing", 1), _line("timing", 5))]


def test_a_batch_of_a_decoder_that_skims_nothing_is_its_lines_one_by_one() -> None:
    d = LineDecoder()
    d.feed(LINE + b"\n" + LINE + b"\n")
    assert d.batch() == [(END, LINE), (END, LINE)]
    d.feed(LINE + b"\n" + b"y" * (MAX_BUFFER + 1))
    (end, (error, raw)) = d.batch()
    assert end == (END, LINE) and isinstance(error, ProtocolError) and raw == b""


def test_a_batch_that_ends_in_a_run_of_one_kind_names_it() -> None:
    d = LineDecoder(frozenset({"timing", "params"}))
    d.feed(LINE + b"\n" + _line("timing", 1) + b"\n" + _line("params", 2) + b"\n")
    assert d.batch() == [
        (END, LINE),
        (Skimmed("timing", 2), _line("timing", 1) + b"\n" + _line("params", 2)),
    ]
