"""How the window refreshes while a run streams (widgets fed recorded events)."""

from __future__ import annotations

from ddp_viz.model import protocol
from tests.frames import linear_run
from tests.qt_helpers import feed


def _spy(window) -> list[str]:
    """Which views each refresh redrew: 'plots', 'stage' (the player moved the stage)."""
    calls: list[str] = []
    plots, player = window.plots.update_record, window.player.on_record_updated
    window.plots.update_record = lambda *a, **k: (calls.append("plots"), plots(*a, **k))
    window.player.on_record_updated = lambda: (calls.append("stage"), player())
    return calls


def test_a_fast_run_repaints_the_plots_and_the_stage_in_turns(qtbot, window) -> None:
    """Following the newest step, each refresh redraws the plots or the stage, never both,
    so no frame pays for both; the run's end brings everything up to date at once."""
    events = list(linear_run(2, steps=40).events)
    end = next(i for i, e in enumerate(events) if isinstance(e, protocol.RunFinished))
    feed(window, events[: end // 2])
    assert window.player.follow_latest
    calls = _spy(window)
    for _ in range(4):
        window.session._dirty = True
        window.session.tick()
    assert calls in (["plots", "stage", "plots", "stage"], ["stage", "plots", "stage", "plots"])
    calls.clear()
    feed(window, events[end // 2 :])
    assert window.session.record.done
    assert {"plots", "stage"} <= set(calls)
    assert list(window.plots._curves["loss0"].getData()[0]) == list(range(1, 41))
    assert window.player.cursor.step == 39


def test_a_short_run_redraws_both_at_every_refresh(qtbot, window) -> None:
    """A lesson's few steps animate phase by phase: the stage is never left behind."""
    events = list(linear_run(2, steps=3).events)
    feed(window, events[:-1])
    assert not window.player.follow_latest
    calls = _spy(window)
    for _ in range(2):
        window.session._dirty = True
        window.session.tick()
    assert calls == ["plots", "stage", "plots", "stage"]
