"""A click on the watched page's diagnosis, in the window, fed recorded runs (issue 45, Deliver 6
and 3): the stage goes to the step it names and the Diagnosis tab shows the rank's stack (its
own frames, ddp-viz's left out); Tab and Enter do the same from the keyboard; an uneven end
opens the course's uneven-inputs lesson; a clean run's page has nothing to click."""

from __future__ import annotations

from ddp_viz.model.timeline import Cursor
from tests.conftest import DATA, load_recording
from tests.watch.test_watch_jumps import RAISES, UNEVEN, line_no


def _centre(window, key: str):
    from PySide6.QtCore import QPoint

    link = next(k for k in window.stage.frame().links if k.key == key)
    return QPoint(round(link.box.cx), round(link.box.cy))


def _click(qtbot, window, key: str) -> None:
    from PySide6.QtCore import Qt

    qtbot.mouseClick(window.stage, Qt.MouseButton.LeftButton, pos=_centre(window, key))


def _at_first_step(window) -> None:
    window.player.seek_step(0)
    assert window.player.cursor.step == 0  # the click must move it


def test_a_click_on_a_crash_goes_to_its_step_and_shows_the_failing_ranks_stack(
    qtbot, make_window
) -> None:
    from PySide6.QtWidgets import QApplication

    window = make_window((1280, 800))
    window.presentation.set_projector(True)  # the left column folded away: the click shows it
    window.file_actions.open_run(DATA / RAISES)
    # the Course tab's least width as the app measured it in projector type (its two buttons
    # side by side in 24 px type; the test's style measures them narrower)
    window.course_view.setMinimumWidth(421)
    QApplication.processEvents()
    _at_first_step(window)
    said = window.status.text()
    _click(qtbot, window, "doctor.crash")
    # rank 2 failed in its step 5, which never completed: step 4, the last every rank reported
    assert window.player.cursor == Cursor(3, 3)
    assert window.position_label.text().startswith(" step 4/")
    tab = window.diagnosis_tab
    assert window.tabs.currentWidget() is tab and tab.isVisible()
    # the column takes its least width (its tabs in projector type) from the stage, not from
    # the plots: their titles were cut
    left, _, plots = window.splitters["main"].sizes()
    assert left >= window.splitters["left"].minimumSizeHint().width()
    assert plots >= round(window.splitters["main"].width() * 0.28) - 2
    raised = line_no("raises.py", 'raise RuntimeError(f"bad batch')
    lines = tab.lines()
    assert lines[0].startswith("Step 5, rank 2: the stage shows step 4")
    head = lines.index("rank 2's stack, innermost last (ddp-viz's frames left out):")
    stack = lines[head + 1 : lines.index("", head)]
    assert stack[-1].strip().startswith(f"raises.py:{raised} in check_batch: raise RuntimeError")
    assert all(s.strip().startswith("raises.py:") for s in stack)  # no frame of ddp-viz's
    assert "✗ crash: rank 2 raised RuntimeError: bad batch" in tab.text.toPlainText()
    assert "Step 5 and rank 2's stack" in tab.heading.text()
    assert window.status.text() == said  # the status bar keeps what it said (the verdict)
    assert not tab.lesson.isVisible()  # a crash has no lesson of its own
    # a lesson's page has no Diagnosis tab; back on a run, none until its diagnosis is clicked
    window.set_lesson("ddp-pattern")
    assert window.tabs.indexOf(tab) < 0
    window.file_actions.open_run(DATA / RAISES)
    assert window.tabs.indexOf(tab) < 0


def test_tab_then_enter_on_the_stage_does_what_the_click_does(qtbot, make_window) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    window = make_window((1920, 1080))
    window.file_actions.open_run(DATA / UNEVEN)
    _at_first_step(window)
    stage = window.stage
    stage.setFocus(Qt.FocusReason.TabFocusReason)  # Tab from the toolbar lands on the stage
    qtbot.waitUntil(stage.hasFocus, timeout=5_000)
    assert stage.link().key == "doctor.uneven" and "step 7" in stage.accessibleDescription()
    qtbot.keyClick(stage, Qt.Key.Key_Return)
    # rank 0 finished 6 steps, the late rank entered step 7 alone: step 6 is the last shown
    assert window.player.cursor.step == 5
    tab = window.diagnosis_tab
    assert window.tabs.currentWidget() is tab and QApplication.focusWidget() is tab.text
    assert any("uneven.py:" in line and "backward()" in line for line in tab.lines())
    assert tab.lesson.isVisible() and "Uneven inputs" in tab.lesson_title.text()
    # back on the stage, Tab goes on to the lesson's link, then to the consequences
    stage.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.keyClick(stage, Qt.Key.Key_Tab)
    assert stage.hasFocus() and stage.link().key == "lesson"
    qtbot.keyClick(stage, Qt.Key.Key_Tab)
    assert stage.hasFocus() and stage.link().key == "doctor.crash"
    qtbot.keyClick(stage, Qt.Key.Key_Backtab)
    qtbot.keyClick(stage, Qt.Key.Key_Return)
    assert window.lesson.id == "uneven-inputs"
    assert window.tabs.currentWidget() is window.lesson_view


def test_an_uneven_end_opens_the_uneven_inputs_lesson_by_a_click(qtbot, make_window) -> None:
    from PySide6.QtCore import Qt

    window = make_window((1280, 800))
    window.file_actions.open_run(DATA / UNEVEN)
    _click(qtbot, window, "lesson")
    assert window.lesson.id == "uneven-inputs"
    assert window.tabs.currentWidget() is window.lesson_view
    assert "Uneven inputs" in window.status.text()
    # the Diagnosis tab's button does the same
    window.file_actions.open_run(DATA / UNEVEN)
    _click(qtbot, window, "doctor.uneven")
    tab = window.diagnosis_tab
    qtbot.mouseClick(tab.lesson, Qt.MouseButton.LeftButton)
    assert window.lesson.id == "uneven-inputs" and window.tabs.indexOf(tab) < 0


def test_mid_stream_the_click_leaves_fast_mode_for_the_failures_step(qtbot, make_window) -> None:
    """While the run streams in, the page follows the newest step; a click on the diagnosis
    takes the stage where the failure was and leaves it there as more events come."""
    window = make_window((1280, 800))
    window.file_actions.open_run(DATA / "watched-2-ranks.jsonl")  # the watched page, then live
    events = load_recording(RAISES)
    first = next(i for i, e in enumerate(events) if e.kind == "watch_failure")
    window.session.expect_run(1)
    for e in events[: first + 1]:  # rank 2's own word; the others' not yet
        window.session.on_transport_event(e)
    window.session.tick()
    assert window.player.follow_latest
    # the stage takes the run in at its own rate (a refresh's turn): its link comes then
    qtbot.waitUntil(lambda: bool(window.stage.frame().links), timeout=10_000)
    assert [k.key for k in window.stage.frame().links] == ["doctor.crash"]
    window.player.seek_step(0)
    _click(qtbot, window, "doctor.crash")
    assert window.player.cursor.step == 3 and not window.player.follow_latest
    for e in events[first + 1 :]:  # the consequences come: the stage stays where it was sent
        window.session.on_transport_event(e)
    window.session.tick()
    assert window.player.cursor.step == 3
    assert "✗ crash: rank 2 raised RuntimeError" in window.diagnosis_tab.text.toPlainText()


def test_a_clean_runs_page_has_nothing_to_click(qtbot, make_window) -> None:
    from PySide6.QtCore import QPoint, Qt

    window = make_window((1280, 800))
    stage = window.stage
    window.file_actions.open_run(DATA / RAISES)  # a diagnosis: the stage is on the Tab chain
    assert stage.frame().links and stage.focusPolicy() == Qt.FocusPolicy.StrongFocus
    window.file_actions.open_run(DATA / "watched-2-ranks.jsonl")  # none: a click's, as before
    assert stage.frame().links == [] and stage.focusPolicy() == Qt.FocusPolicy.ClickFocus
    step = window.player.cursor.step
    title = stage.frame().texts[0].box
    qtbot.mouseClick(stage, Qt.MouseButton.LeftButton, pos=QPoint(round(title.cx), 60))
    assert window.player.cursor.step == step and getattr(window, "diagnosis_tab", None) is None


def test_on_a_projector_the_uneven_diagnosis_and_its_lesson_fit(qtbot, make_window) -> None:
    """Looked at in projector type at 1280×800: the tab's lesson button, its title on one
    line, made the column 630 px wide, cutting the plots' titles; and on the narrowed stage
    "DistributedSampler(drop_last=True)," ran past its right edge (the fix's words, whole)."""
    from PySide6.QtWidgets import QApplication

    window = make_window((1280, 800))
    window.presentation.set_projector(True)
    window.file_actions.open_run(DATA / UNEVEN)
    _click(qtbot, window, "doctor.uneven")
    QApplication.processEvents()
    assert window.diagnosis_tab.lesson.isVisible()
    _, _, plots = window.splitters["main"].sizes()
    assert plots >= round(window.splitters["main"].width() * 0.28) - 2
    frame = window.stage.frame()
    wide = [t.text for t in frame.texts if t.text and t.box.right > frame.width + 0.5]
    assert not wide, wide
    said = " ".join(frame.all_text().split())
    assert "a DistributedSampler, which pads or trims every rank's share" in said, said
