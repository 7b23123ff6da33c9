"""What a learner and a lecturer meet on first use (recorded events, real fonts, no torch)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from ddp_viz.model.course import load_course
from tests.conftest import DATA, load_recording
from tests.frames import assert_inside_and_apart, linear_run
from tests.qt_helpers import feed

pytestmark = pytest.mark.usefixtures("qapp")


def feed_record(window, rec) -> None:
    with_run = list(rec.events)
    feed(window, with_run)


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)])
@pytest.mark.parametrize("world_size", [1, 2, 3, 4, 5, 6, 7, 8])
def test_nothing_on_the_stage_overlaps_with_real_fonts(qtbot, make_window, size, world_size):
    window = make_window(size)
    feed_record(window, linear_run(world_size, rows=8 if world_size != 3 else 4))
    for phase in range(4):
        window.player.pause()
        window.player.cursor = type(window.player.cursor)(0, phase)
        window.player.progress = 1.0
        window.stage.set_position(window.player.cursor, 1.0)
        frame = window.stage.frame()
        assert_inside_and_apart(frame)
        assert frame.smallest_px() >= 11


def test_projector_numbers_are_24_px_at_8_ranks_at_1920x1080(qtbot, make_window, settings):
    window = make_window((1920, 1080), settings=settings)
    window.presentation.set_projector(True)
    QApplication.processEvents()
    feed_record(window, linear_run(8))
    window.player.seek_step(0)
    frame = window.stage.frame()
    assert len(frame.numbers()) == 8 * 9  # loss, and per parameter local, averaged, before, after
    window.stage.repaint()
    assert min(window.stage.painted_px) >= 24
    assert window.stage.painted_px == [max(1, round(t.font.px)) for t in frame.texts]
    assert_inside_and_apart(frame)


def test_the_uneven_note_is_readable_in_the_window(qtbot, make_window):
    for size in ((1280, 800), (1920, 1080)):
        window = make_window(size)
        with qtbot.waitSignal(window.run_shown, timeout=30_000):
            feed(window, load_recording("uneven-3-ranks.jsonl"))
        window.player.seek_step(0)
        frame = window.stage.frame()
        text = " ".join(frame.all_text().split())
        assert "✗ average ≠ full batch" in text
        assert "shard average by hand: ∇w −33.17" in text
        assert "a row on a small shard weighs more" in text
        assert_inside_and_apart(frame)
        window.close()


def test_enter_runs_escape_leaves_a_field_and_the_stage_takes_focus(qtbot, window):
    window.form.lr.setFocus()
    qtbot.keyClick(window.form.lr, Qt.Key.Key_Return)  # no engine here: the run waits for it
    assert window.session._run_when_ready is not None
    window.session.cancel()
    window.form.lr.setFocus()
    qtbot.keyClick(window.form.lr, Qt.Key.Key_Escape)
    assert not window.form.lr.hasFocus() and window.stage.hasFocus()
    assert window.form.lr.text() == "0.01"
    feed(window, load_recording("four-ranks-3-steps.jsonl"))
    qtbot.waitUntil(lambda: not window.player.playing)
    window.form.lr.setFocus()
    qtbot.mouseClick(window.stage, Qt.MouseButton.LeftButton)
    assert window.stage.hasFocus()
    qtbot.keyClick(window, Qt.Key.Key_Left)  # a clicker's key now steps the stage
    assert window.player.cursor.phase == 2 and window.form.lr.text() == "0.01"
    window.form.lr.setFocus()
    window.plots_panel.ensure()
    qtbot.mouseClick(window.plots.loss_plot.viewport(), Qt.MouseButton.LeftButton)
    assert not window.form.lr.hasFocus()


def test_enter_with_a_bad_field_does_not_run(qtbot, window):
    window.form.lr.setText("-1")
    window.form.lr.setFocus()
    qtbot.keyClick(window.form.lr, Qt.Key.Key_Return)
    assert window.session._run_when_ready is None and not window.session.busy
    # The control: the same Enter in the same field, now valid, does ask for a run (no engine
    # here, so the session holds it until one is ready).
    window.form.lr.setText("0.05")
    assert window.form.valid
    qtbot.keyClick(window.form.lr, Qt.Key.Key_Return)
    asked = window.session._run_when_ready
    assert window.session.busy and asked is not None and asked.lr == 0.05
    window.session.cancel()
    assert not window.session.busy


def test_left_works_while_following_a_streaming_run(qtbot, window):
    events = load_recording("four-ranks-3-steps.jsonl")
    feed(window, events[:-12])  # still streaming
    window.follow.setChecked(True)
    qtbot.waitUntil(lambda: window.player.cursor.phase == 3)
    before = window.player.cursor
    qtbot.keyClick(window, Qt.Key.Key_Left)
    assert not window.follow.isChecked()
    assert window.player.cursor == type(before)(before.step, 2)


def test_a_decimal_comma_gets_a_hint(qtbot, window):
    window.form.lr.setText("0,01")
    assert "use a dot for decimals: 0.01" in window.form.error_label.text()


def test_export_dialogs_start_in_pictures_and_remember_the_folder(window, settings, tmp_path):
    window.settings = settings
    fa = window.file_actions
    start = fa.start_folder("png")
    assert start != Path.cwd() and start.is_dir()
    fa.remember_folder("png", tmp_path / "slides" / "a.png")
    (tmp_path / "slides").mkdir()
    assert fa.start_folder("png") == tmp_path / "slides"
    # no trace saved yet: the last folder used for anything (issue 47, 10: it was home)
    assert fa.start_folder("trace") == tmp_path / "slides"
    (tmp_path / "traces").mkdir()
    fa.remember_folder("trace", tmp_path / "traces" / "t.json")
    assert fa.start_folder("trace") == tmp_path / "traces"  # then each kind has its own
    assert fa.start_folder("png") == tmp_path / "slides"
    # a recording opened any way (the command line too): Open run starts in its folder
    fa.open_run(DATA / "default-run.jsonl")
    assert fa.start_folder("events") == DATA.resolve()


def test_at_1280x800_no_code_statement_wraps_and_states_are_not_cut(qtbot, make_window):
    window = make_window((1280, 800))
    window.code_view.render()
    QApplication.processEvents()
    assert window.code_view.wrapped_lines() == []
    assert window.code_view.font().pixelSize() >= 11
    from ddp_viz.model import protocol

    view = window.process_view
    view.set_workers(
        {s: protocol.WorkerState(slot=s, pid=123456 + s, state="ready") for s in range(4)}
    )
    QApplication.processEvents()
    table = view.table
    assert table.rowCount() == 4 and table.item(0, 2).text() == "warm"
    for row in range(table.rowCount()):
        for col in range(table.columnCount()):
            item = table.item(row, col)
            width = table.fontMetrics().horizontalAdvance(item.text()) + 6
            assert width <= table.columnWidth(col), (item.text(), table.columnWidth(col))
    assert not table.horizontalScrollBar().isVisible()


def test_at_1280x800_lesson_code_and_plot_notes_are_not_cut(qtbot, make_window):
    window = make_window((1280, 800))
    for lesson_id in ("ddp-pattern", "every-parameter"):
        window.set_lesson(lesson_id)
        window.lesson_view.render()
        QApplication.processEvents()
        view = window.lesson_view
        # everything wraps to the width (Qt's table layout may round a pixel over)
        assert view.document().idealWidth() <= view.viewport().width() + 2, lesson_id
    plots = window.plots_panel.ensure()
    feed(window, load_recording("default-run.jsonl"))
    QApplication.processEvents()
    note = plots.surface_note
    assert note.isVisible() and note.wordWrap()
    assert note.heightForWidth(note.width()) <= note.height() + 1  # every wrapped line shows


@pytest.mark.parametrize("lesson_id", [lesson.id for lesson in load_course().lessons])
def test_no_lesson_s_code_wraps_at_1280x800(qtbot, make_window, lesson_id):
    window = make_window((1280, 800))
    window.set_lesson(lesson_id)
    window.code_view.render()
    QApplication.processEvents()
    assert window.code_view.wrapped_lines() == [], window.code_view.code
    assert window.code_view.font().pixelSize() >= 11


def test_enter_in_any_number_field_runs(qtbot, window):
    from PySide6.QtWidgets import QAbstractSpinBox

    tried = []
    for lesson in ("who-splits-the-data", "accumulate-with-no-sync"):
        window.set_lesson(lesson)
        for spin in window.form.findChildren(QAbstractSpinBox):
            if not (spin.isVisible() and spin.isEnabled()):
                continue
            spin.setFocus()
            qtbot.keyClick(spin.lineEdit(), Qt.Key.Key_Return)
            assert window.session._run_when_ready is not None, (lesson, spin.objectName())
            window.session.cancel()
            tried.append(spin)
    # Batch (the sampler's lesson) and micro-batches (accumulation's) ran nothing before
    micro_batches = window.form.kind_fields["accumulation"].accumulate
    assert window.form.batch_size in tried and micro_batches in tried


def test_the_escape_after_enter_leaves_the_field_and_the_next_cancels(qtbot, window):
    window.form.lr.setFocus()
    qtbot.keyClick(window.form.lr, Qt.Key.Key_Return)  # no engine here: the run waits for it
    assert window.session._run_when_ready is not None
    # the learner still thinks they are in the field: Escape leaves it, the run goes on
    qtbot.keyClick(QApplication.focusWidget() or window, Qt.Key.Key_Escape)
    assert window.session._run_when_ready is not None and window.stage.hasFocus()
    qtbot.keyClick(window.stage, Qt.Key.Key_Escape)  # now it cancels, as the key sheet says
    assert window.session._run_when_ready is None
    # cancelled from the toolbar instead, before the engine was ready: nothing is left over,
    # and the next Escape leaves full screen at once
    window.form.lr.setFocus()
    qtbot.keyClick(window.form.lr, Qt.Key.Key_Return)
    window.cancel_action.trigger()
    assert window.session._run_when_ready is None
    assert not window.key_router.escape_leaves_once


def test_an_error_names_a_field_as_its_label_does(window):
    from PySide6.QtWidgets import QCheckBox, QFormLayout

    from ddp_viz.model.field_labels import NAMES, field_label

    checked = 0
    for layout in window.form.findChildren(QFormLayout):
        for key, widget in window.form._fields().items():
            label = layout.labelForField(widget)
            if label is not None and key in NAMES:
                assert NAMES[key] == label.text(), key
                checked += 1
    # every field the form shows, a kind's too, by the words on screen (a check box by its own)
    for lesson, key, words in [
        ("accumulate-with-no-sync", "train.no_sync", "no_sync()"),
        ("accumulate-with-no-sync", "train.scale_loss", "loss ÷ k"),
    ]:
        window.set_lesson(lesson)
        widget = window.form._fields()[key]
        shown = (
            widget.text()
            if isinstance(widget, QCheckBox)
            else next(
                lay.labelForField(widget).text()
                for lay in window.form.findChildren(QFormLayout)
                if lay.labelForField(widget) is not None
            )
        )
        assert field_label(key) == shown == words, key
    assert checked >= 5  # World size, Steps, Learning rate, the initial values, Bucket…
