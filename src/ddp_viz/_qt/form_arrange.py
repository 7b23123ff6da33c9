"""Where the form's data table goes: beside the fields, or under them on a projector; and
where the keyboard focus goes while a run greys the form.

In projector type the table beside the fields showed its values cut ("-0…"): its width came
from the type it was built in. Sized for 24 px type beside the fields it widened the settings
column so much that the stage fell to ~10 px text (Ctrl+L on a projector); under the fields it
needs no more width than the fields do.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetricsF
from PySide6.QtWidgets import QApplication, QBoxLayout, QTableWidget, QWidget

from ddp_viz.model.theme import Theme


def table_width(table: QTableWidget, px: int) -> int:
    """The least width that shows a row number and two values like "−10.25" whole."""
    font = QFont(table.font())
    font.setPixelSize(max(1, px))
    fm = QFontMetricsF(font)
    return int(fm.horizontalAdvance("88") + 2 * fm.horizontalAdvance("−10.25") + 48)


def arrange(top: QBoxLayout, table: QTableWidget, theme: Theme) -> None:
    """Table beside the fields in a laptop's type, under them in a projector's."""
    table.setMinimumWidth(table_width(table, theme.font_px))
    under = theme.name == "projector"
    want = QBoxLayout.Direction.TopToBottom if under else QBoxLayout.Direction.LeftToRight
    if top.direction() != want:
        top.setDirection(want)


class FocusKeeper:
    """The field a run started from (Enter in World size) keeps its place. Greying the form
    field by field handed the focus down the form to the code view, scrolling the form past
    the field (62 px in uneven-inputs), and the learner's next edit landed elsewhere. The focus
    leaves the form while it is grey and comes back to the field when the run is over, unless
    the learner put it somewhere else meanwhile."""

    def __init__(self, form: QWidget) -> None:
        self.form = form
        self.field: QWidget | None = None

    def leave(self) -> None:
        focus = QApplication.focusWidget()
        if focus is not None and self.form.isAncestorOf(focus):
            self.field = focus
            focus.clearFocus()

    def come_back(self) -> None:
        field, self.field = self.field, None
        if field is not None and field.isEnabled() and QApplication.focusWidget() is None:
            field.setFocus(Qt.FocusReason.OtherFocusReason)
