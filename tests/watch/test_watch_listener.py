"""The listener against honest and hostile peers (pure: asyncio and sockets on 127.0.0.1, no
torch): only a proven token gets a single line read; oversized, malformed, wrong-version,
slow and random input is refused and counted while an honest rank streams on, losing nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import time

import pytest

from ddp_viz.kinds.watched import wire
from ddp_viz.kinds.watched.watch.listener import Listener, on_listener_clock
from ddp_viz.model import protocol

TOKEN = "a-test-token"
PARAMS = [{"name": "weight", "shape": [1, 1]}, {"name": "bias", "shape": [1]}]


def hello(rank: int = 0, clock: float = 0.0) -> wire.Hello:
    return wire.Hello("host-a", 1000 + rank, rank, rank, 2, clock, PARAMS)


def step_events(rank: int, step: int) -> list[protocol.Event]:
    g = {"weight": [float(step)], "bias": [float(rank)]}
    return [
        protocol.LocalGrad(1, step, rank, 0.5, g),
        protocol.AveragedGrad(1, step, rank, g),
        protocol.Params(1, step, rank, g),
    ]


async def connect(port: int):  # type: ignore[no-untyped-def]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    nonce, _ = wire.parse_challenge(await reader.readline())
    return reader, writer, nonce


async def honest(port: int, rank: int, steps: int, token: str = TOKEN) -> None:
    _, writer, nonce = await connect(port)
    writer.write((wire.answer(token, nonce, hello(rank)) + "\n").encode())
    for step in range(steps):
        for e in step_events(rank, step):
            writer.write((protocol.encode(e) + "\n").encode())
        await writer.drain()
        await asyncio.sleep(0)  # interleave with the attackers
    writer.close()
    await writer.wait_closed()


async def answering(port: int, line: bytes) -> None:
    reader, writer, _ = await connect(port)
    writer.write(line)
    await writer.drain()
    await reader.read()  # the listener closes
    writer.close()


async def oversized(port: int, size: int, token: str = TOKEN) -> None:
    """An answer proving ``token``, then ``size`` bytes without a newline."""
    _, writer, nonce = await connect(port)
    writer.write((wire.answer(token, nonce, hello(1)) + "\n").encode())
    chunk = b"x" * (1 << 20)
    try:
        for _ in range(size // len(chunk)):
            writer.write(chunk)
            await writer.drain()
    except ConnectionError:
        pass  # refused part way: what we want
    writer.close()


async def slow_loris(port: int) -> None:
    reader, writer, _ = await connect(port)
    writer.write(b'{"auth": "')  # and never the rest
    await writer.drain()
    await reader.read()
    writer.close()


def run_listener(clients, handshake_s: float = 0.3):  # type: ignore[no-untyped-def]
    got: list[protocol.Event] = []

    async def main() -> Listener:
        listener = Listener(TOKEN, got.append, handshake_s=handshake_s)
        _, port = await listener.start()
        await asyncio.wait_for(asyncio.gather(*(c(port) for c in clients)), timeout=30)
        await listener.close()
        return listener

    return asyncio.run(main()), got


def test_a_proof_is_not_the_token_and_only_fits_its_nonce() -> None:
    _, nonce = wire.challenge(1.0)
    assert TOKEN not in wire.answer(TOKEN, nonce, hello())
    assert wire.check_answer(wire.answer(TOKEN, nonce, hello()).encode(), TOKEN, nonce).rank == 0
    _, other = wire.challenge(1.0)
    with pytest.raises(wire.WireError, match="wrong token"):
        wire.check_answer(wire.answer(TOKEN, nonce, hello()).encode(), TOKEN, other)
    with pytest.raises(wire.WireError, match="wrong version"):
        wire.check_answer(json.dumps({"version": 99}).encode(), TOKEN, nonce)
    with pytest.raises(wire.WireError, match="outside a world"):
        bad = wire.Hello("h", 1, 5, 0, 2, 0.0, [])
        wire.check_answer(wire.answer(TOKEN, nonce, bad).encode(), TOKEN, nonce)


def test_hostile_peers_are_refused_and_counted_while_a_rank_streams_on_losing_nothing() -> None:
    steps = 200
    attackers = [
        lambda p: answering(p, b'{"version": 1, "host": "x"}\n'),  # no token at all
        lambda p: answering(p, (wire.answer("wrong", "0" * 32, hello(1)) + "\n").encode()),
        lambda p: answering(p, b'{"auth": "00", "version": 7}\n'),  # another version
        lambda p: answering(p, os.urandom(4096).replace(b"\n", b" ") + b"\n"),
        lambda p: oversized(p, 100 << 20),  # a 100 MB line, after a valid proof
        slow_loris,
    ]
    listener, got = run_listener([lambda p: honest(p, 0, steps), *attackers])
    mine = [
        e
        for e in got
        if getattr(e, "rank", None) == 0 and hasattr(e, "step") and e.kind != "watch_rank_lost"
    ]
    want = [e for s in range(steps) for e in step_events(0, s)]
    assert mine == want  # every line of the honest rank, in order, nothing added
    refused = dict(listener.refused)
    assert refused.pop("wrong token") == 2
    assert refused.pop(f"wrong version 7, expected {wire.VERSION}") == 1
    assert refused.pop("not JSON") == 1
    assert refused.pop("oversized line") == 1
    assert refused.pop("no answer in time") == 1
    assert not refused, refused
    # the rank that proved itself before sending 100 MB joined, then was cut off
    assert {e.rank for e in got if e.kind == "watched_rank"} == {0, 1}


def test_after_the_proof_bad_lines_are_counted_not_passed_on() -> None:
    async def mixed(port: int) -> None:
        _, writer, nonce = await connect(port)
        writer.write((wire.answer(TOKEN, nonce, hello(0)) + "\n").encode())
        good = protocol.encode(step_events(0, 0)[0])
        other_rank = protocol.encode(step_events(1, 0)[0])  # rank 0 cannot speak for rank 1
        for line in (good, "not json", '{"event": "nope"}', other_rank, good):
            writer.write((line + "\n").encode())
        writer.write(b'{"event": "local_grad", "run"')  # cut off at the end
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    listener, got = run_listener([mixed])
    assert [e.kind for e in got] == [
        "run_started",
        "rank_started",
        "watched_rank",
        "local_grad",
        "local_grad",
        "watch_rank_lost",  # it closed without its last word (watch_dropped)
    ]
    assert listener.bad_lines == 4 and not listener.refused


def test_times_move_onto_the_listeners_clock() -> None:
    timing = protocol.Timing(
        1, 0, 1, {"forward": [[10.0, 11.0]]}, [["w", 10.5]], [{"launched": 11.0, "finished": 12.0}]
    )
    moved = on_listener_clock(timing, 7.5)
    assert moved.spans == {"forward": [[2.5, 3.5]]} and moved.ready == [["w", 3.0]]
    assert moved.buckets == [{"launched": 3.5, "finished": 4.5}]


def test_bad_watch_and_listen_input_is_refused_before_anything_starts(capsys) -> None:
    from ddp_viz.cli import main

    assert main(["listen", "--no-window", "--bind", "nowhere"]) == 2
    assert "--bind: expected HOST:PORT, got 'nowhere'" in capsys.readouterr().out
    assert main(["watch", "--no-window"]) == 2
    assert "give the command after --" in capsys.readouterr().err
    assert main(["watch", "--no-window", "--budget", "3", "--", "true"]) == 2
    assert "--budget: a fraction in (0, 1], got 3" in capsys.readouterr().err
    assert main(["watch", "--remote", "--", "true"]) == 2  # no DDP_VIZ_ADDR / TOKEN here
    assert "set DDP_VIZ_ADDR=HOST:PORT and DDP_VIZ_TOKEN" in capsys.readouterr().err


def test_an_offset_inside_half_the_round_trip_is_not_applied() -> None:
    """On one machine the ranks read the listener's own monotonic clock: the true offset is 0.
    A rank that stamps its clock the moment the nonce arrives, then is slow to answer, makes
    the midpoint wrong by up to half the round trip; that is noise, not an offset. A clock
    1000 s away is measured."""

    def stamping(rank: int, delay: float, skew: float):  # type: ignore[no-untyped-def]
        async def rank_task(port: int) -> None:
            _, writer, nonce = await connect(port)
            clock = time.monotonic() + skew  # stamped on arrival, sent late: as a busy rank
            await asyncio.sleep(delay)
            writer.write((wire.answer(TOKEN, nonce, hello(rank, clock)) + "\n").encode())
            await writer.drain()
            writer.close()
            await writer.wait_closed()

        return rank_task

    _, got = run_listener([stamping(0, 0.3, 0.0), stamping(1, 0.3, 1000.0)], handshake_s=5)
    joined = {e.rank: e for e in got if e.kind == "watched_rank"}
    assert joined[0].round_trip_s >= 0.3
    assert joined[0].clock_offset_s == 0.0  # measured about -0.15 s: inside the bound
    assert abs(joined[1].clock_offset_s - 1000.0) < joined[1].round_trip_s


def test_a_line_past_asyncios_64_kib_default_and_under_the_limit_arrives_whole() -> None:
    """A big model's first step sends long lines (an 8 MB tensor's sample and digests): every
    line up to protocol.MAX_LINE_BYTES must pass; asyncio's own default stops at 64 KiB."""
    big = {"weight": [float(i) for i in range(30_000)], "bias": [0.5]}  # ~600 KB of JSON
    event = protocol.LocalGrad(1, 0, 0, 0.25, big)
    line = protocol.encode(event)
    assert (1 << 16) < len(line) < protocol.MAX_LINE_BYTES

    async def sender(port: int) -> None:
        _, writer, nonce = await connect(port)
        writer.write((wire.answer(TOKEN, nonce, hello(0)) + "\n").encode())
        writer.write((line + "\n").encode())
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    listener, got = run_listener([sender])
    grads = [e for e in got if e.kind == "local_grad"]
    assert grads == [event]
    assert listener.bad_lines == 0 and not listener.refused
