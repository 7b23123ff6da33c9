"""The status bar at 1280×800 in projector mode (issue 33, item 11): a stall's line ran past
the window's right edge. It wraps to two lines now, and past two it ends in "…" at a word,
the whole line in its tooltip."""

from __future__ import annotations

from PySide6.QtCore import QRect
from PySide6.QtWidgets import QApplication

from ddp_viz._qt.status_line import WRAP

STALL = (
    "Run 1 stalled after 3 step(s): rank 0 in barrier, rank 1 in all-reduce, until the process "
    "group's timeout ended it (gloo's error is on the stage)."
)


def _drawn_height(label, text: str) -> int:
    box = QRect(0, 0, label.contentsRect().width(), 100_000)
    return label.fontMetrics().boundingRect(box, WRAP, text).height()


def test_a_long_status_wraps_within_the_window(qtbot, make_window, settings) -> None:
    window = make_window((1280, 800), settings=settings)
    window.presentation.set_projector(True)
    label = window.status
    for text in (STALL, STALL + " Recorded before versioned recordings (schema 0): upgraded."):
        window.show_status(text)

        def fits() -> bool:
            return _drawn_height(label, label.shown_text()) <= label.contentsRect().height()

        qtbot.waitUntil(fits, timeout=10_000)
        shown = label.shown_text()
        # (the status bar takes projector type's two lines a layout pass after the type)
        qtbot.waitUntil(
            lambda: label.mapTo(window, label.rect().bottomRight()).y() <= window.height()
        )
        assert shown == text or (shown.endswith(" …") and text.startswith(shown[:-2]))
        assert label.toolTip() == text
    window.show_status(STALL)
    QApplication.processEvents()
    assert label.shown_text() == STALL  # two lines hold it: all of it is shown


def test_the_status_line_keeps_two_lines_in_projector_type(qtbot, make_window, settings):
    """Issue 47, 11: in projector mode the status bar kept its laptop height (32 px for two
    24 px lines), so the text lost its underscores ("dist.all reduce")."""
    window = make_window((1280, 800), settings=settings)
    window.presentation.set_projector(True)
    window.status.setText("✓ naive and ring equal dist.all_reduce on every rank. " * 3)
    QApplication.processEvents()
    st = window.status
    assert st.contentsRect().height() >= 2 * st.fontMetrics().lineSpacing(), st.height()
    window.presentation.set_projector(False)
    qtbot.waitUntil(lambda: st.height() < 2 * 28)  # back to the laptop's height
    assert st.contentsRect().height() >= 2 * st.fontMetrics().lineSpacing()
