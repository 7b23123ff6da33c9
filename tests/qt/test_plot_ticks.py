"""Tick labels that do not pile up (issue 47, 4: "log ticks piled on each other"; seen under
Xvfb: the empty plots in projector type at 1280×800 labelled 0, 0.2, … 1 on a 93 px axis in
28 px lines). Each plot's labelled ticks lie at least a line of their type apart."""

from __future__ import annotations

import itertools

import pytest
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QApplication

from ddp_viz._qt.plot_axis import wider


def test_wider_goes_one_two_five() -> None:
    got, x = [], 0.01
    for _ in range(6):
        x = wider(x)
        got.append(round(x, 9))
    assert got == [0.02, 0.05, 0.1, 0.2, 0.5, 1.0]
    assert wider(3.0) == 5.0 and wider(7.0) == 10.0


@pytest.mark.parametrize("projector", [True, False])
def test_labelled_ticks_lie_a_line_apart(qtbot, make_window, settings, projector) -> None:
    window = make_window((1280, 800), settings=settings, lesson_id="uneven-inputs")
    window.presentation.set_projector(projector)
    plots = window.plots_panel.ensure()
    QApplication.processEvents()
    window.grab()  # the axes lay out as they paint
    for plot in (plots.loss_plot, plots.param_plot, plots.surface_plot):
        axis = plot.getPlotItem().getAxis("left")
        lo, hi = plot.getPlotItem().getViewBox().viewRange()[1]
        size = axis.geometry().height()
        line = QFontMetricsF(axis.style["tickFont"] or axis.font()).height()
        levels = axis.tickValues(lo, hi, size)
        spacing, values = levels[0]
        assert len(values) >= 2, (projector, levels)
        assert spacing / (hi - lo) * size >= line, (projector, size, line, levels[0])


def test_thin_keeps_zero_and_the_largest_on_each_side() -> None:
    from ddp_viz._qt.plot_axis import thin

    ticks = [(0.0, "0")] + [(s * k * 12.0, f"{'-' if s < 0 else ''}1e{12 * k}")
                            for k in range(1, 7) for s in (1, -1)]  # fmt: skip
    kept = thin(ticks, -80, 80, 30)
    assert [t[1] for t in sorted(kept)] == ["-1e72", "-1e36", "0", "1e36", "1e72"]
    assert sorted(thin(ticks, -80, 80, 12)) == sorted(ticks)  # room for all: all
    # on one side only, the ticks too near 0 give way to 0
    assert [t[1] for t in sorted(thin(ticks, 0, 80, 40))] == ["0", "1e72"]
    assert [t[1] for t in sorted(thin(ticks, 0, 80, 20))] == ["0", "1e24", "1e48", "1e72"]
    # the largest kept is the largest shown, not one beyond the axis's range
    assert [t[1] for t in sorted(thin(ticks, -50, 50, 30))] == ["-1e48", "0", "1e48"]


def test_a_diverging_runs_log_ticks_do_not_pile_up(qtbot, make_window, settings) -> None:
    """A diverging run (lr 10) on a projector at 1280×800: its symmetric-log axes labelled
    1e12 … 1e72 (and −1e12 … −1e72) in 28 px lines on ~100 px axes, one over the other, and
    their words, chosen before the plots were laid out, ran past the axes into each other."""
    from PySide6.QtGui import QFontMetricsF, QImage, QPainter

    from ddp_viz._qt.plot_axis import APART
    from tests.conftest import load_recording
    from tests.qt_helpers import feed

    window = make_window((1280, 800), settings=settings, lesson_id="ddp-pattern")
    window.presentation.set_projector(True)
    with qtbot.waitSignal(window.run_shown, timeout=30_000):
        feed(window, load_recording("diverging-lr10.jsonl"))
    QApplication.processEvents()
    window.grab()
    plots = window.plots_panel.ensure()
    for plot in (plots.loss_plot, plots.param_plot):
        axis = plot.getPlotItem().getAxis("left")
        assert axis._tickLevels, "a symmetric-log axis: ticks set by hand"
        image = QImage(10, 10, QImage.Format.Format_RGB32)
        painter = QPainter(image)
        try:
            _, _, texts = axis.generateDrawSpecs(painter)
        finally:
            painter.end()
        rects = sorted((r for r, _, text in texts if text), key=lambda r: r.top())
        assert rects, plot
        line = QFontMetricsF(axis.style["tickFont"] or axis.font()).height()
        for a, b in itertools.pairwise(rects):
            assert a.bottom() <= b.top() + 1, ([t for _, _, t in texts], a, b)
            # a line and a half apart, centre to centre: "1e12" sat on "0" before
            assert b.center().y() - a.center().y() >= APART * line - 1, (
                [t for _, _, t in texts],
                a,
                b,
            )
        # its words run up the axis, within it ("value (symmetric log)" ran into the loss's)
        words = axis.label.toPlainText()
        assert words.startswith(("loss", "value")), words
        assert axis.label.boundingRect().width() <= axis.geometry().height() + 1, words


def test_an_axis_too_short_for_symlog_says_its_name_alone(qtbot) -> None:
    import pyqtgraph as pg
    from PySide6.QtCore import QRectF

    from ddp_viz._qt.plots import symlog_label

    axis = pg.AxisItem("left")
    axis.setGeometry(QRectF(0, 0, 40, 60))  # "loss (symlog)" in 24 px type is ~170 px
    assert symlog_label(axis, "loss", 24) == "loss"
    axis.setGeometry(QRectF(0, 0, 40, 400))
    assert symlog_label(axis, "loss", 24) == "loss (symmetric log)"
