"""One line per event and per command, exactly as written: the kind first, no spaces, strict
JSON (a non-finite number as its word), the kind read off a line's start without parsing it,
and each bad line refused with its reason, at the size limit on both sides."""

from __future__ import annotations

import json
import math

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.protocol import (
    CancelCommand,
    CommandError,
    ProtocolError,
    RunFailed,
    RunFinished,
    WarmCommand,
)

END = RunFinished(run=1, steps_completed=3, elapsed_s=0.5)


def test_an_event_is_one_line_kind_first_without_spaces() -> None:
    assert protocol.encode(END) == (
        '{"event":"run_finished","run":1,"steps_completed":3,"elapsed_s":0.5}'
    )
    assert protocol.to_dict(CommandError("busy")) == {
        "event": "command_error",
        "message": "busy",
        "field": "",
    }
    assert protocol.encode(RunFailed(run=2, reason="x")) == (
        '{"event":"run_failed","run":2,"reason":"x","rank":null}'
    )


def test_a_non_finite_number_is_written_as_its_word() -> None:
    line = protocol.encode(RunFinished(run=1, steps_completed=0, elapsed_s=math.nan))
    assert line == '{"event":"run_finished","run":1,"steps_completed":0,"elapsed_s":"NaN"}'
    assert protocol.dumps({"a": [math.inf, -math.inf, 1.5]}) == (
        '{"a":["Infinity","-Infinity",1.5]}'
    )
    assert protocol.dumps([1, "x"]) == '[1,"x"]'
    back = protocol.decode(line)
    assert isinstance(back, RunFinished) and math.isnan(back.elapsed_s)


def test_the_kind_is_read_off_a_lines_start_as_encode_writes_it() -> None:
    assert protocol.line_kind(protocol.encode(END).encode()) == "run_finished"
    assert protocol.line_kind(b'{"event":"timing"}') == "timing"
    assert protocol.line_kind(b'{"event": "timing"}') is None  # not as encode writes it
    assert protocol.line_kind(b'{"event":"') is None  # no end to the word
    assert protocol.line_kind(b'{"event":""}') == ""
    assert protocol.line_kind(b'{"event":"t\xffx"}') == "t\ufffdx"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[1]", "an event must be a JSON object"),
        ('{"run": 1}', 'missing "event" field'),
        ('{"event": 3}', 'missing "event" field'),
        ('{"event": "nope"}', "unknown event 'nope'"),
        ('{"event": "run_finished", "run": 1}', "run_finished: missing field 'steps_completed'"),
        ("{", "not JSON: Expecting property name enclosed in double quotes at column 2"),
        ('{"a": 1}x', "not JSON: Extra data at column 9"),
        (b'{"event": "\xff"}', None),
    ],
)
def test_each_bad_line_is_refused_with_its_reason(line, message) -> None:
    with pytest.raises(ProtocolError) as caught:
        protocol.decode(line)
    if message is None:
        assert str(caught.value).startswith("not UTF-8: ")
    else:
        assert str(caught.value) == message


def test_the_line_limit_is_a_mebibyte_taken_at_it_and_refused_past_it() -> None:
    assert protocol.MAX_LINE_BYTES == 1 << 20
    head = '{"event":"command_error","message":"'
    pad = protocol.MAX_LINE_BYTES - len(head) - 2
    at_limit = head + "m" * pad + '"}'
    assert len(at_limit) == protocol.MAX_LINE_BYTES
    assert protocol.decode(at_limit) == CommandError("m" * pad)
    past = head + "m" * (pad + 1) + '"}'
    with pytest.raises(ProtocolError) as caught:
        protocol.decode(past)
    assert str(caught.value) == f"line of {len(past)} bytes exceeds the 1048576 limit"


def test_a_command_is_one_line_and_each_bad_one_is_refused_with_its_reason() -> None:
    assert protocol.encode_command(WarmCommand(world_size=4)) == '{"cmd":"warm","world_size":4}'
    assert protocol.encode_command(CancelCommand()) == '{"cmd":"cancel","run":null}'
    assert protocol.decode_command(b'{"cmd": "cancel", "run": 2}') == CancelCommand(2)

    def refused(line) -> str:
        with pytest.raises(ProtocolError) as caught:
            protocol.decode_command(line)
        return str(caught.value)

    every = "unknown command; expected one of run, cancel, warm, shutdown"
    assert refused('{"cmd": "format"}') == every
    assert refused("[1]") == every
    assert refused('{"run": 1}') == every
    assert refused("{").startswith("command is not JSON: ")
    assert refused(b'{"cmd": "\xff"}').startswith("command is not JSON: ")
    assert refused('{"cmd": "warm", "world_size": 1.5}') == (
        "warm: field 'world_size' has the wrong type (1.5)"
    )
    big = '{"cmd":"cancel","x":"' + "m" * protocol.MAX_LINE_BYTES + '"}'
    assert refused(big) == f"command of {len(big)} bytes exceeds the 1048576 limit"
    head = '{"cmd":"cancel","run":1,"x":"'
    at_limit = head + "m" * (protocol.MAX_LINE_BYTES - len(head) - 2) + '"}'
    assert len(at_limit) == protocol.MAX_LINE_BYTES
    assert json.loads(at_limit)["cmd"] == "cancel"
    assert protocol.decode_command(at_limit) == CancelCommand(1)  # other keys are left out


def test_a_kinds_event_not_yet_registered_is_found_by_loading_the_kinds(monkeypatch) -> None:
    """A kind defines its events in its own folder: a line of one read before any kind was
    imported loads them, once, and decodes; a kind no folder defines stays unknown."""
    from ddp_viz.kinds.watched.events import WatchDropped
    from ddp_viz.model import registry
    from ddp_viz.model.event_base import EVENT_TYPES

    loads = []

    def load() -> None:
        loads.append(1)
        EVENT_TYPES["watch_dropped"] = WatchDropped

    monkeypatch.delitem(EVENT_TYPES, "watch_dropped")
    monkeypatch.setattr(registry, "load", load)
    line = '{"event":"watch_dropped","run":1,"rank":2,"dropped":0,"steps":4}'
    assert protocol.decode(line) == WatchDropped(1, 2, 0, 4)
    assert loads == [1]
    assert protocol.decode(line) == WatchDropped(1, 2, 0, 4) and loads == [1]  # found now
    with pytest.raises(protocol.ProtocolError, match="unknown event 'no_such'"):
        protocol.decode('{"event":"no_such","run":1}')
