"""Keys that drive the stage from anywhere, and leave fields for the learner to type in."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFrame,
    QLabel,
    QLineEdit,
    QMainWindow,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

# the window's keys; a kind's Qt part adds its own (its SHORTCUTS) after the first part
WINDOW_SHORTCUTS = [
    ("Space", "play / pause"),
    ("Right, PageDown", "next phase"),
    ("Left, PageUp", "previous phase"),
    ("Home", "first phase of the run"),
    ("R", "run (Enter in a field runs too)"),
    ("Escape", "leave a field; cancel the run; leave full screen"),
    ("Alt+Right / Alt+Left", "next / previous lesson"),
    ("F11", "full screen"),
    ("Ctrl+P", "projector mode on / off"),
    ("Ctrl+L", "show / hide the lesson and settings column"),
    ("T", "the next tensors, when a step's take turns (8 ranks on a projector)"),
    ("B, .", "blank the screen (a clicker's blank key); again to come back"),
]
VIEW_SHORTCUTS = [
    ("Ctrl+= / Ctrl+-", "zoom in / out (Ctrl+0: actual size)"),
    ("Ctrl+O / Ctrl+S", "load / save a scenario"),
    ("F1", "this sheet"),
]


def shortcuts() -> list[tuple[str, str]]:
    """Every key on the help sheet: the window's, and those the kinds' Qt parts add."""
    from ddp_viz.model import registry

    kinds = [k for p in registry.load_parts("qt").values() for k in getattr(p, "SHORTCUTS", [])]
    return [*WINDOW_SHORTCUTS, *kinds, *VIEW_SHORTCUTS]


TRANSPORT_KEYS = {
    Qt.Key.Key_Space,
    Qt.Key.Key_Left,
    Qt.Key.Key_Right,
    Qt.Key.Key_PageUp,
    Qt.Key.Key_PageDown,
    Qt.Key.Key_Home,
    Qt.Key.Key_R,
    Qt.Key.Key_Escape,
    Qt.Key.Key_B,
    Qt.Key.Key_T,
    Qt.Key.Key_Period,
}
PAGE_KEYS = (Qt.Key.Key_PageUp, Qt.Key.Key_PageDown)
TYPING_WIDGETS = (QLineEdit, QAbstractSpinBox, QAbstractItemView, QComboBox)


class KeyRouter(QObject):
    """Let the stage's keys win over whatever read-only widget has focus.

    Presenter clickers send PageUp/PageDown, which a focused lesson text would otherwise
    swallow to scroll. Widgets where the learner types (fields, the data table) keep their keys,
    except Escape, which leaves the field and hands the keys back to the stage.
    """

    def __init__(
        self, window: QMainWindow, home: QWidget, has_steps: Callable[[], bool] = lambda: True
    ) -> None:
        super().__init__(window)
        self.window = window
        self.home = home  # where focus goes when a field is left
        # with no run on the stage there is nothing to step through: PageUp/PageDown scroll
        # whatever has focus (the lesson text)
        self.has_steps = has_steps
        # Enter in a field started a run and the form went grey under the cursor: the learner
        # still thinks they are in the field, and their next Escape only leaves it (it
        # cancelled the run they had just started)
        self.escape_leaves_once = False

    def on_run_from_field(self) -> None:
        self.escape_leaves_once = True

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        # every event of the application passes here: the cheap class test first, since
        # reading ``type()`` builds a Python enum (a third of a window's start-up went there)
        if not isinstance(event, QKeyEvent) or event.type() != QEvent.Type.ShortcutOverride:
            return False
        if event.key() not in TRANSPORT_KEYS or not self.window.isActiveWindow():
            return False
        typing = isinstance(QApplication.focusWidget(), TYPING_WIDGETS)
        if event.key() != Qt.Key.Key_Escape:
            self.escape_leaves_once = False  # the learner has moved on: Escape cancels again
        elif self.escape_leaves_once and not typing:
            self.escape_leaves_once = False
            self.home.setFocus(Qt.FocusReason.ShortcutFocusReason)
            event.accept()
            return True
        if event.key() in PAGE_KEYS and not self.has_steps() and not typing:
            event.accept()  # the key goes to the focused text, not the window's shortcut
            return True
        mods = event.modifiers()
        if mods & Qt.KeyboardModifier.ControlModifier:
            return False
        if mods & Qt.KeyboardModifier.AltModifier:
            # Alt+Left/Right change lessons, even where a text browser would go back/forward
            return event.key() in (Qt.Key.Key_Left, Qt.Key.Key_Right) and not typing
        if typing and event.key() == Qt.Key.Key_Escape:
            self.escape_leaves_once = False
            self.home.setFocus(Qt.FocusReason.ShortcutFocusReason)
            event.accept()
            return True  # consumed: Escape only leaves the field
        # swallowing the override lets the window's shortcut fire
        return not typing


def sheet_html(columns: int) -> str:
    """The keys as a table, in ``columns`` pairs of key and meaning."""
    every = shortcuts()
    per = -(-len(every) // columns)
    parts = [every[i * per : (i + 1) * per] for i in range(columns)]
    rows = ""
    for i in range(per):
        cells = [pair for part in parts for pair in part[i : i + 1]]
        rows += "<tr>" + "".join(f"<td><b>{k}</b></td><td>{v}</td>" for k, v in cells) + "</tr>"
    return f"<table cellpadding='6'>{rows}</table>"


def show_shortcut_sheet(window: QMainWindow) -> QDialog:
    """The key sheet (F1); non-blocking, so a presenter's next key still works. A dialog of
    its own, not a QMessageBox: that one keeps its text narrow, and in projector type the
    sheet ran past the bottom of a 800 px screen, its Close button with it."""
    box = QDialog(window)
    box.setWindowTitle("Keyboard")
    box.setObjectName("shortcut_sheet")
    room = window.screen().availableGeometry() if window.screen() else None
    label = QLabel(sheet_html(1))
    label.setTextFormat(Qt.TextFormat.RichText)
    if room is not None and label.sizeHint().height() > room.height() - 160:
        two = sheet_html(2)  # too tall for the screen: side by side, if that fits across
        if QLabel(two).sizeHint().width() <= room.width() - 80:
            label.setText(two)
    scroll = QScrollArea()  # a screen smaller still scrolls, and Close stays on it
    scroll.setWidget(label)
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.Shape.NoFrame)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(box.close)
    layout = QVBoxLayout(box)
    layout.addWidget(scroll)
    layout.addWidget(buttons)
    want = label.sizeHint() + QSize(40, 40)
    if room is not None:
        want = want.boundedTo(QSize(room.width() - 40, room.height() - 120))
    scroll.setMinimumSize(want)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
    return box
