"""The skimming decoder's block path (one search per block of lines) against a reference
written here line by line: random streams of skimmed lines, decoded events, bad lines, blank
and whitespace lines and overlong lines, cut into random chunks, give the same batches as a
plain reading of the lines would, and the same when a reader takes some lines one by one."""

from __future__ import annotations

import random

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.decoder import MAX_BUFFER, LineDecoder, Skimmed
from ddp_viz.model.protocol import ProtocolError, RunFinished

SKIM = frozenset({"timing", "params", "local_grad"})
END = protocol.encode(RunFinished(run=1, steps_completed=3, elapsed_s=0.5)).encode()


def _skimmed(kind: str, n: int) -> bytes:
    return b'{"event":"' + kind.encode() + b'","n":' + str(n).encode() + b"}"


def _stream(rng: random.Random, n: int) -> list[bytes]:
    """Lines (without their ends) of a stream: mostly skimmed, the rest of every other sort."""
    out = []
    for i in range(n):
        pick = rng.random()
        if pick < 0.6:
            out.append(_skimmed(rng.choice(sorted(SKIM)), i))
        elif pick < 0.7:
            out.append(END)
        elif pick < 0.75:
            out.append(rng.choice([b"", b"  ", b"\t"]))
        elif pick < 0.8:
            out.append(b"not json " + str(i).encode())
        elif pick < 0.85:  # a kind that starts like a skimmed one: decoded (and refused)
            out.append(b'{"event":"timings","n":' + str(i).encode() + b"}")
        elif pick < 0.9:  # a skimmed kind, but not as encode writes it: decoded
            out.append(b'{"event": "timing", "n": ' + str(i).encode() + b"}")
        else:
            out.append(_skimmed("timing", i) + b" \r")
    return out


def _expected(lines: list[bytes]) -> list[tuple[object, bytes]]:
    """The batches, worked out a line at a time: runs of skimmed lines joined, blank lines
    dropped without ending a run, everything else decoded in its place."""
    out: list[tuple[object, bytes]] = []
    run: list[bytes] = []

    def end() -> None:
        if run:
            kind = run[0][len(b'{"event":"') :].split(b'"')[0].decode()
            out.append((Skimmed(kind, len(run)), b"\n".join(run)))
            run.clear()

    for line in lines:
        if not line.strip():
            continue
        head = line.split(b",")[0]
        if head in {b'{"event":"' + k.encode() + b'"' for k in SKIM}:
            run.append(line)
            continue
        end()
        try:
            out.append((protocol.decode(line), line))
        except ProtocolError as exc:
            out.append((f"{exc}: {line[:120]!r}", line))
    end()
    return out


def _comparable(batch: list[tuple[object, bytes]]) -> list[tuple[object, bytes]]:
    return [(str(i) if isinstance(i, ProtocolError) else i, raw) for i, raw in batch]


@pytest.mark.parametrize("seed", range(40))
def test_batches_of_random_streams_in_random_chunks_match_a_line_by_line_reading(seed) -> None:
    rng = random.Random(seed)
    lines = _stream(rng, rng.randint(1, 60))
    data = b"\n".join(lines) + b"\n"
    d, got, at = LineDecoder(SKIM), [], 0
    while at < len(data):
        step = rng.randint(1, 90)
        d.feed(data[at : at + step])
        at += step
        got += d.batch()
    assert d.close() is None
    merged = _merge(got)
    assert _comparable(merged) == _expected(lines)


def _merge(batches: list[tuple[object, bytes]]) -> list[tuple[object, bytes]]:
    """Batches taken chunk by chunk split a run where a chunk ended: join them back."""
    out: list[tuple[object, bytes]] = []
    for item, raw in batches:
        if isinstance(item, Skimmed) and out and isinstance(out[-1][0], Skimmed):
            first, joined = out[-1]
            out[-1] = (Skimmed(first.kind, first.lines + item.lines), joined + b"\n" + raw)
        else:
            out.append((item, raw))
    return out


def test_a_reader_that_took_lines_one_by_one_gets_the_rest_in_a_batch_in_order() -> None:
    d = LineDecoder(SKIM)
    a, b, c = _skimmed("timing", 1), _skimmed("params", 2), _skimmed("timing", 3)
    d.feed(b"\n".join([a, END, b, c, END, a]) + b"\n")
    assert d.next_with_line() == (Skimmed("timing"), a)
    assert d.next_with_line() == (RunFinished(run=1, steps_completed=3, elapsed_s=0.5), END)
    assert _comparable(d.batch()) == [
        (Skimmed("params", 2), b + b"\n" + c),
        (RunFinished(run=1, steps_completed=3, elapsed_s=0.5), END),
        (Skimmed("timing", 1), a),
    ]
    assert d.batch() == [] and d.next() is None


def test_an_overlong_line_is_an_error_after_the_skimmed_lines_before_it() -> None:
    d = LineDecoder(SKIM)
    a = _skimmed("timing", 1)
    d.feed(a + b"\n" + b"x" * (MAX_BUFFER + 1))
    d.feed(b"\n" + a + b"\n")
    (run, (error, raw), last) = d.batch()
    assert run == (Skimmed("timing", 1), a)
    assert isinstance(error, ProtocolError) and raw == b""
    assert str(error) == f"line longer than {MAX_BUFFER} bytes discarded"
    assert last == (Skimmed("timing", 1), a)


def test_a_block_of_skimmed_lines_is_handed_over_whole_without_sorting_each_line(
    monkeypatch,
) -> None:
    """The reason for blocks: a hand-over of steps costs a few counts, not a look at each
    line (one look, for the run's kind); a block with a line to decode is read line by line."""
    seen: list[bytes] = []
    kind_of = protocol.line_kind

    def spy(raw: bytes) -> str | None:
        seen.append(raw)
        return kind_of(raw)

    monkeypatch.setattr(protocol, "line_kind", spy)
    steps = [_skimmed(("timing", "local_grad")[i % 2], i) for i in range(50)]
    d = LineDecoder(SKIM)
    d.feed(b"\n".join(steps) + b"\n")
    assert d.batch() == [(Skimmed("timing", 50), b"\n".join(steps))]
    assert len(seen) == 1 and seen[0].startswith(steps[0])  # the block's first line names it
    seen.clear()
    d.feed(b"\n".join([*steps[:2], END, steps[2]]) + b"\n")
    (run, _end, last) = d.batch()
    assert run == (Skimmed("timing", 2), steps[0] + b"\n" + steps[1]) and last[1] == steps[2]
    assert len(seen) >= 4  # each line looked at


def test_the_decoder_is_true_while_a_line_or_an_error_waits() -> None:
    d = LineDecoder(SKIM)
    assert not d
    d.feed(b"  \n\t\n")
    assert not d  # blank lines are no lines
    d.feed(b"y" * (MAX_BUFFER + 1))
    assert d  # the error for the overlong line waits
    assert isinstance(d.next(), ProtocolError) and not d
    d.feed(_skimmed("timing", 1) + b"\n")
    assert d
    assert d.next() == Skimmed("timing") and not d


def test_the_decoder_is_true_while_a_line_split_from_its_block_waits() -> None:
    d = LineDecoder(SKIM)
    d.feed(_skimmed("timing", 1) + b"\n" + _skimmed("timing", 2) + b"\n")
    assert d.next() == Skimmed("timing")
    assert d  # the block's second line, split off with the first, still waits
    assert d.next() == Skimmed("timing") and not d


def test_a_plain_decoders_batch_keeps_everything_before_a_later_block() -> None:
    d = LineDecoder()
    d.feed(END + b"\n" + b"y" * (MAX_BUFFER + 1))
    d.feed(b"\n" + b"not json\n" + END + b"\n")
    (first, (error, _), (bad, raw), last) = d.batch()
    assert first == (RunFinished(run=1, steps_completed=3, elapsed_s=0.5), END)
    assert isinstance(error, ProtocolError) and isinstance(bad, ProtocolError)
    assert raw == b"not json"  # one line, spaces and all
    assert last == (RunFinished(run=1, steps_completed=3, elapsed_s=0.5), END)
