"""A rank's outbox: events go out a few steps at a time, in order, before any control message."""

from __future__ import annotations

from ddp_viz.engine.outbox import Outbox
from ddp_viz.model import protocol


def ev(step: int) -> protocol.Event:
    return protocol.Params(run=1, step=step, rank=0, params={"w": [float(step)]})


def lines(sent: list[dict]) -> list[protocol.Event]:
    return [protocol.decode(x) for m in sent if m["ctl"] == "lines" for x in m["text"].splitlines()]


def test_events_wait_for_the_interval_then_go_out_together_in_order() -> None:
    sent: list[dict] = []
    box = Outbox(sent.append, interval_s=3600)
    box.add(ev(0), now=True)
    box.add(ev(1))
    box.add(ev(2))
    assert lines(sent) == [ev(0)]  # the first step at once, the rest held
    box.control({"ctl": "done", "steps": 3})
    assert lines(sent) == [ev(0), ev(1), ev(2)]
    assert sent[-1] == {"ctl": "done", "steps": 3}  # after every event queued before it
    assert len(sent) == 3


def test_with_no_interval_every_add_goes_out() -> None:
    sent: list[dict] = []
    box = Outbox(sent.append, interval_s=0)
    for s in range(3):
        box.add(ev(s))
    assert len(sent) == 3 and lines(sent) == [ev(0), ev(1), ev(2)]
    box.flush()
    assert len(sent) == 3  # nothing queued: no empty message


def test_lines_already_encoded_wait_for_the_interval_too() -> None:
    sent: list[dict] = []
    box = Outbox(sent.append, interval_s=3600)
    box.add_lines(['{"event":"x"}'])
    assert sent == []  # held, as an event would be
    box.flush()
    assert sent == [{"ctl": "lines", "text": '{"event":"x"}\n'}]


def test_at_exactly_the_interval_the_lines_go() -> None:
    sent: list[dict] = []
    now = [100.0]
    box = Outbox(sent.append, interval_s=0.25, clock=lambda: now[0])  # binary fractions
    box.add_lines(['{"event":"x"}'])
    now[0] = 100.125
    box.add_lines(['{"event":"y"}'])
    assert sent == []  # 125 ms: held
    now[0] = 100.25  # 250 ms after the last hand-over, to the tick
    box.add_lines(['{"event":"z"}'])
    assert sent == [{"ctl": "lines", "text": '{"event":"x"}\n{"event":"y"}\n{"event":"z"}\n'}]
