"""Helpers for the widget tests: windows fed recorded events, no engine, no torch."""

from __future__ import annotations

from ddp_viz._qt.main_window import MainWindow
from ddp_viz.model import protocol


def feed(window: MainWindow, events: list[protocol.Event]) -> None:
    """Play recorded engine events into the window as if its engine had sent them."""
    s = window.session
    for e in events:
        if isinstance(e, protocol.RunStarted):
            s._pending_run = e.run  # the window asked for this run
        s.on_transport_event(e)
