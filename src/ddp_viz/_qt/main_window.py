"""The main window: lesson and quiz, the stage and code, plots, settings and processes."""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, QObject, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import (
    QAction,
    QActionGroup,
    QCloseEvent,
    QKeyEvent,
    QKeySequence,
    QResizeEvent,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractSpinBox,
    QApplication,
    QCheckBox,
    QComboBox,
    QGroupBox,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QSlider,
    QSplitter,
    QTabWidget,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from ddp_viz._qt.code_view import CodeView
from ddp_viz._qt.controller import RunController
from ddp_viz._qt.file_actions import FileActions
from ddp_viz._qt.lesson_view import LessonView
from ddp_viz._qt.player import Player
from ddp_viz._qt.plots_panel import PlotsPanel
from ddp_viz._qt.presentation import Presentation
from ddp_viz._qt.process_view import ProcessView
from ddp_viz._qt.quiz_view import QuizView
from ddp_viz._qt.scenario_form import ScenarioForm
from ddp_viz._qt.stage import StageWidget
from ddp_viz._qt.startup import AfterFirstPaint
from ddp_viz._qt.theme import apply_theme
from ddp_viz.model.lesson import load_lesson
from ddp_viz.model.quiz import load_quiz
from ddp_viz.model.scenario import Scenario, default_scenario
from ddp_viz.model.theme import Theme
from ddp_viz.model.timeline import PHASES, Cursor, RunRecord

PLOT_INTERVAL_S = 0.025  # one of the three plots redraws per tick while a run streams
FOLLOW_LATEST_ABOVE = 30  # runs longer than this stream in fast mode by default
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0)

SHORTCUTS = [
    ("Space", "play / pause"),
    ("Right, PageDown", "next phase"),
    ("Left, PageUp", "previous phase"),
    ("Home", "first phase of the run"),
    ("R", "run"),
    ("Escape", "cancel the run / leave full screen"),
    ("F11", "full screen"),
    ("Ctrl+P", "projector mode on / off"),
    ("Ctrl+L", "show / hide the lesson and settings column"),
    ("Ctrl+= / Ctrl+-", "zoom in / out (Ctrl+0: actual size)"),
    ("Ctrl+O / Ctrl+S", "load / save a scenario"),
    ("F1", "this sheet"),
]


TRANSPORT_KEYS = {
    Qt.Key.Key_Space,
    Qt.Key.Key_Left,
    Qt.Key.Key_Right,
    Qt.Key.Key_PageUp,
    Qt.Key.Key_PageDown,
    Qt.Key.Key_Home,
    Qt.Key.Key_R,
    Qt.Key.Key_Escape,
}
TYPING_WIDGETS = (QLineEdit, QAbstractSpinBox, QAbstractItemView, QComboBox)


class KeyRouter(QObject):
    """Let the stage's keys win over whatever read-only widget has focus.

    Presenter clickers send PageUp/PageDown, which a focused lesson text would otherwise
    swallow to scroll. Widgets where the learner types (fields, the data table) keep their keys.
    """

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.window = window

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.ShortcutOverride or not isinstance(event, QKeyEvent):
            return False
        if event.key() not in TRANSPORT_KEYS or not self.window.isActiveWindow():
            return False
        # swallowing the override lets the window's shortcut fire
        return not isinstance(QApplication.focusWidget(), TYPING_WIDGETS)


def _group(title: str, widget: QWidget) -> QGroupBox:
    box = QGroupBox(title)
    lay = QVBoxLayout(box)
    lay.setContentsMargins(4, 4, 4, 4)
    lay.addWidget(widget)
    return box


class MainWindow(QMainWindow):
    run_shown = Signal(object)  # RunRecord: the run ended and the stage shows its last step

    def __init__(
        self,
        scenario: Scenario | None = None,
        theme: Theme | None = None,
        phase_ms: int = 1100,
        refresh_ms: int = 16,
        settings: QSettings | None = None,
    ) -> None:
        super().__init__()
        self.setWindowTitle("ddp-viz — DistributedDataParallel, for real")
        self.presentation = Presentation(settings, self)
        self.theme = theme or self.presentation.theme
        self.lesson = load_lesson()
        self.controller = RunController(self, refresh_ms=refresh_ms)
        self.player = Player(self, phase_ms=phase_ms)
        self._run_pending = False
        self._plots_updated = 0.0
        self._shown_run: int | None = None
        self._ended_run: int | None = None

        # --- views ---------------------------------------------------------------------------
        self.lesson_view = LessonView(self.lesson, self.theme)
        self.quiz_view = QuizView(load_quiz(self.lesson.quiz or "ddp-pattern.toml"), self.theme)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.lesson_view, "Lesson")
        self.tabs.addTab(self.quiz_view, "Quiz")
        self.form = ScenarioForm(scenario or default_scenario(), self.theme)
        self.stage = StageWidget(self.theme, self.lesson)
        self.code_view = CodeView(self.lesson, self.theme)
        self.process_view = ProcessView(self.theme)
        self.plots_panel = PlotsPanel(self.theme)

        left = QSplitter(Qt.Orientation.Vertical)
        left.addWidget(self.tabs)
        left.addWidget(_group("Try it yourself", self.form))
        left.setStretchFactor(0, 3)
        left.setStretchFactor(1, 2)
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(_group("Training loop (the line that is running)", self.code_view))
        self.process_box = _group("Processes", self.process_view)
        bottom.addWidget(self.process_box)
        center = QSplitter(Qt.Orientation.Vertical)
        center.addWidget(self.stage)
        center.addWidget(bottom)
        center.setStretchFactor(0, 3)
        center.setStretchFactor(1, 2)
        main = QSplitter(Qt.Orientation.Horizontal)
        main.addWidget(left)
        main.addWidget(center)
        main.addWidget(self.plots_panel)
        main.setStretchFactor(0, 27)
        main.setStretchFactor(1, 48)
        main.setStretchFactor(2, 25)
        main.setChildrenCollapsible(False)
        self.splitters = {"main": main, "left": left, "center": center, "bottom": bottom}
        self.setCentralWidget(main)
        self.file_actions = FileActions(self)
        self._build_toolbar()
        self._build_menus()
        self.status = QLabel("")
        self.statusBar().addWidget(self.status, 1)

        # --- wiring --------------------------------------------------------------------------
        c = self.controller
        c.run_started.connect(self._on_run_started)
        c.record_updated.connect(self._on_record_updated)
        c.run_ended.connect(self._on_run_ended)
        c.workers_changed.connect(self.process_view.set_workers)
        c.engine_state_changed.connect(self._on_engine_state_changed)
        c.log_text.connect(self.process_view.append_log)
        c.busy_changed.connect(self._on_busy_changed)
        c.command_rejected.connect(self._on_command_rejected)
        self.player.position_changed.connect(self._on_player_position_changed)
        self.player.phase_entered.connect(self.code_view.highlight_phase)
        self.player.playing_changed.connect(self._on_player_playing_changed)
        self.form.validity_changed.connect(self._update_actions)
        self.form.scenario_changed.connect(self._on_form_scenario_changed)
        self.process_view.restart.clicked.connect(self.controller.restart_engine)
        self.presentation.changed.connect(self._on_presentation_changed)
        self._warm_timer = QTimer(self, singleShot=True, interval=400)
        self._warm_timer.timeout.connect(self._on_warm_timer_timeout)
        self._update_actions()
        self.after_paint = AfterFirstPaint(self)
        self.after_paint.add(self.lesson_view.render)
        self.after_paint.add(self.code_view.render)
        self.after_paint.add(self.plots_panel.ensure)
        self.key_router = KeyRouter(self)
        app = QApplication.instance()
        if app is not None:
            app.installEventFilter(self.key_router)
        self.resize(1280, 800)
        if self.presentation.projector and theme is None:
            self._on_presentation_changed(self.theme, True)

    # --- toolbar and keys --------------------------------------------------------------------
    def _action(self, text: str, keys: list[str], slot, tip: str) -> QAction:
        act = QAction(text, self)
        act.setShortcuts([QKeySequence(k) for k in keys])
        act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        act.setToolTip(f"{tip} ({', '.join(keys)})" if keys else tip)
        act.triggered.connect(slot)
        self.addAction(act)
        return act

    def _build_toolbar(self) -> None:
        tb = QToolBar("Run")
        self.toolbar = tb
        tb.setMovable(False)
        tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.addToolBar(tb)
        self.run_action = self._action(
            "▶ Run", ["R", "Ctrl+R"], self.start_run, "Start real DDP ranks with these settings"
        )
        self.cancel_action = self._action(
            "■ Cancel", ["Escape"], self._on_escape, "Stop every rank of this run"
        )
        self.first_action = self._action("|◀", ["Home"], self._on_first, "First phase")
        self.back_action = self._action(
            "◀", ["Left", "PgUp"], self.player.step_back, "Previous phase"
        )
        self.play_action = self._action("Play", ["Space"], self.player.toggle, "Play / pause")
        self.fwd_action = self._action(
            "▶|", ["Right", "PgDown"], self.player.step_forward, "Next phase"
        )
        self.fullscreen_action = self._action(
            "Full screen", ["F11"], self.toggle_fullscreen, "Full screen"
        )
        self.help_action = self._action("Keys", ["F1"], self.show_shortcuts, "Keyboard shortcuts")
        for a in (self.run_action, self.cancel_action):
            tb.addAction(a)
        tb.addSeparator()
        for a in (self.first_action, self.back_action, self.play_action, self.fwd_action):
            tb.addAction(a)
        tb.addSeparator()
        self.speed_label = QLabel(" Speed ")
        self.speed_label_action = tb.addWidget(self.speed_label)
        self.speed = QComboBox()
        for s in SPEEDS:
            self.speed.addItem(f"{s:g}×", s)
        self.speed.setCurrentIndex(SPEEDS.index(1.0))
        self.speed.currentIndexChanged.connect(
            lambda i: self.player.set_speed(float(self.speed.itemData(i)))
        )
        tb.addWidget(self.speed)
        self.follow = QCheckBox("Follow latest step")
        self.follow.setToolTip("Fast mode: show the newest step as a long run streams in")
        self.follow.toggled.connect(self._on_follow_toggled)
        tb.addWidget(self.follow)
        tb.addSeparator()
        self.step_slider = QSlider(Qt.Orientation.Horizontal)
        self.step_slider.setMinimumWidth(120)
        self.step_slider.setRange(0, 0)
        self.step_slider.valueChanged.connect(self._on_step_slider_changed)
        tb.addWidget(self.step_slider)
        self.position_label = QLabel("")
        tb.addWidget(self.position_label)
        tb.addSeparator()
        tb.addAction(self.fullscreen_action)
        tb.addAction(self.help_action)

    def _build_menus(self) -> None:
        fa, pr = self.file_actions, self.presentation
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        for text, keys, name in (
            ("Load scenario…", ["Ctrl+O"], "load_scenario"),
            ("Save scenario…", ["Ctrl+S"], "save_scenario"),
        ):
            file_menu.addAction(
                self._action(text, keys, lambda _=False, n=name: fa.dialog(n), text.rstrip("…"))
            )
        file_menu.addSeparator()
        exports = file_menu.addMenu("Export")
        for text, name in (
            ("Window as PNG…", "export_window_png"),
            ("Stage as PNG…", "export_stage_png"),
            ("Run as animated GIF…", "export_gif"),
            ("Events as JSON lines…", "export_events"),
            ("Chrome trace (Perfetto)…", "export_trace"),
        ):
            exports.addAction(
                self._action(text, [], lambda _=False, n=name: fa.dialog(n), text.rstrip("…"))
            )
        file_menu.addSeparator()
        file_menu.addAction(self._action("Quit", ["Ctrl+Q"], self.close, "Quit"))

        view = bar.addMenu("&View")
        self.projector_action = self._action(
            "Projector mode", ["Ctrl+P"], lambda: None, "Large type, high contrast, panels folded"
        )
        self.projector_action.setCheckable(True)
        self.projector_action.setChecked(pr.projector)
        self.projector_action.toggled.connect(pr.set_projector)
        view.addAction(self.projector_action)
        themes = QActionGroup(self)
        self.theme_actions: dict[str, QAction] = {}
        for name in ("light", "dark"):
            act = self._action(
                f"{name.title()} theme",
                [],
                lambda _=False, n=name: pr.set_normal_theme(n),
                f"{name} theme",
            )
            act.setCheckable(True)
            act.setChecked(pr.normal == name)
            themes.addAction(act)
            view.addAction(act)
            self.theme_actions[name] = act
        self.side_action = self._action(
            "Lesson and settings panel",
            ["Ctrl+L"],
            lambda: None,
            "Show or hide the left column (more room for the stage)",
        )
        self.side_action.setCheckable(True)
        self.side_action.setChecked(True)
        self.side_action.toggled.connect(self._on_side_panel_toggled)
        view.addAction(self.side_action)
        view.addSeparator()
        self.zoom_in_action = self._action("Zoom in", ["Ctrl+=", "Ctrl++"], pr.zoom_in, "Zoom in")
        self.zoom_out_action = self._action("Zoom out", ["Ctrl+-"], pr.zoom_out, "Zoom out")
        view.addAction(self.zoom_in_action)
        view.addAction(self.zoom_out_action)
        view.addAction(self._action("Actual size", ["Ctrl+0"], pr.zoom_reset, "Zoom 100%"))
        view.addSeparator()
        view.addAction(self.fullscreen_action)
        help_menu = bar.addMenu("&Help")
        help_menu.addAction(self.help_action)

    def _on_side_panel_toggled(self, shown: bool) -> None:
        self.splitters["left"].setVisible(shown)
        self._apply_split_proportions()

    def _on_presentation_changed(self, theme: Theme, projector: bool) -> None:
        self.projector_action.blockSignals(True)
        self.projector_action.setChecked(projector)
        self.projector_action.blockSignals(False)
        self.set_theme(theme)
        # secondary panels fold away on a projector: the stage, code and plots get the room
        self.side_action.blockSignals(True)
        self.side_action.setChecked(not projector)
        self.side_action.blockSignals(False)
        self.splitters["left"].setVisible(not projector)
        self.process_box.setVisible(not projector)
        self.speed_label_action.setVisible(not projector)
        self.plots_panel.set_compact(projector)
        self.follow.setText("Follow" if projector else "Follow latest step")
        self._apply_split_proportions()

    def toolbar_button(self, action: QAction) -> QWidget:
        return self.toolbar.widgetForAction(action)

    def show_shortcuts(self) -> None:
        """The key sheet (F1); non-blocking, so a presenter's next key still works."""
        rows = "".join(f"<tr><td><b>{k}</b></td><td>{v}</td></tr>" for k, v in SHORTCUTS)
        box = QMessageBox(
            QMessageBox.Icon.NoIcon, "Keyboard", "", QMessageBox.StandardButton.Close, self
        )
        box.setText(f"<table cellpadding='6'>{rows}</table>")
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.setObjectName("shortcut_sheet")
        box.open()
        self.shortcut_sheet = box

    def toggle_fullscreen(self) -> None:
        self.showNormal() if self.isFullScreen() else self.showFullScreen()

    def _on_escape(self) -> None:
        if self.controller.busy:
            self.controller.cancel()
        elif self.isFullScreen():
            self.showNormal()

    def _on_first(self) -> None:
        self.player.pause()
        self.player.cursor, self.player.progress = Cursor(), 1.0
        self.player._emit(entered=True)

    # --- running -----------------------------------------------------------------------------
    def start_run(self) -> None:
        scenario = self.form.scenario()
        if scenario is None or self.controller.busy:
            return
        if not self.controller.engine_ready:
            self._run_pending = True  # starts as soon as the engine says it is ready
            self.status.setText("Waiting for the engine to start…")
            return
        self._run_pending = False
        self.controller.run(scenario)
        self.process_view.set_pending(scenario.world_size)
        self.stage.set_message(f"Starting {scenario.world_size} rank(s)…")
        self.status.setText(f"Starting {scenario.world_size} rank(s) over gloo…")

    def _on_engine_state_changed(self, state: str) -> None:
        self.process_view.set_engine_state(state)
        if state == "running" and self._run_pending:
            self.start_run()
        if state == "running":
            self._on_warm_timer_timeout()
        self._update_actions()

    def _on_form_scenario_changed(self, scenario: Scenario | None) -> None:
        if scenario is not None:
            self._warm_timer.start()  # keep the pool the size the next run needs

    def _on_warm_timer_timeout(self) -> None:
        s = self.form.scenario()
        if s is not None:
            self.controller.warm(s.world_size)

    def _on_busy_changed(self, busy: bool) -> None:
        self.form.set_enabled_for_run(not busy)
        self._update_actions()

    def _update_actions(self, *_: object) -> None:
        busy = self.controller.busy
        self.run_action.setEnabled(self.form.valid and not busy)
        self.cancel_action.setEnabled(True)  # Escape also leaves full screen
        self.run_action.setToolTip(
            "Fix the marked fields first" if not self.form.valid else "Start real DDP ranks (R)"
        )

    def _on_command_rejected(self, field: str, message: str) -> None:
        self.status.setText(f"The engine refused the run: {message}")

    def _on_run_started(self, record: RunRecord) -> None:
        long_run = record.steps_planned > FOLLOW_LATEST_ABOVE
        self.follow.blockSignals(True)
        self.follow.setChecked(long_run)
        self.follow.blockSignals(False)
        self.player.follow_latest = long_run
        self.stage.set_record(record)
        self.plots.set_record(record)
        self.process_view.set_record(record)
        self.player.set_record(record)
        self.step_slider.setRange(0, max(0, record.steps_planned - 1))
        if not long_run:
            self.player.play()
        self.status.setText(f"Run {record.run}: {record.world_size} rank(s) training…")

    def _on_record_updated(self, record: RunRecord) -> None:
        self.player.on_record_updated()
        self.stage.update()
        now = time.monotonic()
        if record.done or now - self._plots_updated >= PLOT_INTERVAL_S:
            self._plots_updated = now
            self.plots.update_record(record, self.player.cursor)
        self.process_view.set_record(record)

    def _on_run_ended(self, record: RunRecord) -> None:
        self._on_record_updated(record)
        self._ended_run = record.run
        self.quiz_view.grade_against_run(record)
        summary = record.check_summary()
        if record.status == "finished":
            agree = "✓ ranks agree" if summary["ranks_agree"] else "✗ ranks differ"
            full = (
                "✓ average = full batch"
                if summary["average_is_full_batch"]
                else "✗ average ≠ full batch (unequal shards)"
            )
            self.status.setText(
                f"Run {record.run} finished: {len(record.complete_steps())} step(s) in "
                f"{record.elapsed_s:.3f} s on {record.world_size} rank(s). {agree}, {full}."
            )
        else:
            self.status.setText(f"Run {record.run} {record.status}: {record.reason}")
            self.stage.update()
        self._maybe_emit_run_shown()

    def _maybe_emit_run_shown(self) -> None:
        rec = self.controller.record
        if not rec.done or rec.run is None or rec.run == self._shown_run:
            return
        if rec.run != self._ended_run:
            return  # run_ended has not been handled yet: status and views still say "running"
        n = self.player.available_steps()
        at_end = n == 0 or (self.player.cursor.is_last(n) and self.player.progress >= 1.0)
        if at_end:
            self._shown_run = rec.run  # once per run
            self.run_shown.emit(rec)

    # --- player ------------------------------------------------------------------------------
    def _on_player_position_changed(self, cursor: Cursor, progress: float) -> None:
        self.stage.set_position(cursor, progress)
        rec = self.player.record
        total = rec.steps_planned if rec else 0
        self.position_label.setText(
            f" step {cursor.step + 1}/{max(total, 1)} · {PHASES[cursor.phase]} "
        )
        self.step_slider.blockSignals(True)
        self.step_slider.setValue(cursor.step)
        self.step_slider.blockSignals(False)
        if rec is not None and progress >= 1.0 and self.plots_panel.built:
            self.plots.show_step(rec, cursor)
        if rec is not None and rec.done and progress >= 1.0:
            self._maybe_emit_run_shown()

    def _on_player_playing_changed(self, playing: bool) -> None:
        self.play_action.setText("Pause" if playing else "Play")

    def _on_follow_toggled(self, on: bool) -> None:
        self.player.follow_latest = on
        if on:
            self.player.pause()
            self.player.on_record_updated()

    def _on_step_slider_changed(self, value: int) -> None:
        self.player.pause()
        self.follow.setChecked(False)
        self.player.seek_step(value)

    # --- theme -------------------------------------------------------------------------------
    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        app = QApplication.instance()
        if isinstance(app, QApplication):
            apply_theme(app, theme)
        self.plots_panel.theme = theme
        for view in (
            self.stage,
            self.code_view,
            self.lesson_view,
            self.form,
            self.quiz_view,
            self.process_view,
        ):
            view.set_theme(theme)
        if self.plots_panel.built:
            self.plots.set_theme(theme)

    # --- lifecycle ---------------------------------------------------------------------------
    @property
    def plots(self):  # -> Plots, built on first use
        return self.plots_panel.ensure()

    def start(self) -> None:
        """Start the engine in the background: the pool warms while the learner reads."""
        self.controller.start_engine()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._apply_split_proportions()

    def _apply_split_proportions(self) -> None:
        """Give each column its share of the width (stretch factors only share the surplus)."""
        w = max(1, self.splitters["main"].width())
        h = max(1, self.splitters["center"].height())
        if self.presentation.projector or not self.splitters["left"].isVisibleTo(self):
            self.splitters["main"].setSizes([0, round(w * 0.7), round(w * 0.3)])
            self.splitters["center"].setSizes(
                [round(h * 0.72), round(h * 0.28)]
                if self.presentation.projector
                else [round(h * 0.68), round(h * 0.32)]
            )
            return
        self.splitters["main"].setSizes([round(w * 0.28), round(w * 0.46), round(w * 0.26)])
        cw = max(1, self.splitters["bottom"].width())
        self.splitters["bottom"].setSizes([round(cw * 0.6), round(cw * 0.4)])
        self.splitters["center"].setSizes([round(h * 0.68), round(h * 0.32)])
        self.splitters["left"].setSizes([round(h * 0.64), round(h * 0.36)])

    def closeEvent(self, event: QCloseEvent) -> None:
        self.player.pause()
        self._warm_timer.stop()
        self.controller.shutdown()
        super().closeEvent(event)
