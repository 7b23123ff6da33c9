"""The watched page in the window, fed the recorded run of 120 tensors in 7 buckets (issue 33,
16–17): a Run tab that lists every bucket and tensor, sortable; one gradient norm per rank in
the plot; Right moves a whole watched step; a rank that ended says so before the launcher."""

from __future__ import annotations

from ddp_viz._qt.plot_lines import Lines
from ddp_viz.model.timeline import Cursor
from tests.conftest import DATA, load_recording
from tests.watch.test_watch_page import MANY, timings


def test_the_run_tab_lists_every_tensor_and_bucket_sortably(make_window) -> None:
    from PySide6.QtCore import Qt

    window = make_window()
    window.file_actions.open_run(DATA / MANY)
    tab = window.run_tab.tables
    assert window.tabs.indexOf(tab) >= 0 and window.tabs.tabText(window.tabs.indexOf(tab)) == "Run"
    window.tabs.setCurrentWidget(tab)
    assert tab.tensors.rowCount() == 120 and tab.buckets.rowCount() == 7
    heads = [tab.tensors.horizontalHeaderItem(c).text() for c in range(tab.tensors.columnCount())]
    col = heads.index("spread")
    tab.tensors.sortByColumn(col, Qt.SortOrder.DescendingOrder)
    values = [float(t.replace("−", "-")) for t in tab.tensors.column(col)]
    assert values == sorted(values, reverse=True)
    # the buckets: hover one for its tensors
    got = timings(3)
    first = tab.buckets.item(0, 0)
    index = int(first.text().removeprefix("#"))
    names = next(b["params"] for b in got[0] if b["index"] == index)
    assert first.toolTip().endswith(", ".join(names))
    # a lesson has no Run tab
    window.set_lesson("ddp-pattern")
    assert window.tabs.indexOf(tab) < 0


def test_the_gradient_plot_draws_one_norm_per_rank_not_one_curve_per_tensor(make_window) -> None:
    window = make_window()
    window.file_actions.open_run(DATA / MANY)
    plots = window.plots
    items = [i for i in plots.param_plot.getPlotItem().items if isinstance(i, Lines)]
    drawn = [line for i in items for line in i.lines if len(line.getData()[0])]
    assert len(drawn) == 3  # rank 0, rank 1 and the average
    assert "per rank" in plots.param_plot.getPlotItem().titleLabel.text


def test_right_moves_a_whole_watched_step(make_window) -> None:
    window = make_window()
    window.file_actions.open_run(DATA / MANY)
    window.player.seek_step(0)
    window._on_forward()
    assert window.player.cursor.step == 1
    window._on_back()
    assert window.player.cursor.step == 0
    window._on_first()
    assert window.player.cursor == Cursor(0, 3)  # a whole step: every plot point of it shown
    window.set_lesson("ddp-pattern")  # a lesson's step still has its four phases
    assert not window.player.whole_steps


def test_a_rank_that_sent_its_last_word_is_done_before_the_launcher_ends(make_window) -> None:
    window = make_window()
    events = load_recording(MANY)
    end = next(i for i, e in enumerate(events) if e.kind == "watch_summary")
    assert sorted(e.rank for e in events[:end] if e.kind == "watch_dropped") == [0, 1]
    window.session.expect_run(1)
    for e in events[:end]:  # the ranks ended; torchrun still winding down
        window.session.on_transport_event(e)
    window.process_view.set_record(window.session.record)
    states = [row[2] for row in window.process_view.rows()]
    assert states == ["done", "done"]


def test_the_run_tab_is_reached_from_the_keyboard_on_a_projector(qtbot, make_window) -> None:
    """At 1280×800 in projector mode the lesson column, and the Run tab in it, was folded away
    with nothing to say how to reach it. Ctrl+T (View ▸ Run tables) shows the column with the
    Run tab chosen and the keyboard in the tensors table, wider than the folded column's 22%;
    the stage and the plots keep their room, and a lesson has nothing for Ctrl+T to show."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    window = make_window((1280, 800))
    window.presentation.set_projector(True)
    window.file_actions.open_run(DATA / MANY)
    QApplication.processEvents()
    tab = window.run_tab.tables
    assert not tab.isVisible()  # folded away with the lesson column
    assert window.run_tables_action.isEnabled()
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=10_000)
    qtbot.keyClick(window, Qt.Key.Key_T, Qt.KeyboardModifier.ControlModifier)
    QApplication.processEvents()
    assert tab.isVisible() and window.tabs.currentWidget() is tab
    assert QApplication.focusWidget() is tab.tensors and tab.tensors.rowCount() == 120
    main = window.splitters["main"]
    left, center, plots = main.sizes()
    assert left > 0.3 * main.width()  # room for the tables' columns
    assert center >= window.splitters["center"].minimumSizeHint().width()
    assert plots >= window.plots_panel.minimumSizeHint().width()
    # on a lesson's page there is no Run tab: Ctrl+T does nothing
    window.set_lesson("ddp-pattern")
    assert not window.run_tables_action.isEnabled()


def test_an_opened_watched_run_does_not_say_the_engine_is_starting(make_window) -> None:
    """A watched run's page runs nothing of its own, yet an opened recording said "engine:
    starting (importing torch …)" beside its ranks while the lessons' engine started, and an
    engine state could replace the page's stage message with "Press Run". It says no engine
    is needed; back on a lesson, the engine's state shows again."""
    from ddp_viz.model.session import EngineState

    window = make_window()
    window.file_actions.open_run(DATA / "watched-2-ranks.jsonl")
    label = window.process_view.engine_label
    for state in (EngineState.STARTING, EngineState.READY, EngineState.STOPPED):
        window.show_engine_state(state)  # what the session says as the lessons' engine starts
        assert "no engine needed" in label.text() and "starting" not in label.text(), state
    # `ddp-viz watch`: before its first step the page waits for the script, whatever the
    # lessons' engine does meanwhile
    from ddp_viz._qt.lesson_switch import show_lesson
    from ddp_viz.kinds.watched.scene import WAITING
    from ddp_viz.model.assets import asset
    from ddp_viz.model.lesson import load_lesson_folder

    show_lesson(window, load_lesson_folder(asset("watched")))
    window.stage.set_message(WAITING)
    window.show_engine_state(EngineState.READY)
    assert window.stage.message == WAITING and "no engine needed" in label.text()
    window.set_lesson("ddp-pattern")
    window.show_engine_state(EngineState.STARTING)
    assert label.text().startswith("engine: starting")
    assert "Starting the engine" in window.stage.message


def test_a_watching_window_starts_the_engine_only_for_a_lesson(make_window, monkeypatch) -> None:
    """``ddp-viz watch`` opens its window with no engine (``start(engine=False)``): the
    script's ranks are the run, and the engine's warm-up took CPU from them and from the page
    in the run's first seconds. A lesson opened from that window starts it, once."""
    from ddp_viz._qt.lesson_switch import show_lesson
    from ddp_viz.model.assets import asset
    from ddp_viz.model.lesson import load_lesson_folder

    window = make_window()
    started: list[int] = []
    monkeypatch.setattr(window.session, "start_engine", lambda: started.append(1))
    window.start(engine=False)
    show_lesson(window, load_lesson_folder(asset("watched")))  # what start_live shows
    assert started == []
    window.set_lesson("ddp-pattern")  # a lesson runs ranks of its own: now it is needed
    assert started == [1]
    window.set_lesson("buckets")
    assert started == [1]  # started once
    other = make_window()  # the app's own start (a lesson): at once, as before
    monkeypatch.setattr(other.session, "start_engine", lambda: started.append(2))
    other.start()
    assert started == [1, 2]


def test_the_watched_page_lists_no_warm_engine_rank_as_its_own(make_window) -> None:
    """Before a watched run's ranks report, its Processes table was the lessons' warm pool
    ("— pid warm") under "no engine needed": ranks that are not the script's."""
    from ddp_viz._qt.lesson_switch import show_lesson
    from ddp_viz.model import protocol
    from ddp_viz.model.assets import asset
    from ddp_viz.model.lesson import load_lesson_folder

    window = make_window()
    warm = {s: protocol.WorkerState(slot=s, pid=4000 + s, state="ready") for s in range(2)}
    window.show_workers(warm, 0)
    view = window.process_view
    assert [r[2] for r in view.rows()] == ["warm", "warm"]  # a lesson's page: its pool
    show_lesson(window, load_lesson_folder(asset("watched")))  # the pool says nothing new
    assert view.rows() == [] and view.table.rowCount() == 0
    window.show_workers(warm, 0)
    assert view.rows() == [] and view.table.rowCount() == 0
    window.file_actions.open_run(DATA / "watched-2-ranks.jsonl")  # its own ranks, by pid
    assert [r[0] for r in view.rows()] == ["0", "1"] and view.rows()[0][1] != "4000"
    window.set_lesson("ddp-pattern")  # back on a lesson: its pool at once
    assert [r[2] for r in view.rows()] == ["warm", "warm"] and view.table.rowCount() == 2


def test_a_crashed_rank_is_failed_in_the_table_and_named_in_the_status_bar(make_window) -> None:
    """Issue 47, 12: a crash named on every surface, not "done" in green under "✓ ranks agree"."""
    from ddp_viz.kinds.watched.events import WatchFailure, WatchSummary
    from ddp_viz.model import protocol

    window = make_window()
    events = [e for e in load_recording(MANY) if e.kind not in ("watch_dropped", "run_finished")]
    events = [e for e in events if e.kind != "watch_summary"]
    gone = "Connection closed by peer [127.0.0.1]:7566"
    window.session.expect_run(1)
    for e in events:
        window.session.on_transport_event(e)
    for e in (
        WatchFailure(1, 1, 3, 10.0, "RuntimeError", "bad batch", "train.py:40 in main"),
        WatchFailure(1, 0, 3, 10.2, "RuntimeError", gone, "train.py:41 in main"),
    ):
        window.session.on_transport_event(e)
    window.session.tick()
    assert window.status.text().startswith("Run 1: ✗ rank 1 is the root cause"), (
        window.status.text()
    )
    window.process_view.set_record(window.session.record)
    assert [row[2] for row in window.process_view.rows()] == ["stopped", "failed"]
    window.session.on_transport_event(WatchSummary(1, 1))
    window.session.on_transport_event(protocol.RunFinished(1, 3, 1.0))
    said = window.status.text()
    assert "✗ rank 1 is the root cause: RuntimeError at train.py:40" in said, said
    assert "ranks agree" not in said


def test_a_diagnosed_hang_is_hung_in_the_table_and_the_status_bar(make_window) -> None:
    """Issue 47, 13: not "training" in the table nor "2 rank(s) training…" under a hang."""
    from ddp_viz.kinds.watched.events import WatchHang

    window = make_window()
    events = [e for e in load_recording(MANY) if e.kind not in ("watch_dropped", "run_finished")]
    events = [e for e in events if e.kind != "watch_summary"]
    window.session.expect_run(1)
    for e in events:
        window.session.on_transport_event(e)
    window.session.tick()
    window.process_view.set_record(window.session.record)
    assert [row[2] for row in window.process_view.rows()] == ["training", "training"]
    call = {
        "seq": 9,
        "op": "all_reduce",
        "site": "train.py:30 in main",
        "sizes": [[3]],
        "bucket": 0,
    }
    stuck = [
        {"rank": 0, "state": "inside", "step": 4, "inside": call},
        {
            "rank": 1,
            "state": "outside",
            "step": 3,
            "stack": ["train.py:12 in main: time.sleep(60)"],
        },
    ]
    window.session.on_transport_event(WatchHang(1, 3.0, 2.0, stuck))  # type: ignore[arg-type]
    window.session.tick()
    said = window.status.text()
    assert said.startswith("Run 1: ✗ hang: rank 1 never joined all_reduce #9"), said
    assert "train.py:12 in main: time.sleep(60)" in said
    window.process_view.set_record(window.session.record)
    assert [row[2] for row in window.process_view.rows()] == ["hung", "stuck"]
