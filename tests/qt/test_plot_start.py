"""A watched run's start beside 8 ranks: its curves are lines of one item per plot
(``_qt/plot_lines``), none made as a pyqtgraph curve, and a streaming plot's axis keeps its
width: what a run's first seconds no longer pay for."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtWidgets import QApplication

from ddp_viz._qt.plot_lines import Line, Lines
from tests.frames import linear_run
from tests.qt_helpers import feed
from tests.watch.test_watch_page_budget import RANKS, _start, _timings


def test_a_watched_run_makes_no_pyqtgraph_curve(make_window, monkeypatch) -> None:
    window = make_window()
    plots = window.plots
    made: list[int] = []
    plot = pg.PlotItem.plot
    monkeypatch.setattr(pg.PlotItem, "plot", lambda *a, **k: made.append(1) or plot(*a, **k))
    rec = _start()
    plots.set_record(rec)
    for step in range(3):
        _timings(rec, step)
        plots.update_record(rec)
    assert made == []  # eight ranks' arrivals and norms, and the average's: lines, made at once
    assert len(plots._curves) == 2 * RANKS + 1
    assert all(isinstance(c, Line) for c in plots._curves.values())
    items = [i for i in plots.loss_plot.getPlotItem().items if isinstance(i, Lines)]
    assert len(items) == 1 and len(items[0].lines) == RANKS  # one item holds a plot's lines
    for r in range(RANKS):  # each in its rank's colour
        line = plots._curves[f"loss{r}"]
        assert line.pen.color().name() == window.theme.rank_color(r).lower()
    plots.update_record(rec, final=True)
    assert list(plots._curves["loss0"].getData()[0]) == [1, 2, 3]


def test_a_lesson_after_a_watched_run_gets_pyqtgraph_curves(make_window) -> None:
    """A lesson's curves have markers, dashes and a legend: pyqtgraph's own, as before."""
    window = make_window()
    rec = _start()
    window.plots.set_record(rec)
    window.plots.clear_run()
    feed(window, list(linear_run(2, steps=3).events))
    full = window.plots._curves["full"]  # the full-batch loss: a "+" with a pen of its own
    assert isinstance(full, pg.PlotDataItem) and full.opts["symbol"] == "+"
    assert not [i for i in window.plots.loss_plot.getPlotItem().items if isinstance(i, Lines)]


def test_a_streaming_plots_axis_keeps_its_width_as_its_range_moves(make_window, qtbot) -> None:
    """Labels of every width ("0.0125", "10", "150") leave a streaming axis as wide as it was;
    a width that followed them re-laid the whole plot each time its range moved."""
    window = make_window()
    plots = window.plots
    rec = _start()
    plots.set_record(rec)
    axis = plots.loss_plot.getPlotItem().getAxis("left")
    widths = []
    for hi in (0.0125, 10.0, 150.0, 0.5):
        plots.loss_plot.setYRange(0.0, hi, padding=0)
        QApplication.processEvents()
        plots.loss_plot.grab()  # the axis lays out its labels when it paints
        widths.append(round(axis.width(), 1))
    assert len(set(widths)) == 1, widths
    assert not axis.style["autoReduceTextSpace"]
    plots.update_record(rec, final=True)  # the run is over: the axis fits its labels again
    assert axis.style["autoReduceTextSpace"]


def _title(plot: pg.PlotWidget) -> str:
    return plot.getPlotItem().titleLabel.text


def _placeholder(plot: pg.PlotWidget) -> str:
    return next(
        i.textItem.toPlainText() for i in plot.getPlotItem().items if isinstance(i, pg.TextItem)
    )


def test_the_watched_page_names_its_own_plots_before_its_run(make_window, qtbot, monkeypatch):
    """Before the ranks report, the watched page's plots say what they will show (not a
    lesson's loss and "appears after Run" on a page with no Run); its run then sets the same
    titles, which re-lays nothing; a lesson's page gets its own titles back."""
    from ddp_viz._qt.lesson_switch import show_lesson
    from ddp_viz.kinds.watched.qt import plot as watched_plot
    from ddp_viz.model.assets import asset
    from ddp_viz.model.lesson import load_lesson_folder

    window = make_window()
    plots = window.plots
    show_lesson(window, load_lesson_folder(asset("watched")))
    assert "Arrival at the all-reduce" in _title(plots.loss_plot)
    assert "gradient" in _title(plots.param_plot)
    assert _placeholder(plots.loss_plot) == watched_plot.WAITING
    assert plots.loss_plot.getPlotItem().getAxis("left").labelText == watched_plot.LOSS_LABEL
    titled: list[str] = []
    set_title = pg.PlotItem.setTitle
    monkeypatch.setattr(
        pg.PlotItem,
        "setTitle",
        lambda self, *a, **k: titled.append(a[0]) or set_title(self, *a, **k),
    )
    plots.set_record(_start())
    assert titled == [], titled  # the page showed them already
    monkeypatch.undo()
    window.session.forget_run()
    window.set_lesson("ddp-pattern")
    assert "Loss per rank" in _title(plots.loss_plot)
    assert _placeholder(plots.loss_plot) == "appears after Run"


def test_a_watched_runs_start_draws_no_axis_again(make_window, qtbot, monkeypatch) -> None:
    """The waiting page is set up as its run will be (the steps it starts with, no grid, the
    axis's room for its labels): the run's first event lays out and draws no axis again,
    each of which cost a few ms of a starting run's busiest second."""
    from ddp_viz._qt.lesson_switch import show_lesson
    from ddp_viz.model.assets import asset
    from ddp_viz.model.lesson import load_lesson_folder

    window = make_window()
    show_lesson(window, load_lesson_folder(asset("watched")))
    plots = window.plots
    QApplication.processEvents()  # the page waits, laid out (torchrun starts ranks meanwhile)
    views = (plots.loss_plot, plots.param_plot)
    for view in views:
        view.grab()  # the waiting page, drawn
    drawn: list[str] = []
    paint = pg.AxisItem.paint  # cached as pixmaps: called only to draw an axis afresh
    monkeypatch.setattr(
        pg.AxisItem, "paint", lambda self, *a: (drawn.append(self.orientation), paint(self, *a))
    )
    plots.set_record(_start())
    QApplication.processEvents()
    for view in views:
        view.grab()
    assert drawn == []
