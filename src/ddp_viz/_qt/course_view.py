"""The course: every lesson in order, which are done (quiz passed), previous / next."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ddp_viz.model.course import Course


class CourseView(QWidget):
    lesson_chosen = Signal(str)  # lesson id

    def __init__(self, course: Course, current: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.course = course
        self.current = current
        self.list = QListWidget()
        self.list.setAccessibleName("lessons")
        self.list.setWordWrap(True)
        self.list.itemActivated.connect(self._on_item_activated)
        self.list.itemClicked.connect(self._on_item_activated)
        self.previous = QPushButton("◀ Previous lesson")
        self.next = QPushButton("Next lesson ▶")
        self.previous.clicked.connect(lambda: self._go(-1))
        self.next.clicked.connect(lambda: self._go(+1))
        self.progress = QLabel()
        self.why = QLabel(course.why_this_order)  # the reason for the order, from the assets
        self.why.setWordWrap(True)
        self.why.setVisible(bool(course.why_this_order))
        buttons = QHBoxLayout()
        buttons.addWidget(self.previous)
        buttons.addWidget(self.next)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.progress)
        layout.addWidget(self.why)
        layout.addWidget(self.list, 1)
        layout.addLayout(buttons)
        self.refresh()

    def refresh(self) -> None:
        self.list.blockSignals(True)
        self.list.clear()
        for i, lesson in enumerate(self.course, start=1):
            done = lesson.id in self.course.done
            mark = "✓" if done else ("▶" if lesson.id == self.current else "○")
            item = QListWidgetItem(f"{mark}  {i}. {lesson.title}\n      {lesson.summary}")
            item.setData(Qt.ItemDataRole.UserRole, lesson.id)
            item.setToolTip(("Done: quiz passed. " if done else "") + lesson.summary)
            self.list.addItem(item)
            if lesson.id == self.current:
                self.list.setCurrentItem(item)
        self.list.blockSignals(False)
        i = self.course.index(self.current)
        self.previous.setEnabled(i > 0)
        self.next.setEnabled(i + 1 < len(self.course))
        self.progress.setText(f"{len(self.course.done)} of {len(self.course)} lessons done")

    def set_current(self, lesson_id: str) -> None:
        self.current = lesson_id
        self.refresh()

    def _on_item_activated(self, item: QListWidgetItem) -> None:
        lesson_id = item.data(Qt.ItemDataRole.UserRole)
        if lesson_id != self.current:
            self.lesson_chosen.emit(lesson_id)

    def _go(self, delta: int) -> None:
        i = self.course.index(self.current) + delta
        if 0 <= i < len(self.course):
            self.lesson_chosen.emit(self.course.lessons[i].id)
