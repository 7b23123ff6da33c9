"""Watched runs made in a test: the run's start, then the events the test gives (pure)."""

from __future__ import annotations

from ddp_viz.model import protocol
from ddp_viz.model.timeline import RunRecord

# gloo's words in a rank whose peer went away
GONE = "RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:7566."


def run(*events: protocol.Event, world: int = 3) -> RunRecord:
    """A watched run of ``world`` ranks that has seen ``events``."""
    rec = RunRecord()
    rec.apply(protocol.RunStarted(1, world, 0, {"watched": True}, params=[]))
    for e in events:
        rec.apply(e)
    return rec
