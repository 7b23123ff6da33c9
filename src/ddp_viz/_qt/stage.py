"""The stage widget: asks the lesson's scene for a :class:`StageFrame` and draws it.

Deciding what is on screen happens in the pure scene (``ddp_viz.model.scenes``); this widget
only measures text with Qt's font metrics and paints shapes and texts where the frame says.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping

from PySide6.QtCore import QPointF, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QFocusEvent,
    QFont,
    QFontMetricsF,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QPen,
    QStaticText,
    QTransform,
)
from PySide6.QtWidgets import QSizePolicy, QWidget

from ddp_viz._qt.theme import qcolor
from ddp_viz.model import protocol
from ddp_viz.model.frame import Font, Link, Shape, StageFrame, Text
from ddp_viz.model.lesson import Lesson
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.session import EngineState
from ddp_viz.model.theme import Theme
from ddp_viz.model.timeline import Cursor, RunRecord

MONO = ["DejaVu Sans Mono", "Menlo", "Consolas", "monospace"]
LEFT_MIDDLE = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
PRESS_RUN = "Press Run to start real DDP ranks on this machine."
# A streaming run's stage is painted this long after its frame was built: two slices of the
# window's thread with a sleep between, not one as long as both. Beside 8 ranks on 2 cores a
# slice of ~8 ms (a watched frame's build and paint) came back to the thread after 50-100 ms.
PAINT_AFTER_MS = 12


def starting_ranks_words(workers: Mapping[int, protocol.WorkerState]) -> str | None:
    """What an empty stage says while pooled ranks still start, or None once all are warm.
    A spawned rank (Windows, macOS, ``DDP_VIZ_START_METHOD=spawn``) imports torch itself:
    seconds each, the engine ready long before its ranks are."""
    states = [w.state for w in workers.values() if w.state != protocol.WorkerStatus.EXITED]
    starting = sum(s == protocol.WorkerStatus.STARTING for s in states)
    if not starting:
        return None
    return f"Starting ranks: {len(states) - starting} of {len(states)} warm…"


def waiting_words(state: EngineState) -> str:
    """What an empty stage says while the engine is in ``state``."""
    if state is EngineState.STARTING:
        return "Starting the engine (importing torch once for all ranks)…"
    if state is EngineState.CRASHED:
        return "The engine stopped: Restart engine (under Processes) to run again."
    return PRESS_RUN


class FontBook:
    """QFonts and text widths, cached: a streaming stage measures the same strings each frame."""

    def __init__(self, base: QFont) -> None:
        self.base = base
        self._fonts: dict[tuple[int, bool, bool], QFont] = {}
        self._metrics: dict[tuple[int, bool, bool], QFontMetricsF] = {}
        self._widths: dict[tuple[str, int, bool, bool], float] = {}
        self._statics: dict[tuple[str, int, bool, bool], QStaticText] = {}

    def qfont(self, font: Font) -> QFont:
        key = (max(1, round(font.px)), font.bold, font.mono)
        if key not in self._fonts:
            f = QFont(self.base)
            if font.mono:
                f.setFamilies(MONO)
            f.setPixelSize(key[0])
            f.setBold(font.bold)
            self._fonts[key] = f
            self._metrics[key] = QFontMetricsF(f)
        return self._fonts[key]

    def static(self, text: str, font: Font) -> QStaticText:
        """The text laid out once for its font: a streaming stage paints mostly the texts of
        the frame before (heads, names, hosts), and a laid-out text paints about three times
        faster than ``drawText`` lays it out again (76 texts a watched frame: ~12 ms → ~4)."""
        key = (text, max(1, round(font.px)), font.bold, font.mono)
        got = self._statics.get(key)
        if got is None:
            got = QStaticText(text)
            got.setTextFormat(Qt.TextFormat.PlainText)
            got.prepare(QTransform(), self.qfont(font))
            if len(self._statics) > 5_000:
                self._statics.clear()
            self._statics[key] = got
        return got

    def measure(self, text: str, font: Font) -> float:
        key = (text, max(1, round(font.px)), font.bold, font.mono)
        width = self._widths.get(key)
        if width is None:
            self.qfont(font)
            width = self._metrics[key[1:]].horizontalAdvance(text)
            if len(self._widths) > 20_000:
                self._widths.clear()
            self._widths[key] = width
        return width


class StageWidget(QWidget):
    # a link of the frame was clicked, or focused with Tab and activated with Enter
    link_activated = Signal(object)  # Link
    # a streaming run's frame, built at its refresh, is painted now: what shows the same step
    # (the toolbar's position) follows the stage, not the run
    streamed_shown = Signal()

    def __init__(self, theme: Theme, lesson: Lesson, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.theme = theme
        self.lesson = lesson
        self.record: RunRecord | None = None
        self.cursor = Cursor()
        self.progress = 1.0
        self.message = PRESS_RUN
        self.page = 0  # which of a step's pages (tensors taking turns) the stage shows
        self.fonts = FontBook(self.font())
        self.painted_px: list[int] = []  # pixel size of every text of the last paint
        self._frame_key: tuple | None = None
        self._frame: StageFrame | None = None
        self._seen = 0  # the record's events when the stage was last told of them
        self._paint_later = QTimer(self, singleShot=True, interval=PAINT_AFTER_MS)
        self._paint_later.timeout.connect(self._paint_streamed)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumSize(420, 300)
        self.setAccessibleName("DDP stage")
        self.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # clicking the stage leaves a field
        self.setMouseTracking(True)  # the pointer turns to a hand over a link
        self.focused_link = -1  # the frame's link Tab moved to (-1: none)

    # --- inputs ------------------------------------------------------------------------------
    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self.update()

    def set_lesson(self, lesson: Lesson) -> None:
        self.lesson = lesson
        self.update()

    def set_record(self, record: RunRecord | None) -> None:
        if record is not self.record:
            self.page = 0  # a new run starts at its first tensors
        self.record = record
        self.refresh()

    def turn_page(self) -> None:
        """T: the next of the tensors that take turns (a scene with one page ignores it)."""
        self.page += 1
        self.update()

    def set_position(self, cursor: Cursor, progress: float, streaming: bool = False) -> None:
        self.cursor, self.progress = cursor, progress
        self.refresh(streaming)

    def refresh(self, streaming: bool = False) -> None:
        """Show the record's events so far. The stage reads a streaming record only when told
        (a refresh's turn, a move): a repaint in between (a relayout, a tooltip) shows the frame
        it has. Once it read every event at every paint, and a watched run's stage was built
        twice a turn (the move, then the paint after more events came): ~4 ms each time.
        ``streaming`` (the view follows a run as it comes): the frame is built now and painted
        ``PAINT_AFTER_MS`` later; a learner's own move is painted at once."""
        self._seen = len(self.record.events) if self.record is not None else 0
        if streaming:
            self.frame()
            if not self._paint_later.isActive():
                self._paint_later.start()
        else:
            self._paint_later.stop()
            self.update()

    def _paint_streamed(self) -> None:
        self.update()
        self.streamed_shown.emit()

    def set_message(self, text: str) -> None:
        self.message = text
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(720, 480)

    # --- the frame ---------------------------------------------------------------------------
    def context(self, message: str | None = None) -> SceneContext:
        return SceneContext(
            width=self.width(),
            height=self.height(),
            theme=self.theme,
            phase_text=self.lesson.phase_text,
            measure=self.fonts.measure,
            message=self.message if message is None else message,
            page=self.page,
        )

    def frame(self) -> StageFrame:
        """What the stage shows now (tests and exports read it). Built again only when
        something it depends on changed: a streaming run repaints far more often."""
        rec = self.record
        key = (
            id(rec),
            self._seen,
            rec.status if rec is not None else "",
            self.cursor,
            self.progress,
            self.width(),
            self.height(),
            self.theme,
            self.lesson.id,
            self.message,
            self.page,
        )
        if key != self._frame_key:
            try:
                self._frame = stage_frame(
                    rec, self.cursor, self.progress, self.context(), self.lesson.scene
                )
            except Exception as exc:  # a scene's bug must not take the window (or a paint) down
                traceback.print_exc()
                message = f"The stage could not draw this step ({type(exc).__name__}: {exc})."
                self._frame = stage_frame(None, self.cursor, 0.0, self.context(message))
            self._frame_key = key
            self._links_changed(self._frame.links)
        return self._frame

    # --- links: a click, or Tab to one and Enter ---------------------------------------------
    def _links_changed(self, links: list[Link]) -> None:
        """A stage with links is on the Tab chain (a keyboard reaches them); one without is
        reached by a click only, as before."""
        strong = Qt.FocusPolicy.StrongFocus if links else Qt.FocusPolicy.ClickFocus
        if self.focusPolicy() != strong:
            self.setFocusPolicy(strong)
        if self.focused_link >= len(links):
            self.focused_link = len(links) - 1

    def link(self) -> Link | None:
        """The link Tab moved to, while the stage has the keyboard."""
        links = self.frame().links
        return links[self.focused_link] if 0 <= self.focused_link < len(links) else None

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        at = self.frame().link_at(event.position().x(), event.position().y())
        if at is None:
            self.unsetCursor()
            self.setToolTip("")
        else:
            self.setCursor(Qt.CursorShape.PointingHandCursor)
            self.setToolTip(at.label)
        super().mouseMoveEvent(event)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        at = self.frame().link_at(event.position().x(), event.position().y())
        if at is not None and event.button() == Qt.MouseButton.LeftButton:
            self.focused_link = self.frame().links.index(at)
            self.update()
            self.link_activated.emit(at)
            event.accept()
            return
        self.focused_link = -1  # a click elsewhere: Enter goes nowhere
        super().mousePressEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        at = self.link()
        if at is not None and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.link_activated.emit(at)
            event.accept()
            return
        super().keyPressEvent(event)

    def focusNextPrevChild(self, forward: bool) -> bool:
        """Tab and Shift+Tab go through the stage's links before leaving it."""
        n = len(self.frame().links)
        nxt = self.focused_link + (1 if forward else -1)
        if self.hasFocus() and 0 <= nxt < n:
            self._focus_link(nxt)
            return True
        return super().focusNextPrevChild(forward)

    def focusInEvent(self, event: QFocusEvent) -> None:
        links = self.frame().links
        if event.reason() == Qt.FocusReason.TabFocusReason and links:
            self._focus_link(0)
        elif event.reason() == Qt.FocusReason.BacktabFocusReason and links:
            self._focus_link(len(links) - 1)
        super().focusInEvent(event)

    def focusOutEvent(self, event: QFocusEvent) -> None:
        self.update()  # the focus ring goes
        super().focusOutEvent(event)

    def _focus_link(self, index: int) -> None:
        self.focused_link = index
        at = self.link()
        self.setAccessibleDescription(at.label if at is not None else "")
        self.update()

    # --- painting: draw the frame, decide nothing ---------------------------------------------
    def paintEvent(self, _event: object) -> None:
        frame = self.frame()
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.fillRect(self.rect(), qcolor(frame.background))
        painted: list[int] = [0] * len(frame.texts)  # in the frame's order, for tests
        for layer in sorted({s.layer for s in frame.shapes} | {t.layer for t in frame.texts}):
            for shape in frame.shapes:
                if shape.layer == layer:
                    self._draw_shape(p, shape)
            for i, text in enumerate(frame.texts):
                if text.layer == layer:
                    painted[i] = self._draw_text(p, text)
        self.painted_px = painted
        at = self.link() if self.hasFocus() else None
        if at is not None:  # where Enter goes: a focus ring around the link
            pen = QPen(qcolor(self.theme.accent), 1.5, Qt.PenStyle.DashLine)
            p.setPen(pen)
            p.setBrush(Qt.BrushStyle.NoBrush)
            b = at.box
            p.drawRoundedRect(QRectF(b.x - 3, b.y - 2, b.w + 6, b.h + 4), 3, 3)
        p.end()

    def _draw_text(self, p: QPainter, text: Text) -> int:
        font = self.fonts.qfont(text.font)
        p.setFont(font)
        p.setPen(qcolor(text.color, text.alpha))
        b = text.box
        # boxes are exactly as wide as the measured text: no eliding, no wrapping here; the
        # line is centred in its box's height, as drawText's AlignVCenter did
        laid = self.fonts.static(text.text, text.font)
        p.drawStaticText(QPointF(b.x, b.y + (b.h - laid.size().height()) / 2), laid)
        return font.pixelSize()

    def _draw_shape(self, p: QPainter, s: Shape) -> None:
        pen = QPen(qcolor(s.stroke, s.stroke_alpha), s.width) if s.stroke else Qt.PenStyle.NoPen
        p.setPen(pen)
        p.setBrush(qcolor(s.fill, s.fill_alpha) if s.fill else Qt.BrushStyle.NoBrush)
        b = QRectF(s.box.x, s.box.y, s.box.w, s.box.h)
        if s.kind == "rect":
            p.drawRect(b)
        elif s.kind == "rrect":
            p.drawRoundedRect(b, s.radius, s.radius)
        elif s.kind == "ellipse":
            p.drawEllipse(b)
        elif s.kind == "line":
            (x0, y0), (x1, y1) = s.points
            p.drawLine(QPointF(x0, y0), QPointF(x1, y1))
        elif s.kind == "marker":
            self._draw_marker(p, b, s.key.removeprefix("marker:"))

    def _draw_marker(self, p: QPainter, box: QRectF, shape: str) -> None:
        """A rank's marker, the very path the plots draw for it (pyqtgraph's symbol, ▼ for
        "t", × for "x"), so a rank has one shape everywhere and never relies on colour alone."""
        # imported here: pyqtgraph loads after the first paint, and markers only come with a run
        from pyqtgraph.graphicsItems.ScatterPlotItem import Symbols

        unit = Symbols.get(shape, Symbols["o"])  # a 1×1 path around (0, 0), y down
        c = box.center()
        p.drawPath(QTransform().translate(c.x(), c.y()).scale(box.width(), box.height()).map(unit))
