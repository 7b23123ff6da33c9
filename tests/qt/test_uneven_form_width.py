"""uneven-inputs' Find the hang box shows its whole choice at 1280×800 (issue 47, 4: the
question names debug = "monitored_barrier" and the box showed "monitore")."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication


def test_find_the_hang_shows_monitored_barrier_whole(qtbot, make_window) -> None:
    window = make_window((1280, 800), lesson_id="uneven-inputs")
    box = window.form.kind_fields["uneven"].debug
    box.setCurrentText("monitored_barrier")
    QApplication.processEvents()
    text_w = box.fontMetrics().horizontalAdvance("monitored_barrier")
    assert box.width() >= text_w + 20, (box.width(), text_w)  # the arrow beside it
    assert window.width() <= 1280 and window.form_scroll.horizontalScrollBar().maximum() == 0


@pytest.mark.parametrize("lesson_id", ["ddp-pattern", "uneven-inputs", "accumulate-with-no-sync"])
@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)])
def test_nothing_of_the_form_lies_under_its_scroll_bar(
    qtbot, make_window, settings, lesson_id, size
) -> None:
    """At 1280×800 the form's bar covered the data table's y column and the "− row" button:
    the form grew taller as it narrowed (wrapped lines), so the bar came while the width kept
    for it did not."""
    window = make_window(size, settings=settings, lesson_id=lesson_id)
    scroll = window.form_scroll
    inner, viewport = scroll.widget(), scroll.viewport()
    # a form pane taller than the form's minimum but shorter than the form at its width (the
    # app's first window met this at its default sizes; a test's later windows, built under
    # the theme already applied, were given more height)
    left = window.splitters["left"]
    pane = inner.minimumSizeHint().height() + 2
    left.setSizes([sum(left.sizes()) - pane, pane])
    for _ in range(20):  # layout passes post each other (the bar comes a few passes in)
        QApplication.processEvents()
    if inner.heightForWidth(inner.width()) > viewport.height():
        assert scroll.verticalScrollBar().isVisible()
    assert inner.width() <= viewport.width(), (inner.width(), viewport.width())
    remove = window.form.remove_row
    if remove.isVisible():  # its right edge inside the pane the bar leaves
        right = remove.mapTo(viewport, remove.rect().topRight()).x()
        assert right < viewport.width(), (right, viewport.width())
