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


def _by_step(events: list) -> tuple[list, list[list], list]:
    """The events before the first step, each step's, and the run's end."""
    head = [e for e in events if getattr(e, "step", None) is None and e.kind != "run_finished"]
    steps: dict[int, list] = {}
    for e in events:
        if getattr(e, "step", None) is not None:
            steps.setdefault(e.step, []).append(e)
    return head, [steps[s] for s in sorted(steps)], [e for e in events if e.kind == "run_finished"]


def _refresh(window) -> None:
    window.session._dirty = True
    window.session.tick()


def test_a_fast_run_repaints_the_plots_and_the_stage_in_turns(qtbot, window) -> None:
    """Several steps a refresh, following the newest: each refresh redraws the plots or the
    stage, never both; the run's end brings everything up to date at once."""
    head, steps, end = _by_step(list(linear_run(2, steps=40).events))
    feed(window, head)
    assert window.player.follow_latest
    calls = _spy(window)
    for k in range(4):
        feed(window, [e for st in steps[k * 5 : k * 5 + 5] for e in st])
        _refresh(window)
    assert calls in (["plots", "stage", "plots", "stage"], ["stage", "plots", "stage", "plots"])
    calls.clear()
    feed(window, [e for st in steps[20:] for e in st] + end)
    assert window.session.record.done and {"plots", "stage"} <= set(calls)
    assert list(window.plots._curves["loss0"].getData()[0]) == list(range(1, 41))
    assert window.player.cursor.step == 39


def test_a_slow_run_redraws_both_at_every_refresh(qtbot, window) -> None:
    """A step a refresh (a watched run, a big model): taking turns would leave the stage a
    step behind."""
    head, steps, _ = _by_step(list(linear_run(2, steps=40).events))
    feed(window, head)
    calls = _spy(window)
    for k in range(3):
        feed(window, steps[k])
        _refresh(window)
        assert window.player.cursor.step == k
    assert calls == ["plots", "stage"] * 3


def test_a_view_skipped_when_the_events_pause_is_drawn_soon_after(qtbot, window) -> None:
    head, steps, _ = _by_step(list(linear_run(2, steps=40).events))
    feed(window, head)
    feed(window, [e for st in steps[:6] for e in st])
    _refresh(window)
    feed(window, [e for st in steps[6:12] for e in st])
    calls = _spy(window)
    _refresh(window)  # one of the two, then nothing more comes
    assert len(calls) == 1
    qtbot.waitUntil(lambda: len(calls) == 2, timeout=10_000)
    assert set(calls) == {"plots", "stage"} and window.player.cursor.step == 11


def test_a_short_run_redraws_both_at_every_refresh(qtbot, window) -> None:
    """A lesson's few steps animate phase by phase: the stage is never left behind."""
    events = list(linear_run(2, steps=3).events)
    feed(window, events[:-1])
    assert not window.player.follow_latest
    calls = _spy(window)
    for _ in range(2):
        _refresh(window)
    assert calls == ["plots", "stage", "plots", "stage"]
    assert isinstance(events[-1], protocol.RunFinished)


def test_a_streaming_plots_y_range_moves_rarely_and_always_holds_the_data(window) -> None:
    """Each move of a range re-lays its axis (the costliest part of a plot's repaint): a
    range that data leaves grows by half again, so a loss that grows a hundredfold moves it
    a few times, not at nearly every step."""
    plots, moved = window.plots, []

    class Plot:  # what _expand_y asks of a PlotWidget
        def setYRange(self, lo: float, hi: float, padding: float) -> None:
            moved.append((lo, hi))

    plot = Plot()
    plots._y_range[plot] = None
    for v in range(1, 101):
        plots._expand_y(plot, -1.0, float(v))
        lo, hi = plots._y_range[plot]
        assert lo <= -1.0 and v <= hi
    assert len(moved) <= 10, len(moved)


def test_a_plots_axes_are_painted_again_only_when_they_change(window, monkeypatch) -> None:
    """pyqtgraph replays an axis's picture on every repaint of its plot (most of the cost);
    the axes are cached as pixmaps, drawn again when their range moves."""
    import pyqtgraph as pg
    from PySide6.QtWidgets import QApplication

    feed(window, list(linear_run(2, steps=3).events))
    painted: list[str] = []
    paint = pg.AxisItem.paint
    monkeypatch.setattr(
        pg.AxisItem, "paint", lambda self, *a: (painted.append(self.orientation), paint(self, *a))
    )
    view = window.plots.loss_plot
    view.grab()
    painted.clear()
    view.grab()  # nothing moved
    assert painted == []
    view.setYRange(0.0, 1e3)
    QApplication.processEvents()
    view.grab()
    assert "left" in painted


def test_plots_left_behind_by_the_last_refresh_catch_up_when_the_events_stop(qtbot, window) -> None:
    """A streaming run's refresh pushes one plot; when the run's events stop (a hang, a
    pause) the others follow on a timer of their own, not at the next event, which may never
    come."""
    head, steps, _ = _by_step(list(linear_run(2, steps=40).events))
    feed(window, head)
    plots = window.plots
    for k in range(5):  # a step a refresh: no turns of the window's own (RefreshTurns)
        feed(window, steps[k])
        _refresh(window)
    assert plots._stale  # the last refresh pushed one plot only; the run now pauses
    qtbot.waitUntil(lambda: not plots._stale, timeout=5_000)
    for curve in ("loss0", "p0:1"):
        assert list(plots._curves[curve].getData()[0])[-1] == 5  # the last step it sent


def test_the_stage_reads_a_streaming_record_only_when_told(qtbot, window) -> None:
    """A repaint between refreshes (a relayout, a tooltip) draws the frame the stage has;
    the events that came since reach it at its next refresh (a turn, a move)."""
    head, steps, _ = _by_step(list(linear_run(2, steps=6).events))
    feed(window, head + steps[0] + steps[1])
    stage = window.stage
    built = stage.frame()
    for event in steps[2]:  # the record has news; the stage was not told yet
        window.session.record.apply(event)
    assert stage.frame() is built
    stage.refresh()
    assert stage.frame() is not built


def test_a_streaming_stage_is_painted_in_a_slice_of_its_own(qtbot) -> None:
    """Following a streaming run, the stage's turn builds its frame and its paint comes a
    few ms later, so the window's thread sleeps between the two; a learner's own move is
    painted at once."""
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication

    from ddp_viz._qt.stage import StageWidget
    from ddp_viz.model.course import load_course
    from ddp_viz.model.theme import load_theme
    from ddp_viz.model.timeline import RunRecord

    head, steps, _ = _by_step(list(linear_run(2, steps=6).events))
    rec = RunRecord()
    for event in head + steps[0]:
        rec.apply(event)
    stage = StageWidget(load_theme("light"), load_course().get("ddp-pattern"))
    qtbot.addWidget(stage)
    stage.set_record(rec)
    stage.show()
    qtbot.waitExposed(stage)
    painted: list[int] = []

    class Paints(QObject):
        def eventFilter(self, obj, event) -> bool:
            if event.type() == QEvent.Type.Paint:
                painted.append(len(stage.frame().texts))
            return False

    spy = Paints()
    stage.installEventFilter(spy)
    QApplication.processEvents()
    painted.clear()
    for event in steps[1]:
        rec.apply(event)
    stage.refresh(streaming=True)
    assert stage._frame_key[1] == len(rec.events)  # built at its turn
    QApplication.processEvents()
    assert painted == []  # not in the same slice of the thread
    qtbot.waitUntil(lambda: bool(painted), timeout=2_000)
    painted.clear()
    stage.refresh()  # a move by hand
    QApplication.processEvents()
    assert painted


def _title_step(window) -> int:
    """The step the stage's title says ("Step 7 of 40 · …"), from its frame's words."""
    import re

    return int(re.search(r"Step (\d+) of", window.stage.frame().all_text()).group(1))


def test_following_a_run_the_toolbar_says_the_step_the_stage_paints(qtbot, window) -> None:
    """The stage paints a streaming step a moment after its refresh; the toolbar's position
    and slider once moved at once, and a screenshot of a 200-step run read "Step 188 of 200"
    beside "189/200"."""
    head, steps, _ = _by_step(list(linear_run(3, steps=40).events))
    feed(window, head)
    shown: list[int] = []
    window.stage.streamed_shown.connect(lambda: shown.append(_title_step(window)))
    for k in range(3):  # a step a refresh, each followed
        before = window.position_label.text()
        feed(window, steps[k])
        _refresh(window)
        assert window.streaming and window.player.cursor.step == k
        assert window.position_label.text() == before  # not ahead of the stage's paint
        with qtbot.waitSignal(window.stage.streamed_shown, timeout=10_000):
            pass
        assert f" step {k + 1}/" in window.position_label.text()
        assert window.step_slider.value() == k
        assert shown[-1] == k + 1  # the frame painted then says the same step
