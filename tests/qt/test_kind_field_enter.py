"""Enter in a kind's own text field runs, as in every other field (issue 47, 4: Enter in
comm-hooks' PowerSGD ranks did nothing, though the docs say Enter in a field runs)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLineEdit


def test_enter_in_every_kinds_text_field_submits_the_form(qtbot, make_window) -> None:
    window = make_window(lesson_id="comm-hooks")
    form = window.form
    ranks = form.kind_fields["hook_compression"].ranks
    assert isinstance(ranks, QLineEdit) and form.valid
    with qtbot.waitSignal(form.submitted, timeout=2_000):
        qtbot.keyClick(ranks, Qt.Key.Key_Return)
    for fields in form.kind_fields.values():  # every kind's, whichever lesson shows it
        for w in fields.fields().values():
            if isinstance(w, QLineEdit):
                assert w.receivers("2returnPressed()") >= 1, w.objectName()
