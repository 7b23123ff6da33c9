"""How a watched rank talks to a listener (pure): the handshake, the token proof, the limits.

The listener speaks first, with a fresh random nonce and its clock; the rank answers with
HMAC-SHA256(token, nonce) and who it is. The token itself never crosses the wire, and a
recorded answer is useless against the next nonce. Only after a correct answer does the
listener read a single event line; every line is then checked like any event of the stream.

Clocks: the listener notes its monotonic clock when it sends the nonce (``t0``) and when the
answer arrives (``t1``); the rank reports its own (``clock``) in between. The rank's clock is
then ahead of the listener's by ``clock − (t0 + t1) / 2``, within half the round trip.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from typing import Any

VERSION = 1
MAX_HELLO_BYTES = 64 * 1024  # the answer line, parameter names included
# A connection that has not proved the token by then is dropped. Both ends wait this long:
# eight ranks starting on two busy cores answered the challenge after more than 3 s (5 of 8
# ranks gave up and went unwatched), as a rank's thread waits for its core and its GIL.
HANDSHAKE_S = 20.0
ADDR_ENV, TOKEN_ENV = "DDP_VIZ_ADDR", "DDP_VIZ_TOKEN"
BUDGET_ENV = "DDP_VIZ_BUDGET"  # the share of training time full captures may take


class WireError(ValueError):
    """A handshake line that is not what the protocol says."""


def new_token() -> str:
    return secrets.token_urlsafe(24)


def challenge(clock: float) -> tuple[str, str]:
    """The listener's first line and the nonce it holds."""
    nonce = secrets.token_hex(16)
    line = json.dumps({"hello": "ddp-viz", "version": VERSION, "nonce": nonce, "clock": clock})
    return line, nonce


def proof(token: str, nonce: str) -> str:
    return hmac.new(token.encode(), nonce.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Hello:
    """Who a watched rank is, from its answer."""

    host: str
    pid: int
    rank: int
    local_rank: int
    world_size: int
    clock: float
    params: list[dict[str, Any]]


def parse_challenge(line: bytes) -> tuple[str, float]:
    data = _json_object(line)
    if data.get("hello") != "ddp-viz" or data.get("version") != VERSION:
        raise WireError(f"not a ddp-viz listener of version {VERSION}")
    nonce, clock = data.get("nonce"), data.get("clock")
    if not isinstance(nonce, str) or not isinstance(clock, int | float):
        raise WireError("challenge without a nonce or a clock")
    return nonce, float(clock)


def answer(token: str, nonce: str, hello: Hello) -> str:
    return json.dumps({"auth": proof(token, nonce), "version": VERSION, **hello.__dict__})


def check_answer(line: bytes, token: str, nonce: str) -> Hello:
    """The rank's identity if it proved the token; WireError saying why not otherwise."""
    if len(line) > MAX_HELLO_BYTES:
        raise WireError("answer too long")
    data = _json_object(line)
    if data.get("version") != VERSION:
        raise WireError(f"wrong version {data.get('version')!r}, expected {VERSION}")
    auth = data.get("auth")
    # bytes, not str: compare_digest raises TypeError on a non-ASCII str, which no caller
    # catches; it compares the whole value in constant time (a prefix or a longer value fails)
    if not isinstance(auth, str) or not hmac.compare_digest(
        auth.encode("utf-8", "surrogatepass"), proof(token, nonce).encode()
    ):
        raise WireError("wrong token")
    try:
        hello = Hello(
            host=str(data["host"]),
            pid=int(data["pid"]),
            rank=int(data["rank"]),
            local_rank=int(data["local_rank"]),
            world_size=int(data["world_size"]),
            clock=float(data["clock"]),
            params=list(data.get("params", [])),
        )
    except (KeyError, TypeError, ValueError, OverflowError) as exc:  # int() of an Infinity
        raise WireError(f"answer without {exc}") from None
    if not 0 <= hello.rank < hello.world_size:
        raise WireError(f"rank {hello.rank} outside a world of {hello.world_size}")
    return hello


def _json_object(line: bytes) -> dict[str, Any]:
    try:
        data = json.loads(line)
    # a line nested deeper than the interpreter recurses, from any peer: not JSON to us
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise WireError("not JSON") from None
    if not isinstance(data, dict):
        raise WireError("not a JSON object")
    return data
