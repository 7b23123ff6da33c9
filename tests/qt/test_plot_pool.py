"""Curves made before a run and kept between runs (``_qt/plot_pool``), and a streaming plot's
axis that keeps its width: what a run's first seconds no longer pay for beside 8 ranks."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtWidgets import QApplication

from ddp_viz.kinds.watched.qt.plot import SPARE as SPARE_CURVES
from tests.frames import linear_run
from tests.qt_helpers import feed
from tests.watch.test_watch_page_budget import RANKS, _start, _timings


def _filled(qtbot, plots) -> None:
    plots.pool.keep(SPARE_CURVES)
    both = (plots.loss_plot, plots.param_plot)
    qtbot.waitUntil(lambda: all(plots.pool.spare(w) >= SPARE_CURVES for w in both), timeout=10_000)


def test_a_page_that_keeps_spares_makes_no_curve_as_its_run_starts(
    make_window, qtbot, monkeypatch
) -> None:
    window = make_window()
    plots = window.plots
    _filled(qtbot, plots)
    assert not plots.pool._timer.isActive()  # full: nothing more is made
    made: list[int] = []
    plot = pg.PlotItem.plot
    monkeypatch.setattr(pg.PlotItem, "plot", lambda *a, **k: made.append(1) or plot(*a, **k))
    rec = _start()
    plots.set_record(rec)
    for step in range(3):
        _timings(rec, step)
        plots.update_record(rec)
    assert made == []  # every curve of 8 ranks was a spare
    assert len(plots._curves) == 2 * RANKS + 1 and not plots._queued
    for r in range(RANKS):  # styled as a made one: its rank's colour, shown, with its points
        curve = plots._curves[f"loss{r}"]
        assert curve.isVisible()
        assert curve.opts["pen"].color().name() == window.theme.rank_color(r).lower()
    plots.update_record(rec, final=True)
    assert list(plots._curves["loss0"].getData()[0]) == [1, 2, 3]


def test_a_spare_keeps_nothing_of_the_run_that_used_it(make_window, qtbot) -> None:
    """A lesson's curves (markers, dashes) go back to the pool when the page is cleared; the
    next run that takes them gets its own style whole, not the lesson's markers."""
    window = make_window()
    window.plots.pool.keep(SPARE_CURVES)  # a page that keeps its curves between runs
    feed(window, list(linear_run(2, steps=3).events))
    full = window.plots._curves["full"]  # the full-batch loss: a "+" with a pen of its own
    assert full.opts["symbol"] == "+" and full.opts["symbolPen"] != (200, 200, 200)
    window.plots.clear_run()
    plots = window.plots
    assert full in plots.pool._spare[plots.loss_plot] and not full.isVisible()
    assert full.getData()[0] is None or len(full.getData()[0]) == 0
    rec = _start()
    plots.set_record(rec)
    taken = [k for k, c in plots._curves.items() if c is full]
    assert taken, "the lesson's curve was not reused"
    assert full.opts["symbol"] is None and full.opts["symbolPen"] == (200, 200, 200), taken


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
    # the page waits: laid out, its spare curves made (torchrun starts ranks meanwhile)
    qtbot.waitUntil(lambda: not plots.pool._timer.isActive(), timeout=10_000)
    QApplication.processEvents()
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
