"""On a projector the numbers the DDP step is about (each rank's ∇ before and after the
all-reduce, the new weights) are at least as tall as the code view's type (issue 33, 10: at
1280×800 they were ~13 px glyphs against the code's 22 px). Measured as glyph heights: the
tight bounding box of each number's digits in the font the stage draws it with."""

from __future__ import annotations

import re

import pytest
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QApplication

from ddp_viz.model.timeline import Cursor
from tests.conftest import load_recording
from tests.qt_helpers import feed

NUMBERS = re.compile(r"rank\d+\.(local|averaged|params)\.")


def glyph_height(font, text: str) -> float:
    return QFontMetricsF(font).tightBoundingRect(text).height()


@pytest.mark.parametrize(
    ("lesson", "name", "size"),
    [
        ("ddp-pattern", "default-run.jsonl", (1280, 800)),
        ("every-parameter", "mlp-2-ranks-3-steps.jsonl", (1280, 800)),
        ("every-parameter", "mlp-2-ranks-3-steps.jsonl", (1920, 1080)),
    ],
)
def test_the_step_numbers_are_as_tall_as_the_code(qtbot, make_window, settings, lesson, name, size):
    window = make_window(size, settings=settings, lesson_id=lesson)
    window.presentation.set_projector(True)
    with qtbot.waitSignal(window.run_shown, timeout=30_000):
        feed(window, load_recording(name))
    QApplication.processEvents()
    code_font = window.code_view.font()
    player = window.player
    player.cursor, player.progress = Cursor(0, 3), 1.0  # every number is on the stage
    player._emit(entered=True)
    frame = window.stage.frame()
    numbers = [t for t in frame.texts if NUMBERS.match(t.key or "")]
    kinds = {NUMBERS.match(t.key).group(1) for t in numbers}
    assert kinds == {"local", "averaged", "params"}, kinds
    for t in numbers:
        digits = "".join(c for c in t.text if c.isdigit()) or t.text
        drawn = glyph_height(window.stage.fonts.qfont(t.font), digits)
        code = glyph_height(code_font, digits)
        assert drawn >= code - 0.5, (t.key, t.text, drawn, code)
