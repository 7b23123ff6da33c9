"""Keyboard-only use: Tab reaches every control and never gets stuck (widgets, no engine)."""

from __future__ import annotations

import itertools

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.frames import linear_run
from tests.qt_helpers import feed


def _tab_through(qtbot, window, presses: int, key=Qt.Key.Key_Tab) -> list:
    seen = []
    for _ in range(presses):
        widget = QApplication.focusWidget()
        qtbot.keyClick(widget, key)
        seen.append(QApplication.focusWidget())
    return seen


def test_tab_leaves_the_tables_and_reaches_the_form(qtbot, window) -> None:
    """A table that takes Tab for its cells traps a keyboard user (the data rows and the
    processes table did, both ways round)."""
    feed(window, list(linear_run(2, steps=3).events))  # the processes table has rows
    window.activateWindow()
    qtbot.waitUntil(lambda: window.isActiveWindow())
    tables = {window.form.table, window.process_view.table}
    for key in (Qt.Key.Key_Tab, Qt.Key.Key_Backtab):
        window.stage.setFocus()
        seen = _tab_through(qtbot, window, 60, key)
        runs = [a is b for a, b in itertools.pairwise(seen)]
        assert not any(runs), f"{key}: focus stayed on one widget"
        assert tables <= set(seen), f"{key}: a table was never reached"
        assert window.form.world_size in {w.parent() for w in seen} | set(seen)
        assert window.form.steps in {w.parent() for w in seen} | set(seen)


def test_page_keys_scroll_the_lesson_until_there_is_a_run_to_step_through(qtbot, window):
    """Presenter clickers send PageDown: with a run on the stage it steps the stage from
    anywhere; before any run it scrolled nothing, not even the lesson text it was pressed in."""
    window.activateWindow()
    qtbot.waitUntil(lambda: window.isActiveWindow())
    text = window.lesson_view
    text.render()  # the window renders the lesson after its first paint
    text.setFocus()
    bar = text.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0)
    assert bar.value() == 0
    qtbot.keyClick(text, Qt.Key.Key_PageDown)
    assert bar.value() > 0
    qtbot.keyClick(text, Qt.Key.Key_PageUp)
    assert bar.value() == 0
    feed(window, list(linear_run(2, steps=3).events))
    window.player.seek_step(0)
    before = window.player.cursor
    text.setFocus()
    qtbot.keyClick(text, Qt.Key.Key_PageDown)
    assert window.player.cursor != before and bar.value() == 0


def test_page_keys_never_change_a_field_while_no_run_is_on_the_stage(qtbot, window):
    window.activateWindow()
    qtbot.waitUntil(lambda: window.isActiveWindow())
    spin = window.form.world_size
    spin.setFocus()
    before = spin.value()
    qtbot.keyClick(spin, Qt.Key.Key_PageUp)
    assert spin.value() == before and window.form.valid


def test_a_run_from_world_size_leaves_the_form_where_it_was(qtbot, make_window) -> None:
    """Issue 47, 4: Enter in World size started a run, and greying the form handed the focus
    field by field down to the code view: the form scrolled World size out of view (uneven-
    inputs' long form) and the next edit landed elsewhere. While the run goes the form stays
    put and no field has the keys; when it is over World size has them again."""
    window = make_window((1280, 800), lesson_id="uneven-inputs")
    bar = window.form_scroll.verticalScrollBar()
    assert bar.maximum() > 0  # the form scrolls: a focus handed down it would scroll it
    window.form.world_size.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is window.form.world_size)
    window.show_busy(True)  # as the session says when the run starts
    QApplication.processEvents()
    assert bar.value() == 0
    focus = QApplication.focusWidget()
    assert focus is None or not window.form.isAncestorOf(focus), focus
    assert focus is not window.code_view
    window.show_busy(False)
    QApplication.processEvents()
    assert QApplication.focusWidget() is window.form.world_size and bar.value() == 0
    # the learner went to the stage meanwhile: the focus stays where they put it
    window.form.world_size.setFocus()
    window.show_busy(True)
    window.stage.setFocus()
    window.show_busy(False)
    assert QApplication.focusWidget() is window.stage
