"""What the scenario form calls each field in its messages, how it marks the bad ones, reading
a typed number, and guessing the next data row."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QObject, QPoint, QRect, Qt
from PySide6.QtGui import QColor, QKeyEvent, QPalette
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QToolTip,
    QWidget,
)
from shiboken6 import isValid

from ddp_viz.model.field_labels import field_label

HELP = "ddp_viz_help"  # a field's own tooltip, shown again once its error is fixed


def set_help(w: Any, text: str) -> None:
    """A field's tooltip when it has no error (an error's reason takes its place meanwhile)."""
    w.setProperty(HELP, text)
    w.setToolTip(text)


def _help(w: Any) -> str:
    tip = w.property(HELP)
    if tip is None:  # the tooltip the field was built with
        tip = w.toolTip()
        w.setProperty(HELP, tip)
    return str(tip)


def label(key: str) -> str:
    if "[" in key:
        col, idx = key.split("[")
        return f"{col} in row {int(idx.rstrip(']')) + 1}"
    return field_label(key)


def float_or_text(text: str) -> float | str:
    """A number as typed when it is one, else the text (reported as bad)."""
    try:
        return float(text.strip().replace("−", "-"))
    except ValueError:
        return text


NUMBER_KEYS = set("0123456789.,-−+eE ")


def say_at(field: QWidget, text: str) -> None:
    """A message right under ``field`` (a tooltip: the form does not move)."""
    QToolTip.showText(field.mapToGlobal(QPoint(0, field.height())), text, field)


class RejectedKeys(QObject):
    """Says so when a spin box drops a key that is not part of a number (a letter simply
    vanished): the field's name, the key, and what the field takes."""

    def __init__(self, names: dict[QWidget, str], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.names = names
        self.said = ""  # the last message (tests read it; a tooltip is gone in a moment)
        for spin in names:
            spin.installEventFilter(self)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.KeyPress and isinstance(obj, QAbstractSpinBox):
            text = QKeyEvent(event).text() if isinstance(event, QKeyEvent) else ""
            if text and text.isprintable() and not set(text) <= NUMBER_KEYS:
                name = self.names.get(obj, "This field")  # type: ignore[call-overload]
                self.said = f"{name} takes a number: “{text}” is not part of one."
                say_at(obj, self.said)
                QApplication.beep()
                return True
        return False


class FieldNote(QLabel):
    """The error of the field being edited, right under it (above it at the pane's bottom),
    over the form rather than in its layout: no field moves when it comes or goes, and it
    stays while the error does (a tooltip went in seconds). Clicks pass through it to the
    field it covers."""

    def __init__(self, form: Any) -> None:  # form: ScenarioForm
        super().__init__(form)
        self.form = form
        self.setObjectName("field_note")
        self.setWordWrap(True)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.hide()
        app = QApplication.instance()
        if isinstance(app, QApplication):  # it follows the keyboard focus
            app.focusChanged.connect(self._on_app_focus_changed)
        form.table.currentCellChanged.connect(self._on_table_current_cell_changed)
        form.installEventFilter(self)  # and the form's width

    def _on_app_focus_changed(self, _old: QWidget | None, new: QWidget | None) -> None:
        # the signal is the application's: it also fires while this window closes, is
        # re-themed closed, or is torn down, when the form may be half gone
        if not (isValid(self) and isValid(self.form) and self.form.window().isVisible()):
            return
        if self.isVisible() or (new is not None and self.form.isAncestorOf(new)):
            note_the_focus(self.form)

    def _on_table_current_cell_changed(self, *_: int) -> None:
        note_the_focus(self.form)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize and self.isVisible():
            note_the_focus(self.form)
        return False

    def show_at(self, where: QRect, text: str, bad: str, panel: str) -> None:
        """Show ``text`` under ``where`` (a rectangle in the form's coordinates)."""
        form = self.parentWidget()
        self.setStyleSheet(
            f"QLabel {{ color: {bad}; background: {panel}; border: 1px solid {bad};"
            " padding: 1px 4px; }"
        )
        self.setText(text)
        seen = form.visibleRegion().boundingRect()  # the part of the form its pane shows
        left = 4
        width = max(80, min(form.width(), seen.right() + 1) - 2 * left)
        self.setFixedWidth(width)
        height = self.heightForWidth(width)
        self.setFixedHeight(height)
        y = where.bottom() + 2
        if y + height > seen.bottom() and where.top() - height - 2 >= seen.top():
            y = where.top() - height - 2
        self.move(left, y)
        self.show()
        self.raise_()


def field_message(field: str, message: str) -> str:
    """A scenario error as a person reads it: the field's label, and its key when the two
    differ (a scenario file names the key)."""
    name = label(field)
    return f"{name}: {message}" if name == field else f"{name} ({field}): {message}"


def show_field_errors(form: Any) -> None:
    """Mark every bad field in place with its reason, and list the reasons under the form;
    the field being edited says its own reason right under it (:class:`FieldNote`)."""
    for name, w in form._fields().items():
        msg = form.errors.get(name)
        # a tint, not a style sheet: a border changed the field's height and moved every
        # field under it (and a style sheet drops a spin box's native arrows)
        pal = QPalette(form.palette())
        if msg:
            tint = QColor(form.theme.bad)
            tint.setAlpha(90)
            pal.setColor(QPalette.ColorRole.Base, tint)
        w.setPalette(pal)
        w.setToolTip(msg or _help(w))
    form.table.blockSignals(True)
    for r in range(form.table.rowCount()):
        for c, key in enumerate(("x", "y")):
            item = form.table.item(r, c)
            if item is None:
                item = QTableWidgetItem("")
                form.table.setItem(r, c, item)
            msg = form.errors.get(f"{key}[{r}]") or (form.errors.get(key) if r == 0 else None)
            bad_bg = QColor(form.theme.bad)
            bad_bg.setAlpha(110)
            item.setBackground(bad_bg if msg else QColor(0, 0, 0, 0))
            item.setToolTip(msg or "")
    form.table.blockSignals(False)
    text = "\n".join(f"{label(k)}: {v}" for k, v in form.errors.items())
    note_the_focus(form)
    form.error_label.setText(text)
    form.error_label.setStyleSheet(f"color: {form.theme.bad};")
    form.error_label.setVisible(bool(text))


def note_the_focus(form: Any) -> None:
    """The field with the keyboard focus says its error under it; no error, no note."""
    focus = QApplication.focusWidget()
    where, text = None, ""
    for name, w in form._fields().items():
        if name in form.errors and w.isVisible() and (w is focus or w.isAncestorOf(focus)):
            where = QRect(w.mapTo(form, QPoint(0, 0)), w.size())
            text = f"{label(name)}: {form.errors[name]}"
    table: QTableWidget = form.table
    if focus is not None and (focus is table or table.isAncestorOf(focus)):
        r, c = table.currentRow(), table.currentColumn()
        key = ("x", "y")[c] if c in (0, 1) else ""
        msg = form.errors.get(f"{key}[{r}]") or form.errors.get(key)
        if msg and r >= 0:
            cell = table.visualRect(table.model().index(r, c))
            top_left = table.viewport().mapTo(form, cell.topLeft())
            where, text = QRect(top_left, cell.size()), f"{label(f'{key}[{r}]')}: {msg}"
    if where is None:
        form.field_note.hide()
    else:
        form.field_note.show_at(where, text, form.theme.bad, form.theme.panel)


def next_row(pts: list[tuple[float, ...]], n: int) -> tuple[float, float]:
    """A new data row after ``pts``: x one past the last, y on the line through the last two
    (the last y when they share an x; row n + 1 at y 0 with no rows to go by)."""
    x, y = (pts[-1][0] + 1, pts[-1][1]) if pts else (float(n + 1), 0.0)
    if len(pts) >= 2 and pts[-1][0] != pts[-2][0]:
        (x0, y0), (x1, y1) = pts[-2:]
        y = y1 + (y1 - y0) / (x1 - x0) * (x - x1)
    return x, y
