"""The listener: where watched ranks send their events (asyncio; no torch, no Qt).

Every connection must prove the token (see :mod:`ddp_viz.kinds.watched.wire`) within
``HANDSHAKE_S`` before a single event is read. After that each line is at most
``MAX_LINE_BYTES`` and must decode as an event of the stream about the rank that proved
itself; anything else is refused (the connection) or counted (the line), never raised. Times
in ``timing`` events are moved onto the listener's clock with the offset measured at connect.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from ddp_viz.kinds.watched import wire
from ddp_viz.kinds.watched.doctor import Doctor, threshold_from_env
from ddp_viz.kinds.watched.events import WatchBeat, WatchDropped, WatchedRank
from ddp_viz.model import protocol
from ddp_viz.model.fieldcheck import ProtocolError

RUN = 1
CHECK_S = 0.25  # how often the doctor asks whether any rank moved (a hang is named within 2 s)
Sink = Callable[[protocol.Event], None]


class Listener:
    def __init__(
        self,
        token: str,
        sink: Sink,
        host: str = "127.0.0.1",
        port: int = 0,
        handshake_s: float = wire.HANDSHAKE_S,
        hang_s: float | None = None,
    ):
        self.token, self.sink, self.handshake_s = token, sink, handshake_s
        self.doctor = Doctor(hang_s if hang_s is not None else threshold_from_env(os.environ))
        self.host, self.port = host, port
        self.refused: Counter[str] = Counter()
        self.bad_lines = 0
        self.dropped: dict[str, int] = {}
        self.ranks: dict[int, WatchedRank] = {}
        self.started = False
        self.connections = 0  # open, authenticated
        self.idle = asyncio.Event()  # set while no authenticated connection is open
        self.idle.set()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> tuple[str, int]:
        self._server = await asyncio.start_server(
            self._on_connection, self.host, self.port, limit=protocol.MAX_LINE_BYTES + 1
        )
        host, port = self._server.sockets[0].getsockname()[:2]
        self.port = port
        self._watch_for_hangs = asyncio.create_task(self._check_hangs())
        return host, port

    async def _check_hangs(self) -> None:
        """Ask the doctor, a few times a second, whether the ranks stopped moving."""
        while True:
            await asyncio.sleep(CHECK_S)
            hang = self.doctor.check(time.monotonic())
            if hang is not None:
                self.sink(hang)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._watch_for_hangs.cancel()
        for task in list(self._tasks):
            task.cancel()

    def _refuse(self, why: str) -> None:
        self.refused[why] += 1

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            hello, offset = await self._handshake(reader, writer)
            if hello is not None:
                self.connections += 1
                self.idle.clear()
                try:
                    await self._read_events(reader, hello, offset)
                finally:
                    lost = self.doctor.lost(hello.rank)  # closed without its last word
                    if lost is not None:
                        self.sink(lost)
                    self.connections -= 1
                    if not self.connections:
                        self.idle.set()
        except (ConnectionError, asyncio.IncompleteReadError):
            self._refuse("connection lost")
        finally:
            if task is not None:
                self._tasks.discard(task)
            writer.close()

    async def _handshake(self, reader, writer):  # type: ignore[no-untyped-def]
        t0 = time.monotonic()
        line, nonce = wire.challenge(t0)
        writer.write(line.encode() + b"\n")
        try:
            await writer.drain()
            answer = await asyncio.wait_for(reader.readuntil(b"\n"), timeout=self.handshake_s)
        except TimeoutError:
            self._refuse("no answer in time")
            return None, 0.0
        except (asyncio.LimitOverrunError, ValueError):
            self._refuse("oversized")
            return None, 0.0
        except (asyncio.IncompleteReadError, ConnectionError):
            self._refuse("closed before answering")
            return None, 0.0
        t1 = time.monotonic()
        try:
            hello = wire.check_answer(answer, self.token, nonce)
        except wire.WireError as exc:
            self._refuse(str(exc))
            return None, 0.0
        # The rank stamped its clock somewhere inside the round trip, so the midpoint is right
        # to within half of it. An offset inside that bound is not measured at all: on one
        # machine (the same monotonic clock, true offset 0) a busy rank's slow answer made one
        # rank look 240 ms late at every all-reduce.
        offset = hello.clock - (t0 + t1) / 2
        if abs(offset) <= (t1 - t0) / 2:
            offset = 0.0
        self._joined(hello, offset, t1 - t0)
        return hello, offset

    def _joined(self, hello: wire.Hello, offset: float, rtt: float) -> None:
        if not self.started:
            self.started = True
            self.sink(
                protocol.RunStarted(
                    run=RUN,
                    world_size=hello.world_size,
                    steps=0,
                    scenario={"watched": True},
                    params=hello.params,
                )
            )
        self.sink(protocol.RankStarted(run=RUN, rank=hello.rank, pid=hello.pid, rows=[]))
        joined = WatchedRank(
            RUN, hello.rank, hello.host, hello.pid, hello.local_rank, hello.world_size, offset, rtt
        )
        self.ranks[hello.rank] = joined
        self.doctor.joined(hello.rank, hello.pid, time.monotonic())
        self.sink(joined)

    async def _read_events(self, reader, hello: wire.Hello, offset: float) -> None:  # type: ignore[no-untyped-def]
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:
                if exc.partial.strip():
                    self.bad_lines += 1
                return
            except (asyncio.LimitOverrunError, ValueError):
                self._refuse("oversized line")
                return
            try:
                event = protocol.decode(line)
            except ProtocolError:
                self.bad_lines += 1
                continue
            if (
                getattr(event, "rank", hello.rank) != hello.rank
                or getattr(event, "run", RUN) != RUN
            ):
                self.bad_lines += 1  # a rank speaks for itself, in this run only
                continue
            if isinstance(event, WatchBeat):  # the doctor's, never recorded
                self.doctor.beat(event, time.monotonic())
                continue
            if isinstance(event, WatchDropped):
                self.dropped[str(hello.rank)] = event.dropped
                self.doctor.ended(hello.rank)
            elif isinstance(event, protocol.Timing):
                self.doctor.stepped(hello.rank, event.step)
            self.sink(on_listener_clock(event, offset))


def on_listener_clock(event: protocol.Event, offset: float) -> protocol.Event:
    """A ``timing`` event with every time moved from the rank's clock onto the listener's."""
    if not isinstance(event, protocol.Timing) or offset == 0:
        return event

    def move(t: object) -> object:
        return t - offset if isinstance(t, float) else t

    spans = {k: [[move(a), move(b)] for a, b in v] for k, v in event.spans.items()}
    ready = [[name, move(t)] for name, t in event.ready]
    buckets = [
        {**b, "launched": move(b.get("launched")), "finished": move(b.get("finished"))}
        for b in event.buckets
    ]
    return replace(event, spans=spans, ready=ready, buckets=buckets)
