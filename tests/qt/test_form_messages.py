"""What the form says about bad input (issue 33, item 7): a letter typed into a spin box
vanished with no message, and the uneven timeout's error named its key; the field being
edited now says its error right under it."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication


def test_a_letter_in_a_spin_box_is_answered(qtbot, make_window) -> None:
    window = make_window()
    spin = window.form.world_size
    spin.setFocus()
    qtbot.keyClicks(spin, "a")
    said = window.form.rejected_keys.said
    assert "World size" in said and "“a”" in said and "number" in said
    before = spin.value()
    qtbot.keyClick(spin, Qt.Key.Key_End)
    assert spin.value() == before


def test_errors_name_the_field_as_the_form_labels_it() -> None:
    from ddp_viz._qt.form_labels import field_message

    text = field_message("uneven.timeout_s", "must be 1 to 30 seconds, got 40")
    assert text.startswith("Timeout (uneven.timeout_s): must be")
    assert field_message("lr", "must be > 0") == "Learning rate (lr): must be > 0"


def _places(form) -> dict[str, tuple[int, int, int, int]]:
    """Where every shown field, the data table and the row buttons are in the window."""
    from PySide6.QtCore import QPoint

    widgets = {**form._fields(), "table": form.table, "add_row": form.add_row}
    window = form.window()
    return {
        name: (*w.mapTo(window, QPoint(0, 0)).toTuple(), w.width(), w.height())
        for name, w in widgets.items()
        if w.isVisible()
    }


def _type(qtbot, widget, text: str) -> None:
    from PySide6.QtWidgets import QApplication

    edit = widget.lineEdit() if hasattr(widget, "lineEdit") else widget
    widget.setFocus()
    edit.selectAll()
    qtbot.keyClicks(edit, text)
    QApplication.processEvents()


def test_an_error_shows_at_its_field_and_moves_no_other_field(qtbot, make_window) -> None:
    """Item 7: the form jumped when an error came (a red border made the field 2 px shorter
    and moved every field under it), and the list of errors sat at the form's far end. The
    field being edited says its error right at it, over the form, and nothing moves."""
    window = make_window((1280, 800))
    window.set_lesson("uneven-inputs")
    form = window.form
    QApplication.processEvents()
    cases = [
        (form.lr, "0..1", "Learning rate: must be a number"),
        (form.kind_fields["uneven"].timeout, "40", "Timeout"),
    ]
    for field, text, said in cases:
        field.setFocus()  # its pane scrolls it into sight: that move is not the error's
        QApplication.processEvents()
        before = _places(form)
        _type(qtbot, field, text)
        assert form.errors, text
        assert _places(form) == before, text
        note = form.field_note
        assert note.isVisible() and note.text().startswith(said), note.text()
        top = field.mapTo(form, QPoint(0, 0)).y()
        bottom = top + field.height()
        assert abs(note.y() - bottom) <= 3 or abs(note.y() + note.height() - top) <= 3
        form.set_scenario(form._lesson)  # fixed: the note goes
        QApplication.processEvents()
        assert not note.isVisible()
    # a data cell's error: at the cell, and nothing moves either
    table = form.table
    table.setFocus()
    table.setCurrentCell(1, 1)
    QApplication.processEvents()
    before = _places(form)
    table.item(1, 1).setText("abc")
    QApplication.processEvents()
    assert "y in row 2" in form.field_note.text() and form.field_note.isVisible()
    assert _places(form) == before
