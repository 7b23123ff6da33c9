"""What the window says around a run's ends (issue 33, item 6): Play after a run that stalled,
the stage's words while the engine starts, a live run not called a recording, the process
table and the engine log within the window."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from ddp_viz.model.session import EngineState
from tests.conftest import load_recording
from tests.qt_helpers import feed


def test_play_reads_play_again_once_a_stalled_run_has_been_shown(qtbot, make_window) -> None:
    window = make_window(lesson_id="uneven-inputs")
    with qtbot.waitSignal(window.run_ended, timeout=30_000):
        feed(window, load_recording("uneven-stall.jsonl"))
    window.player.play()
    qtbot.waitUntil(lambda: not window.player.playing, timeout=10_000)
    assert window.play_action.text() == "Play"


def test_the_stage_says_the_engine_is_starting_until_it_is_ready(qtbot, make_window) -> None:
    window = make_window()
    window.show_engine_state(EngineState.STARTING)
    assert "starting" in window.stage.message.lower()
    assert "Press Run" not in window.stage.frame().all_text()
    window.show_engine_state(EngineState.READY)
    assert "Press Run" in window.stage.frame().all_text()


def test_a_run_made_here_is_not_called_a_recording(qtbot, make_window) -> None:
    window = make_window((1920, 1080))
    with qtbot.waitSignal(window.run_ended, timeout=30_000):
        feed(window, load_recording("default-run.jsonl"))  # as the engine sends them
    window.player.seek_step(0)
    text = window.stage.frame().all_text()
    assert "recorded run" not in text and "run finished" in text
    window.session.replay(load_recording("default-run.jsonl"))  # File ▸ Open
    window.player.seek_step(0)
    assert "recorded run" in window.stage.frame().all_text()


def test_splitter_sizes_follow_a_grown_minimum_from_the_roomiest_panel() -> None:
    from ddp_viz._qt.window_layout import bottom_split, fit_sizes, main_split

    assert fit_sizes([356, 585, 331], [522, 420, 86], 1272) == [522, 420, 330]
    assert fit_sizes([300, 500, 300], [100, 100, 100], 1100) == [300, 500, 300]
    assert fit_sizes([300, 500, 300], [100, 100, 100], 1200) == [300, 600, 300]
    assert bottom_split(500, 120) == (350, 150)
    assert main_split(1000, 280) == (280, 460, 260)
    assert main_split(1000, 400) == (400, 400, 200)  # a wide form takes from the plots
    assert bottom_split(500, 230) == (270, 230)
    assert bottom_split(500, 400) == (250, 250)


def _inside(window, widget) -> bool:
    right = widget.mapTo(window, widget.rect().topRight()).x()
    return right < window.width()


def test_the_process_table_and_the_plots_stay_whole(qtbot, make_window, tmp_path) -> None:
    from ddp_viz._qt.recording import open_recording
    from tests.conftest import DATA

    window = make_window((1280, 800), lesson_id="not-averaged")  # its form is wide
    with qtbot.waitSignal(window.run_shown, timeout=30_000):
        open_recording(window, DATA / "not-averaged.jsonl")
    table = window.process_view.table

    def whole() -> bool:
        cols = [table.columnWidth(c) >= table.sizeHintForColumn(c) - 1 for c in range(4)]
        return all(cols) and not table.horizontalScrollBar().isVisible()

    qtbot.waitUntil(whole, timeout=10_000)
    plots = window.plots_panel
    assert _inside(window, plots) and plots.width() >= 240
    before = window.splitters["main"].sizes()
    window.process_view.log_toggle.setChecked(True)
    window.process_view.append_log("x" * 400)  # a long line of the engine's stderr
    qtbot.waitUntil(lambda: window.process_view.log.isVisible(), timeout=10_000)
    QApplication.processEvents()
    assert _inside(window, plots) and plots.width() >= 240
    window.process_view.log_toggle.setChecked(False)
    QApplication.processEvents()
    assert window.splitters["main"].sizes() == before
    assert _inside(window, plots)
