"""uneven-inputs' Find the hang box shows its whole choice at 1280×800 (issue 47, 4: the
question names debug = "monitored_barrier" and the box showed "monitore")."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication


def test_find_the_hang_shows_monitored_barrier_whole(qtbot, make_window) -> None:
    window = make_window((1280, 800), lesson_id="uneven-inputs")
    box = window.form.kind_fields["uneven"].debug
    box.setCurrentText("monitored_barrier")
    QApplication.processEvents()
    text_w = box.fontMetrics().horizontalAdvance("monitored_barrier")
    assert box.width() >= text_w + 20, (box.width(), text_w)  # the arrow beside it
    assert window.width() <= 1280 and window.form_scroll.horizontalScrollBar().maximum() == 0
