"""The thread finding's jump carries its own key (pure: events made here), like every other
finding's, so the page links the line it belongs to."""

from __future__ import annotations

from ddp_viz.kinds.watched.events import WatchDropped, WatchFailure, WatchSummary
from ddp_viz.kinds.watched.jumps import jumps
from tests.watch.made_runs import run


def test_the_threads_jump_is_keyed_by_its_finding() -> None:
    error = WatchFailure(1, 1, 2, 1.0, "ValueError", "bad", "t.py:12 in fetch", thread="fetch")
    ended = [WatchDropped(1, r, 0, steps=4) for r in (0, 1, 2)]
    found = jumps(run(error, *ended, WatchSummary(1, 0)))
    assert list(found) == ["thread"] and found["thread"].key == "thread"
