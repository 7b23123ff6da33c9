"""pyqtgraph plots of the recorded run: loss, parameter trajectories, the loss surface. Curves
are created once per run and updated with ``setData`` (the controller limits the rate)."""

from __future__ import annotations

import bisect
import math
from types import ModuleType

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QTimer
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from ddp_viz._qt.pens import MARKERS_UP_TO
from ddp_viz._qt.pens import pen as _pen
from ddp_viz._qt.plot_axis import ReadableAxis
from ddp_viz._qt.plot_hold import HoldMixin
from ddp_viz._qt.plot_legend import LegendMixin
from ddp_viz._qt.plot_lines import Line, Lines
from ddp_viz._qt.plot_math import (
    DASH_NAMES,
    SYMLOG_ABOVE,
    by_tensor,
    has_surface,
    kind_curves,
    param_title,
    symlog,
    symlog_ticks,
    x_extent,
)
from ddp_viz._qt.plot_ranges import RangeMixin
from ddp_viz._qt.plot_style import StyleMixin
from ddp_viz._qt.plot_surface import SurfaceMixin
from ddp_viz.model.reference import EVERY_STEP_BELOW, values_at_every_step, values_policy
from ddp_viz.model.theme import Theme
from ddp_viz.model.timeline import Cursor, RunRecord, display_value, scalar

# A streaming run's plots are pushed one a refresh (round robin); when the refreshes stop (the
# run paused, hung or ended its events) the rest follow one a turn of this timer, so no plot
# is left behind the stage. It once stayed so until the next event: during a hang, for good.
REST_EVERY_MS = 100


class Plots(HoldMixin, LegendMixin, RangeMixin, StyleMixin, SurfaceMixin, QWidget):
    def __init__(self, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        pg.setConfigOptions(antialias=True, background=theme.panel, foreground=theme.text)
        self.theme = theme
        self.record: RunRecord | None = None
        self.expected: ModuleType | None = None  # a kind's CURVES: the run the page waits for
        self._ticked: set[pg.PlotWidget] = set()  # left axes given ticks of our own
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        self.loss_plot = pg.PlotWidget(axisItems={"left": ReadableAxis("left")})
        self.param_plot = pg.PlotWidget(axisItems={"left": ReadableAxis("left")})
        self.surface_plot = pg.PlotWidget(axisItems={"left": ReadableAxis("left")})
        for w in (self.loss_plot, self.param_plot, self.surface_plot):
            w.setMinimumHeight(120)
            layout.addWidget(w, 1)
        for w in (self.loss_plot, self.param_plot):
            w.getPlotItem().getViewBox().sigXRangeChanged.connect(self._on_x_range_changed)
        self.surface_note = QLabel("")
        self.surface_note.setWordWrap(True)
        layout.addWidget(self.surface_note)
        self._curves: dict[str, pg.PlotDataItem | Line] = {}
        self._lines: dict[pg.PlotWidget, Lines] = {}  # a kind's curves: a plot's in one item
        self._arrows: list[pg.PlotDataItem] = []
        self._arrow_step = -1
        self._y_range: dict[pg.PlotWidget, tuple[float, float] | None] = {}
        self._rest = QTimer(self, singleShot=True, interval=REST_EVERY_MS)
        self._rest.timeout.connect(self._on_rest_timeout)
        self._style()
        self.clear_run()

    def expect(self, curves: ModuleType | None) -> None:
        """The page waits for a run of the kind whose plots' part is ``curves`` (None: a
        lesson's page): its titles and words before the run, not a lesson's."""
        if curves is self.expected:
            return  # a lesson after a lesson: the page's clear_run did it all
        self.expected = curves
        if self.record is None:
            self.clear_run(surface=self.surface_plot.isVisibleTo(self))

    def set_compact(self, on: bool) -> None:
        self.surface_note.setVisible(not on)
        self.surface_plot.setToolTip(self.surface_note.text())

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self._style()
        if self.record is not None:
            self.set_record(self.record)
        else:  # the empty plots' words were made in the old type ("ppears after Run", cut)
            self.clear_run(surface=self.surface_plot.isVisibleTo(self))

    # --- data --------------------------------------------------------------------------------
    def clear_run(self, surface: bool = True) -> None:
        """No run yet (or a new lesson): empty plots that say where the curves will come from;
        the loss surface's among them if the page can have one (``surface``)."""
        self.record = None
        self._curves = {}
        self._lines = {}
        self._arrows = []
        self._drop_param_legend()
        self._style()  # the titles say nothing about the last run's parameters
        self.surface_plot.setVisible(surface)
        self.surface_note.setText("")
        # a kind's page shows the steps its run starts with: its start re-lays no axis
        last = x_extent(RunRecord(), 0, MARKERS_UP_TO) if self.expected is not None else 0
        for w in (self.loss_plot, self.param_plot, self.surface_plot):
            w.clear()
            text = pg.TextItem(self.waiting_words(), color=self.theme.muted, anchor=(0.5, 0.5))
            w.addItem(text)
            w.setYRange(0, 1)
            if w is self.surface_plot or not last:
                w.setXRange(0, 1)
                text.setPos(0.5, 0.5)
            else:
                text.setPos(last / 2, 0.5)
        if last:  # as its run will set them up (set_record, long_run)
            self._x_shown = 0
            self._show_steps(last)
            for w in (self.loss_plot, self.param_plot):
                w.showGrid(x=False, y=False)
                self._hold_axis_width(w, True)

    def set_record(self, record: RunRecord) -> None:
        """A new run: create its curves once."""
        self.record = record
        t = self.theme
        # a watched run has no loss: each rank's arrival at the all-reduce takes the loss plot
        # (a straggler's line sits above the others), and since its length is not known it is
        # drawn as a long run is
        self._own = own = kind_curves(record)
        long_run = self._long_run = record.steps_planned > MARKERS_UP_TO or own is not None
        self._lines = {}
        for w in (self.loss_plot, self.param_plot):
            w.clear()
            if own is not None:
                self._lines[w] = Lines()
                w.addItem(self._lines[w])
            # long runs: draw at most ~2 points per pixel, skip antialiasing (keeps frames short)
            w.setDownsampling(auto=long_run, mode="peak")
            w.setClipToView(long_run)
            # the alpha-blended grid costs ~4 ms a repaint: off while a long run streams
            w.showGrid(x=not long_run, y=not long_run, alpha=0.25)
            self._hold_axis_width(w, long_run)
            if long_run:
                w.disableAutoRange(axis="y")  # expand-only ranges while streaming, see _push
                self._y_range[w] = None
            else:
                w.enableAutoRange(axis="y")  # the placeholder's fixed 0–1 range must not stick
        self._curves = {}
        self._series: dict[str, tuple[list[float], list[float]]] = {}
        self._consumed = 0
        self._stale: set[str] = set()
        self._turn = -1
        lw = t.line_px
        sym = max(5, t.font_px * 0.5)
        # a watched run: one curve per rank, named by the ranks' colours, as the loss plot's
        if own is not None:
            self._drop_param_legend()
        else:
            self._param_legend(record)
        # markers tell ranks apart without colour; on long runs they would hide the lines
        markers = not long_run
        tensors = by_tensor(record)  # a colour per tensor, the legend names them
        for r in range(record.world_size):
            c, m = t.rank_color(r), (t.rank_marker(r) if markers else None)
            # ranks are drawn with shrinking markers so identical curves stay visible
            size = sym * (1.6 - 0.6 * r / max(1, record.world_size - 1))
            curves = [("loss", self.loss_plot, 0, c)] + [
                (f"p{i}:", self.param_plot, 0 if tensors else i, t.rank_color(i) if tensors else c)
                for i, _ in enumerate(record.params[: 1 if own is not None else None])
            ]
            for key, plot, dash, colour in curves:
                self._curve(
                    f"{key}{r}", plot, pen=_pen(colour, lw, dash=dash), symbol=m,
                    symbolSize=size, symbolBrush=colour, antialias=not long_run,
                )  # fmt: skip
        # a symbol too, so a one-step run still shows its full-batch loss; a long run's
        # reference steps (1–20, then every 100th) are a dashed line alone: big crosses over
        # its first 20 steps buried the ranks' curves (a watched run has no reference)
        if own is None:
            self._curve(
                "full", self.loss_plot, pen=_pen(t.muted, lw if long_run else lw + 1, dash=True),
                symbol="+" if markers else None,  # no rank's marker
                symbolSize=max(10, t.font_px), symbolPen=_pen(t.muted, 2), symbolBrush=None,
            )  # fmt: skip
        self._symlog = {self.loss_plot: False, self.param_plot: False}
        self._loss_label = own.LOSS_LABEL if own is not None else "loss"
        for plot, label in ((self.loss_plot, self._loss_label), (self.param_plot, "value")):
            axis = plot.getPlotItem().getAxis("left")
            if plot in self._ticked:  # the last run's symmetric-log ticks
                axis.setTicks(None)
                self._ticked.discard(plot)
            axis.relabel = None
            self._set_axis_label(axis, label)
        self._x_shown = 0
        self._show_steps(x_extent(record, 0, MARKERS_UP_TO))
        self._set_title(self.param_plot, (own.title if own is not None else param_title)(record))
        full = "dashed: full batch" if long_run else "dashed +: full batch"
        title = f"Loss per rank<br>({full})"
        if own is not None:
            title = own.LOSS_TITLE
        self._set_title(self.loss_plot, title)
        styles = [
            f"{'' if by_tensor(record) else DASH_NAMES[i % 4] + ': '}{p.name} {list(p.shape)}"
            for i, p in enumerate(record.params)
        ]
        # a long run: not every step has values
        if record.steps_planned > EVERY_STEP_BELOW and not values_at_every_step(record.scenario):
            styles.append(values_policy())
        tip = own.tooltip(record) if own is not None else "\n".join(styles)
        self.param_plot.setToolTip(tip)
        init = record.initial_params()
        names = record.param_names
        for r in range(record.world_size):
            self._series[f"loss{r}"] = ([], [])
            for i, n in enumerate(names):
                self._series[f"p{i}:{r}"] = (
                    ([], []) if own is not None else ([0.0], [display_value(init.get(n))])
                )
        self._series["full"] = ([], [])
        if own is not None:  # the averaged gradient's norm, dashed, muted as the full loss
            self._series[own.AVERAGE] = ([], [])
            self._curve(
                own.AVERAGE, self.param_plot, pen=_pen(t.muted, lw + 1, dash=True),
                antialias=False,
            )  # fmt: skip
        self._series["path"] = self._path_point(record, init, [], [])
        self._path_x = [0.0] * len(self._series["path"][0])  # the step of each path point
        self._build_surface(record)
        self.update_record(record)

    def _curve(self, key: str, plot: pg.PlotWidget, **opts: object) -> None:
        """A kind's curve is a line of its plot's one item (``plot_lines``); a lesson's is a
        pyqtgraph curve of its own (markers, antialiasing, the legend's samples)."""
        if plot in self._lines:
            self._curves[key] = self._lines[plot].line(opts["pen"])  # type: ignore[arg-type]
        else:
            self._curves[key] = plot.plot([], [], **opts)

    def _groups(self) -> set[str]:
        """The plots a push can change: the loss surface only on a page that draws one."""
        return {"loss", "param"} | ({"surface"} if self._surface_ready else set())

    def _next_group(self) -> list[str]:
        for _ in range(3):
            self._turn = (self._turn + 1) % 3
            group = ("loss", "param", "surface")[self._turn]
            if group in self._stale:
                return [group]
        return []

    def _push_later(self) -> None:
        """Every plot is pushed again, one a refresh, the rest on the timer's turns."""
        self._stale |= self._groups()
        self._rest.start()

    def _push_turn(self) -> None:
        """One stale plot pushed; the rest wait for the next refresh or the timer's turn
        (restarted by every refresh: it runs only when they stop)."""
        for group in self._next_group():
            self._push(group)
        if self._stale:
            self._rest.start()
        else:
            self._rest.stop()

    def _on_rest_timeout(self) -> None:
        if self.record is not None:
            self._push_turn()

    def _push(self, group: str) -> None:
        self._stale.discard(group)
        if group == "surface":
            if self._surface_ready:
                xs, ys = self._series["path"]
                k = bisect.bisect_right(self._path_x, self._hold[1])  # held to the stage
                self._path.setData(np.asarray(xs[:k], float), np.asarray(ys[:k], float))
            return
        prefixes = ("loss", "full") if group == "loss" else ("p",)
        plot = self.loss_plot if group == "loss" else self.param_plot
        names = [n for n in self._curves if n.startswith(prefixes)]
        cut = {n: self._held(n, self._series[n][0]) for n in names}  # held to the stage
        # nothing drawable yet (an MLP's start): no points, as pyqtgraph warns at all-NaN ones
        cut = {n: k if np.isfinite(self._series[n][1][:k]).any() else 0 for n, k in cut.items()}
        ys = {n: np.asarray(self._series[n][1][: cut[n]], float) for n in names}
        finite = [y[np.isfinite(y)] for y in ys.values() if np.isfinite(y).any()]
        if finite and max(float(np.abs(f).max()) for f in finite) > SYMLOG_ABOVE:
            self._symlog[plot] = True  # a diverging run: show the growth, not a flat line
        if self._symlog[plot]:
            ys = {n: symlog(y) for n, y in ys.items()}
        shown = [y[np.isfinite(y)] for y in ys.values()]
        lo = min((float(y.min()) for y in shown if y.size), default=np.inf)
        hi = max((float(y.max()) for y in shown if y.size), default=-np.inf)
        if self._symlog[plot] and np.isfinite(lo):
            axis = plot.getPlotItem().getAxis("left")
            axis.setTicks([symlog_ticks(lo, hi)])
            self._ticked.add(plot)
            base = self._loss_label if plot is self.loss_plot else "value"
            self._set_axis_label(axis, symlog_label(axis, base, self.text_px))
            # chosen for the axis's height now; a run opened whole is drawn before its plots'
            # layout settles ("(symmetric log)" ran into the plot below): again on a resize
            axis.relabel = lambda a=axis, b=base: self._set_axis_label(
                a, symlog_label(a, b, self.text_px)
            )
        if plot in self._y_range and np.isfinite(lo):
            # the range before the curves: moved after them, it made every curve work out its
            # points again (pyqtgraph's clip-to-view), twice the work of a streaming push
            self._expand_y(plot, lo, hi)
        for n in names:
            self._curves[n].setData(np.asarray(self._series[n][0][: cut[n]], float), ys[n])

    def update_record(
        self, record: RunRecord, cursor: Cursor | None = None, final: bool = False
    ) -> None:
        if record is not self.record:
            self.set_record(record)
            return
        ended = final or record.done
        # Append only the steps completed since the last frame: O(new steps), not O(run).
        done = record.complete_prefix()
        for st in record.steps[self._consumed : done]:
            if self._own is not None:  # arrivals at the all-reduce, gradient norms
                for name, y in self._own.points(st):
                    self._append(name, st.step + 1, y)
                continue
            for r, rs in st.ranks.items():
                loss = rs.loss if rs.loss is not None else np.nan
                self._append(f"loss{r}", st.step + 1, loss)
                if not rs.values:  # a long run's step without values: the curve goes on
                    continue
                for i, n in enumerate(record.param_names):
                    value = display_value(rs.params.get(n)) if rs.params else np.nan
                    self._append(f"p{i}:{r}", st.step + 1, value)
            if st.reference is not None:
                self._append("full", st.step + 1, st.reference.full_batch_loss)
            if st.has_values:
                self._path_point(record, st.params_after() or {}, *self._series["path"])
                self._path_x += [st.step + 1] * (len(self._series["path"][0]) - len(self._path_x))
        if done > self._consumed:
            self._consumed = done
            self._stale = self._groups()
        # While a run streams, push one plot per call (round robin) so no single frame pays
        # for repainting all three; when it ends, everything at once.
        if ended and self._long_run:
            for w in (self.loss_plot, self.param_plot):
                w.showGrid(x=True, y=True, alpha=0.25)
                w.enableAutoRange(axis="y")  # the run is over: fit it tightly
                self._y_range.pop(w, None)
                self._hold_axis_width(w, False)
        if ended and (done < record.steps_planned or self._own is not None):
            self._show_steps(max(1, done))  # cancelled, failed or watched: the steps it made
        elif not ended:
            self._show_steps(x_extent(record, done, MARKERS_UP_TO))
        if ended:
            for group in sorted(self._stale):
                self._push(group)
            self._rest.stop()
        else:
            self._push_turn()
        self._update_surface(record, cursor)

    @staticmethod
    def _path_point(record: RunRecord, params: dict, xs: list, ys: list) -> tuple[list, list]:
        """Append the (first, second) parameter pair to the surface's path (linear model)."""
        if has_surface(record) and len(record.params) == 2:
            a, b = record.param_names
            x, y = scalar(params, a), scalar(params, b)
            xs.append(x if math.isfinite(x) else np.nan)
            ys.append(y if math.isfinite(y) else np.nan)
        return xs, ys

    def _append(self, name: str, x: float, y: float) -> None:
        """Non-finite values (a diverging run) become gaps, never a broken axis range."""
        xs, ys = self._series[name]
        xs.append(x if math.isfinite(x) else np.nan)
        ys.append(y if math.isfinite(y) else np.nan)
        if self._own is not None and len(xs) > self._own.MAX_POINTS:
            # a watched run of any length: every other point goes (the curve still spans the
            # run, at half the resolution), so a curve holds at most MAX_POINTS
            del xs[1::2], ys[1::2]


def symlog_label(axis: pg.AxisItem, base: str, px: int) -> str:
    """The left axis's words on a symmetric log scale, the longest that fits along the axis
    (it runs up the plot's height: on a laptop "loss (symmetric lo" was cut)."""
    font = QFont(axis.label.font())
    font.setPixelSize(max(1, int(px)))
    fm = QFontMetrics(font)
    room = axis.height() - 4
    for text in (f"{base} (symmetric log)", f"{base} (symlog)"):
        if fm.horizontalAdvance(text) <= room:
            return text
    return base  # too short an axis for either: its ticks (1e24, 1e72) say log
