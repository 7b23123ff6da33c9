"""Where the form's data table goes: beside the fields, or under them on a projector.

In projector type the table beside the fields showed its values cut ("-0…"): its width came
from the type it was built in. Sized for 24 px type beside the fields it widened the settings
column so much that the stage fell to ~10 px text (Ctrl+L on a projector); under the fields it
needs no more width than the fields do.
"""

from __future__ import annotations

from PySide6.QtGui import QFont, QFontMetricsF
from PySide6.QtWidgets import QBoxLayout, QTableWidget

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
