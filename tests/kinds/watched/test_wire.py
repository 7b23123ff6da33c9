"""The watch handshake's lines, pure: what the listener's challenge says, the proof a rank
computes, the identity read from its answer, and every malformed line a peer may send refused
with a WireError that says why (never another exception: the listener catches that one only).
Expected values are computed here by hand (json, hmac), never by the code under test."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import random

import pytest

from ddp_viz.kinds.watched import wire

TOKEN = "tok-en"
NONCE = "00112233445566778899aabbccddeeff"
PARAMS = [{"name": "weight", "shape": [2, 3]}, {"name": "bias", "shape": [3]}]


def by_hand(token: str, nonce: str) -> str:
    return hmac.new(token.encode(), nonce.encode(), hashlib.sha256).hexdigest()


def answer_line(**fields: object) -> bytes:
    """A rank's answer proving TOKEN for NONCE: rank 2 of 3, with ``fields`` changed (a field
    given as ``...`` is left out)."""
    data: dict[str, object] = {
        "auth": by_hand(TOKEN, NONCE),
        "version": 1,
        "host": "node-b",
        "pid": 4321,
        "rank": 2,
        "local_rank": 0,
        "world_size": 3,
        "clock": 12.5,
        "params": PARAMS,
    }
    data.update(fields)
    return json.dumps({k: v for k, v in data.items() if v is not ...}).encode()


# --- the listener's challenge -----------------------------------------------------------------


def test_the_challenge_says_who_speaks_its_version_a_fresh_nonce_and_the_clock() -> None:
    line, nonce = wire.challenge(123.25)
    data = json.loads(line)
    assert data == {"hello": "ddp-viz", "version": 1, "nonce": nonce, "clock": 123.25}
    assert len(nonce) == 32 and int(nonce, 16) >= 0  # 16 random bytes, in hex
    assert wire.challenge(123.25)[1] != nonce  # a recorded answer fits no other connection
    assert wire.parse_challenge(line.encode()) == (nonce, 123.25)


def test_a_challenge_with_an_integer_clock_reads_as_a_float() -> None:
    line = json.dumps({"hello": "ddp-viz", "version": 1, "nonce": "ab", "clock": 7})
    nonce, clock = wire.parse_challenge(line.encode())
    assert (nonce, clock) == ("ab", 7.0) and isinstance(clock, float)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"hello": "ddp-vi", "version": 1, "nonce": "ab", "clock": 1.0}, "not a ddp-viz listener"),
        ({"version": 1, "nonce": "ab", "clock": 1.0}, "not a ddp-viz listener of version 1"),
        ({"hello": "ddp-viz", "version": 2, "nonce": "ab", "clock": 1.0}, "of version 1"),
        ({"hello": "ddp-viz", "nonce": "ab", "clock": 1.0}, "of version 1"),
        ({"hello": "ddp-viz", "version": 1, "clock": 1.0}, "without a nonce or a clock"),
        ({"hello": "ddp-viz", "version": 1, "nonce": 5, "clock": 1.0}, "without a nonce"),
        ({"hello": "ddp-viz", "version": 1, "nonce": "ab"}, "without a nonce or a clock"),
        ({"hello": "ddp-viz", "version": 1, "nonce": "ab", "clock": "1.0"}, "or a clock"),
        ([1, 2], "not a JSON object"),
        ("ddp-viz", "not a JSON object"),
    ],
)
def test_a_challenge_that_is_not_the_protocol_is_refused_saying_why(data, says) -> None:
    with pytest.raises(wire.WireError, match=says):
        wire.parse_challenge(json.dumps(data).encode())


@pytest.mark.parametrize("line", [b"", b"{", b"hello", b"\xff\xfe{}", b"{'a': 1}", b"\x00"])
def test_a_challenge_that_is_not_json_is_refused(line) -> None:
    with pytest.raises(wire.WireError, match=r"^not JSON$"):
        wire.parse_challenge(line)


# --- the rank's answer ------------------------------------------------------------------------


def test_the_proof_is_the_hmac_sha256_of_the_nonce_under_the_token() -> None:
    assert wire.proof(TOKEN, NONCE) == by_hand(TOKEN, NONCE)
    assert len(wire.proof(TOKEN, NONCE)) == 64
    assert wire.proof(TOKEN, NONCE) != wire.proof(TOKEN, NONCE[::-1])
    assert wire.proof(TOKEN + "x", NONCE) != by_hand(TOKEN, NONCE)


def test_an_answer_carries_the_proof_the_version_and_every_field_of_the_identity() -> None:
    hello = wire.Hello("node-b", 4321, 2, 0, 3, 12.5, PARAMS)
    data = json.loads(wire.answer(TOKEN, NONCE, hello))
    assert data == {
        "auth": by_hand(TOKEN, NONCE),
        "version": 1,
        "host": "node-b",
        "pid": 4321,
        "rank": 2,
        "local_rank": 0,
        "world_size": 3,
        "clock": 12.5,
        "params": PARAMS,
    }
    assert TOKEN not in json.dumps(data)  # the token itself never crosses the wire


def test_a_right_answer_gives_the_rank_every_field_as_sent() -> None:
    got = wire.check_answer(answer_line(), TOKEN, NONCE)
    assert got == wire.Hello("node-b", 4321, 2, 0, 3, 12.5, PARAMS)


def test_fields_are_read_as_their_types() -> None:
    got = wire.check_answer(
        answer_line(host=7, pid="99", rank="1", local_rank="1", world_size="2", clock="3.5"),
        TOKEN,
        NONCE,
    )
    assert got == wire.Hello("7", 99, 1, 1, 2, 3.5, PARAMS)
    assert isinstance(got.clock, float) and isinstance(got.rank, int)


def test_an_answer_without_parameter_names_has_none() -> None:
    assert wire.check_answer(answer_line(params=...), TOKEN, NONCE).params == []


@pytest.mark.parametrize(("rank", "world"), [(0, 1), (0, 3), (2, 3), (7, 8)])
def test_every_rank_inside_its_world_is_accepted(rank, world) -> None:
    got = wire.check_answer(answer_line(rank=rank, world_size=world), TOKEN, NONCE)
    assert (got.rank, got.world_size) == (rank, world)


@pytest.mark.parametrize(("rank", "world"), [(-1, 3), (3, 3), (4, 3), (0, 0)])
def test_a_rank_outside_its_world_is_refused(rank, world) -> None:
    with pytest.raises(wire.WireError, match=f"^rank {rank} outside a world of {world}$"):
        wire.check_answer(answer_line(rank=rank, world_size=world), TOKEN, NONCE)


@pytest.mark.parametrize("field", ["host", "pid", "rank", "local_rank", "world_size", "clock"])
def test_an_answer_missing_a_field_is_refused_naming_it(field) -> None:
    with pytest.raises(wire.WireError, match=f"^answer without '{field}'$"):
        wire.check_answer(answer_line(**{field: ...}), TOKEN, NONCE)


@pytest.mark.parametrize(
    "fields",
    [{"pid": "abc"}, {"rank": None}, {"world_size": [3]}, {"clock": "soon"}, {"params": 5}],
)
def test_an_answer_with_a_field_of_the_wrong_type_is_refused(fields) -> None:
    with pytest.raises(wire.WireError, match=r"^answer without "):
        wire.check_answer(answer_line(**fields), TOKEN, NONCE)


@pytest.mark.parametrize("version", [0, 2, "1", None, ...])
def test_an_answer_of_another_version_is_refused_naming_both(version) -> None:
    got = None if version is ... else version
    with pytest.raises(wire.WireError) as caught:
        wire.check_answer(answer_line(version=version), TOKEN, NONCE)
    assert str(caught.value) == f"wrong version {got!r}, expected 1"


@pytest.mark.parametrize("auth", [None, 5, "", by_hand(TOKEN, NONCE)[:-1], by_hand("x", NONCE)])
def test_an_answer_without_the_right_proof_is_refused(auth) -> None:
    with pytest.raises(wire.WireError, match=r"^wrong token$"):
        wire.check_answer(answer_line(auth=auth), TOKEN, NONCE)


def test_the_proof_is_checked_against_this_nonce_and_this_token() -> None:
    with pytest.raises(wire.WireError, match="wrong token"):
        wire.check_answer(answer_line(), TOKEN, NONCE[:-1] + "0")
    with pytest.raises(wire.WireError, match="wrong token"):
        wire.check_answer(answer_line(), "another", NONCE)


def test_an_answer_up_to_the_limit_is_read_and_one_byte_more_is_refused() -> None:
    line = answer_line()
    padded = line[:-1] + b" " * (wire.MAX_HELLO_BYTES - len(line)) + b"}"
    assert len(padded) == 64 * 1024
    assert wire.check_answer(padded, TOKEN, NONCE).rank == 2
    longer = line[:-1] + b" " * (wire.MAX_HELLO_BYTES + 1 - len(line)) + b"}"
    with pytest.raises(wire.WireError, match=r"^answer too long$"):
        wire.check_answer(longer, TOKEN, NONCE)


@pytest.mark.parametrize("line", [b"", b"\xff", b"[]", b"null", b'"a"', b"{1: 2}"])
def test_an_answer_that_is_no_json_object_is_refused(line) -> None:
    with pytest.raises(wire.WireError, match=r"^not (JSON|a JSON object)$"):
        wire.check_answer(line, TOKEN, NONCE)


# --- malformed lines never raise anything but WireError -----------------------------------------


HOSTILE = [
    b"[" * 60_000,  # nested deeper than Python's recursion allows
    b'{"a":' * 20_000,
    answer_line(pid=float("inf")),  # json writes Infinity; int() of it overflows
    answer_line(rank=float("-inf")),
    answer_line(world_size=float("nan")),
    answer_line(clock=float("inf")),
    answer_line(pid=1e308),
    answer_line(params={"weight": 1}),
    answer_line(auth="é" * 64),
    answer_line(auth="\ud800"),
]


@pytest.mark.parametrize("line", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_answers_are_a_wire_error_or_an_identity(line) -> None:
    try:
        got = wire.check_answer(line, TOKEN, NONCE)
    except wire.WireError:
        return
    assert 0 <= got.rank < got.world_size


@pytest.mark.parametrize("line", HOSTILE[:2], ids=range(2))
def test_hostile_challenges_are_a_wire_error(line) -> None:
    with pytest.raises(wire.WireError):
        wire.parse_challenge(line)


def test_random_bytes_and_mangled_answers_are_a_wire_error() -> None:
    rng = random.Random(7)
    good = answer_line()
    for _ in range(300):
        noise = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
        cut = good[: rng.randrange(len(good))]
        flipped = bytearray(good)
        flipped[rng.randrange(len(good))] = rng.randrange(256)
        for line in (noise, cut, bytes(flipped)):
            with contextlib.suppress(wire.WireError):
                wire.check_answer(line, TOKEN, NONCE)
            with contextlib.suppress(wire.WireError):
                wire.parse_challenge(line)


def test_a_new_token_is_24_random_bytes_in_url_safe_text() -> None:
    tokens = {wire.new_token() for _ in range(20)}
    assert len(tokens) == 20
    for t in tokens:
        assert len(t) == 32  # 24 bytes, base64 without padding
        assert set(t) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
