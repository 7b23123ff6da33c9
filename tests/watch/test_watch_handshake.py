"""The watch handshake against answers that are nearly right (pure: asyncio and sockets on
127.0.0.1, no torch): the right version and a well-formed identity, but an empty, truncated,
wrong-case, over-long or non-ASCII proof, a proof replayed from another connection's nonce, or a
right proof for another token. Each is refused and counted while an honest rank streams on,
losing nothing; only the full, exact HMAC of this nonce under this token gets a line read."""

from __future__ import annotations

import asyncio
import json

import pytest

from ddp_viz.kinds.watched import wire
from ddp_viz.kinds.watched.watch.listener import Listener
from ddp_viz.model import protocol
from tests.watch.test_watch_listener import TOKEN, connect, hello, step_events


def forged(auth: str, rank: int = 1) -> str:
    """A well-formed answer of the right version whose proof is ``auth``."""
    return json.dumps({"auth": auth, "version": wire.VERSION, **hello(rank).__dict__})


NEARLY = {
    "empty": lambda p: "",
    "truncated to half": lambda p: p[:32],
    "one character short": lambda p: p[:-1],
    "upper case": lambda p: p.upper(),
    "one character more": lambda p: p + "0",
    "twice": lambda p: p + p,
    "non-ASCII": lambda p: p[:-1] + "é",
    "a lone surrogate": lambda p: p[:-1] + "\ud800",
    "a number": lambda p: int(p, 16),
    "another token's": None,  # filled in below: the right HMAC under another token
}


def test_nearly_right_proofs_are_refused_by_check_answer() -> None:
    _, nonce = wire.challenge(1.0)
    right = wire.proof(TOKEN, nonce)
    assert wire.check_answer(forged(right).encode(), TOKEN, nonce).rank == 1
    for name, change in NEARLY.items():
        auth = wire.proof("another-token", nonce) if change is None else change(right)
        with pytest.raises(wire.WireError, match="wrong token"):
            wire.check_answer(forged(auth).encode(), TOKEN, nonce)
            pytest.fail(name)


def test_nearly_right_and_replayed_answers_are_refused_and_counted_while_a_rank_streams() -> None:
    steps = 120
    got: list[protocol.Event] = []
    heard: list[tuple[str, str]] = []  # (nonce, the honest rank's answer line)
    answered = asyncio.Event

    async def main() -> Listener:
        listener = Listener(TOKEN, got.append, handshake_s=5.0)
        _, port = await listener.start()
        spoken = answered()

        async def honest() -> None:
            _, writer, nonce = await connect(port)
            line = wire.answer(TOKEN, nonce, hello(0))
            heard.append((nonce, line))
            writer.write((line + "\n").encode())
            await writer.drain()
            spoken.set()
            for step in range(steps):
                for e in step_events(0, step):
                    writer.write((protocol.encode(e) + "\n").encode())
                await writer.drain()
                await asyncio.sleep(0)  # interleave with the others
            writer.close()
            await writer.wait_closed()

        async def send(make) -> str:  # type: ignore[no-untyped-def]
            reader, writer, nonce = await connect(port)
            writer.write((make(nonce) + "\n").encode())
            await writer.drain()
            await reader.read()  # the listener closes without reading a line more
            writer.close()
            return nonce

        async def replay() -> str:
            await spoken.wait()  # what an eavesdropper saw the honest rank send
            return await send(lambda _nonce: heard[0][1])

        async def nearly(change) -> str:  # type: ignore[no-untyped-def]
            def make(nonce: str) -> str:
                right = wire.proof(TOKEN, nonce)
                auth = wire.proof("another-token", nonce) if change is None else change(right)
                return forged(auth)

            return await send(make)

        tasks = [honest(), replay(), *(nearly(c) for c in NEARLY.values())]
        nonces = await asyncio.wait_for(asyncio.gather(*tasks), timeout=30)
        # every connection was given a nonce of its own: a recorded answer fits no other
        assert len({heard[0][0], *nonces[1:]}) == len(nonces)
        await listener.close()
        return listener

    listener = asyncio.run(main())
    refused = dict(listener.refused)
    assert refused.pop("wrong token") == len(NEARLY) + 1, listener.refused  # and the replay
    assert not refused, refused
    # only the honest rank joined, and every line it sent arrived, in order
    assert [e.rank for e in got if e.kind == "watched_rank"] == [0]
    # (a rank that closes without its last word is also named lost: not a line it sent)
    mine = [e for e in got if hasattr(e, "step") and e.kind != "watch_rank_lost"]
    assert mine == [e for s in range(steps) for e in step_events(0, s)]
