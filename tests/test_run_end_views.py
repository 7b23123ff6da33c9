"""What the window says around a run's ends (issue 33, item 6): Play after a run that stalled,
the stage's words while the engine starts, a live run not called a recording, the process
table and the engine log within the window."""

from __future__ import annotations

from ddp_viz.model.session import EngineState
from tests.conftest import load_recording
from tests.qt_helpers import feed


def test_play_reads_play_again_once_a_stalled_run_has_been_shown(qtbot, make_window) -> None:
    window = make_window(lesson_id="uneven-inputs")
    with qtbot.waitSignal(window.run_ended, timeout=5000):
        feed(window, load_recording("uneven-stall.jsonl"))
    window.player.play()
    qtbot.waitUntil(lambda: not window.player.playing, timeout=3000)
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
    with qtbot.waitSignal(window.run_ended, timeout=5000):
        feed(window, load_recording("default-run.jsonl"))  # as the engine sends them
    window.player.seek_step(0)
    text = window.stage.frame().all_text()
    assert "recorded run" not in text and "run finished" in text
    window.session.replay(load_recording("default-run.jsonl"))  # File ▸ Open
    window.player.seek_step(0)
    assert "recorded run" in window.stage.frame().all_text()
