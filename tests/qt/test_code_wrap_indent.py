"""Code that has to wrap keeps its indentation (issue 33, item 5): a continuation line started
at column 0 ('/ k', 'nn.Linear(8, 1)', 'self.named_children():'), which read as code at the
wrong indentation, in the lesson text and in the code view."""

from __future__ import annotations

from PySide6.QtGui import QFontMetricsF

from ddp_viz._qt.code_view import CodeView
from ddp_viz._qt.hanging import HANG_COLUMNS, code_blocks
from ddp_viz._qt.lesson_view import LessonView
from ddp_viz.model.course import load_course
from ddp_viz.model.theme import load_theme


def _continuations(blocks) -> list[tuple[str, float, float]]:
    """(text, x of its first line, x of its second) for every wrapped block."""
    out = []
    for b in blocks:
        layout = b.layout()
        if layout.lineCount() > 1:
            out.append((b.text(), layout.lineAt(0).x(), layout.lineAt(1).x()))
    return out


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


def test_the_code_view_hangs_a_wrapped_line_under_its_indentation(qtbot) -> None:
    lesson = load_course().get("every-parameter")
    view = CodeView(lesson, load_theme("light"))
    qtbot.addWidget(view)
    view.resize(230, 400)  # narrower than its longest line at the smallest type
    view.show()
    view.render()
    doc = view.document()
    blocks = [doc.findBlockByNumber(n) for n in range(len(view.code.splitlines()))]
    wrapped = _continuations(blocks)
    assert wrapped, "nothing wrapped: make the view narrower"
    column = QFontMetricsF(view.font()).horizontalAdvance(" ")
    for text, first, second in wrapped:
        want = (_indent(text) + HANG_COLUMNS) * column
        assert abs((second - first) - want) < 1.5, (text, first, second, want)


def test_the_lesson_text_hangs_wrapped_code_too(qtbot) -> None:
    lesson = load_course().get("every-parameter")
    view = LessonView(lesson, load_theme("light"))
    qtbot.addWidget(view)
    view.resize(260, 600)
    view.show()
    view.render()
    wrapped = _continuations(code_blocks(view.document()))
    assert wrapped
    for text, first, second in wrapped:
        assert second - first > _indent(text) * 5, (text, first, second)
