"""Where a click on the watched page's diagnosis leads: the stage moves to the step it names,
and the Diagnosis tab (the left column) shows the finding in full and its rank's stack, ddp-viz's
frames left out; an uneven end offers the course's lesson on it. The words come from the pure
``jumps``; this module only moves the player and fills the tab."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QFont
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from ddp_viz.kinds.watched.jumps import Jump, jump_text, jumps, link_hint, shown_step

MONO = ["DejaVu Sans Mono", "Menlo", "Consolas", "monospace"]
TAB = "Diagnosis"


class DiagnosisTab(QWidget):
    """The finding clicked last: its words, the step, the rank's stack (selectable, to copy
    a file and line), and a button to its lesson when the course has one."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.heading = QLabel("")
        self.heading.setWordWrap(True)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setAccessibleName("the diagnosis and its rank's stack")
        self.text.setFont(QFont(MONO))
        self.text.setTabChangesFocus(True)  # Tab leaves the text for the lesson's button
        # the lesson's title wraps in a label: on a button, in projector type, it made the
        # column 630 px wide at 1280x800 and cut the plots' titles
        self.lesson_title = QLabel("")
        self.lesson_title.setWordWrap(True)
        self.lesson = QPushButton("Open the lesson")
        self.lesson_id = ""
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.heading)
        lay.addWidget(self.text, 1)
        lay.addWidget(self.lesson_title)
        lay.addWidget(self.lesson)
        self._show_lesson(False)

    def show_jump(self, j: Jump, available: int, lesson_title: str = "") -> None:
        shown = shown_step(j, available)
        where = f"the stage shows step {shown + 1}" if shown is not None else "no step to show"
        self.heading.setText(f"<b>{link_hint(j)[0].upper()}{link_hint(j)[1:]}</b> · {where}")
        self.text.setPlainText("\n".join(jump_text(j, available)))
        self.lesson_id = j.lesson if lesson_title else ""
        self.lesson_title.setText(f"The course's lesson on it: <b>{lesson_title}</b>")
        self.lesson.setAccessibleName(f"Open the lesson: {lesson_title}")
        self._show_lesson(bool(self.lesson_id))

    def _show_lesson(self, on: bool) -> None:
        self.lesson_title.setVisible(on)
        self.lesson.setVisible(on)

    def lines(self) -> list[str]:
        """The tab's text, line by line (tests, screen readers)."""
        return self.text.toPlainText().splitlines()


def _tab(window: Any) -> DiagnosisTab:
    tab = getattr(window, "diagnosis_tab", None)
    if tab is None:
        tab = window.diagnosis_tab = DiagnosisTab()
        tab.lesson.clicked.connect(lambda: window.set_lesson(tab.lesson_id))
    return tab


def follow_link(window: Any, key: str) -> None:  # window: MainWindow
    """A diagnosis on the page was clicked (or Entered): its step on the stage (or the last
    step every rank reported, when its own never completed), its words and stack in the
    Diagnosis tab, the column shown (a projector folds it away) and the keyboard in it."""
    rec = window.player.record
    j = jumps(rec).get(key.removeprefix("doctor.")) if rec is not None else None
    if j is None:
        return
    available = window.player.available_steps()
    shown = shown_step(j, available)
    window.player.pause()
    if shown is not None:
        window.session.step_by_hand()  # a streaming run leaves fast mode, as a key would
        window.player.seek_step(shown)
    course = window.course
    title = course.get(j.lesson).title if j.lesson and j.lesson in course.ids else ""
    tab = _tab(window)
    tab.show_jump(j, available, title)
    if window.tabs.indexOf(tab) < 0:
        window.tabs.addTab(tab, TAB)
    window.side_action.setChecked(True)
    window.tabs.setCurrentWidget(tab)
    tab.text.setFocus()  # a screen reader reads it; the status bar keeps the verdict


def forget(window: Any) -> None:
    """The page was put on (a new run) or taken off: the last run's diagnosis goes."""
    tab = getattr(window, "diagnosis_tab", None)
    if tab is not None and window.tabs.indexOf(tab) >= 0:
        window.tabs.removeTab(window.tabs.indexOf(tab))
