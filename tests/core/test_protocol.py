"""The event stream format (pure)."""

from __future__ import annotations

import json
import math

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.protocol import ProtocolError


def test_every_event_in_a_real_recording_round_trips(default_events) -> None:
    assert {type(e) for e in default_events} >= {
        protocol.RunStarted,
        protocol.RankStarted,
        protocol.LocalGrad,
        protocol.AveragedGrad,
        protocol.Params,
        protocol.Timing,
        protocol.Reference,
        protocol.RunFinished,
    }
    for event in default_events:
        assert protocol.decode(protocol.encode(event)) == event


def test_required_fields_and_shape() -> None:
    line = (
        '{"event":"local_grad","run":1,"step":0,"rank":1,"loss":39.625,'
        '"grads":{"weight":[-44.5],"bias":[-12.5]}}'
    )
    e = protocol.decode(line)
    assert isinstance(e, protocol.LocalGrad)
    assert e.grads == {"weight": [-44.5], "bias": [-12.5]}
    assert e.buckets == []  # optional


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("not json", "not JSON"),
        ('{"event": "local_grad", "run": 1', "not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"run": 1}', 'missing "event"'),
        ('{"event": "teleport"}', "unknown event 'teleport'"),
        ('{"event": "params", "run": 1, "step": 0, "rank": 0}', "missing field 'params'"),
        (
            '{"event": "params", "run": 1, "step": "0", "rank": 0, "params": {}}',
            "'step' has the wrong type",
        ),
        (
            '{"event": "params", "run": 1, "step": 0, "rank": 0, "params": {"w": ["a"]}}',
            "'params' has the wrong type",
        ),
        ('{"event": "run_failed", "run": null, "reason": 3}', "'reason' has the wrong type"),
    ],
)
def test_decoder_rejects_bad_lines(line: str, words: str) -> None:
    with pytest.raises(ProtocolError, match=words):
        protocol.decode(line)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("spans", {"forward": [[1, 2.5]], "step": [[3.0, True]]}),  # a bool is not a number
        ("spans", {"forward": [1.0, 2.0]}),  # a span is a pair, not a number
        ("ready", [["w", 1.0], "b"]),
        ("buckets", [{"index": 0}, 3]),
    ],
)
def test_nested_fields_are_checked_to_the_last_item(field: str, value: object) -> None:
    """The window's fast checks (C-level maps over lists) still look at every item."""
    event = {"event": "timing", "run": 1, "step": 0, "rank": 0, "spans": {}, field: value}
    with pytest.raises(ProtocolError, match=f"'{field}' has the wrong type"):
        protocol.decode(json.dumps(event))


def test_whole_numbers_in_float_fields_become_floats() -> None:
    e = protocol.decode(
        '{"event": "timing", "run": 1, "step": 0, "rank": 0, "spans": {"forward": [[1, 2.5]]},'
        ' "ready": [["w", 2]]}'
    )
    assert [type(v) for v in e.spans["forward"][0]] == [float, float]
    assert e.ready == [["w", 2]]  # Any: kept as sent
    p = protocol.decode('{"event": "params", "run": 1, "step": 0, "rank": 0, "params": {"w": [3]}}')
    assert type(p.params["w"][0]) is float


def test_oversized_line_is_rejected_without_parsing() -> None:
    line = json.dumps({"event": "command_error", "message": "x" * protocol.MAX_LINE_BYTES})
    with pytest.raises(ProtocolError, match="exceeds"):
        protocol.decode(line)


def test_non_finite_values_survive() -> None:
    e = protocol.Params(run=1, step=3, rank=0, params={"weight": [math.inf], "bias": [math.nan]})
    back = protocol.decode(protocol.encode(e))
    assert math.isinf(back.params["weight"][0]) and math.isnan(back.params["bias"][0])


@pytest.mark.parametrize(
    "cmd",
    [
        protocol.CancelCommand(run=3),
        protocol.CancelCommand(),
        protocol.WarmCommand(world_size=4),
        protocol.ShutdownCommand(),
        protocol.RunCommand(run=2, scenario={"world_size": 2}, fault={"rank": 1}),
    ],
)
def test_commands_are_typed_and_round_trip(cmd) -> None:
    line = protocol.encode_command(cmd)
    assert json.loads(line)["cmd"] == cmd.kind
    assert protocol.decode_command(line) == cmd


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('{"cmd": "format_disk"}', "unknown command"),
        ('{"cmd": "warm"}', "missing field 'world_size'"),
        ('{"cmd": "warm", "world_size": "four"}', "wrong type"),
        ('{"cmd": "run", "run": 1, "scenario": []}', "wrong type"),
        ("[1, 2", "not JSON"),
    ],
)
def test_bad_commands_are_refused_with_the_reason(line: str, words: str) -> None:
    with pytest.raises(ProtocolError, match=words):
        protocol.decode_command(line)


def test_a_skimming_decoder_passes_the_kinds_it_skims_as_their_lines(default_events) -> None:
    from ddp_viz.model.decoder import LineDecoder, Skimmed

    lines = [protocol.encode(e) for e in default_events]
    skim = frozenset({"timing", "params"})
    decoder = LineDecoder(skim)
    decoder.feed(("\n".join(lines) + "\n").encode())
    seen = []
    while (pair := decoder.next_with_line()) is not None:
        seen.append(pair)
    assert len(seen) == len(default_events)
    for (item, raw), event, line in zip(seen, default_events, lines, strict=True):
        assert raw == line.encode()
        if event.kind in skim:
            assert item == Skimmed(event.kind)
        else:
            assert item == event  # everything else is decoded and validated as before
    assert {s.kind for s, _ in seen if isinstance(s, Skimmed)} == skim
    # not as encode writes it: decoded
    assert protocol.line_kind(b'{"run":1,"event":"timing"}') is None


def test_every_steps_events_say_so_on_their_class_a_kinds_too() -> None:
    """What ``ddp-viz run --json`` passes on undecoded is what the event classes mark
    ``per_step``: the core's tensors, timings and reference, and a kind's own (accumulation's
    micro-batches, defined in its folder); a run's start, end and a rank's one-off events are
    decoded."""
    from ddp_viz.client import per_step_kinds
    from ddp_viz.model.event_base import EVENT_TYPES

    skimmed = per_step_kinds()
    assert skimmed == {"local_grad", "averaged_grad", "params", "timing", "reference", "micro_step"}
    kinds_own = {k for k in skimmed if EVENT_TYPES[k].__module__.startswith("ddp_viz.kinds.")}
    assert kinds_own == {"micro_step"}
