"""The main window: lays out the views and forwards between them and the session controller.

The run's life (engine, run, cancel, follow mode, status, the prediction) is decided by
:class:`~ddp_viz.model.session.SessionController`; this window is its
:class:`~ddp_viz.model.session.SessionView` and draws what it is told.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSettings, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QResizeEvent
from PySide6.QtWidgets import (
    QApplication,
    QMainWindow,
    QTabWidget,
    QWidget,
)

from ddp_viz._qt.blank import BlankScreen
from ddp_viz._qt.code_view import CodeView
from ddp_viz._qt.course_view import CourseView
from ddp_viz._qt.engine_process import EngineProcess, connect_session
from ddp_viz._qt.file_actions import FileActions
from ddp_viz._qt.keys import KeyRouter, show_shortcut_sheet
from ddp_viz._qt.lesson_switch import follow_link, show_lesson
from ddp_viz._qt.lesson_view import LessonView
from ddp_viz._qt.player import Player
from ddp_viz._qt.plots_panel import PlotsPanel
from ddp_viz._qt.presentation import Presentation
from ddp_viz._qt.process_view import ProcessView
from ddp_viz._qt.quiz_view import QuizView, learner_of
from ddp_viz._qt.refresh_turns import RefreshTurns, StageRate
from ddp_viz._qt.scenario_form import ScenarioForm
from ddp_viz._qt.stage import StageWidget, starting_ranks_words, waiting_words
from ddp_viz._qt.startup import AfterFirstPaint
from ddp_viz._qt.status_line import StatusLine
from ddp_viz._qt.theme import apply_theme
from ddp_viz._qt.window_actions import build_menus, build_toolbar
from ddp_viz._qt.window_layout import SideView, apply_presentation, apply_split_proportions, lay_out
from ddp_viz._qt.window_player import PlayerMoves
from ddp_viz.model import protocol
from ddp_viz.model.course import first_lesson, load_course
from ddp_viz.model.exports import traceable
from ddp_viz.model.lesson import Lesson
from ddp_viz.model.quiz import Feedback, Question
from ddp_viz.model.scenario import Scenario
from ddp_viz.model.session import EngineState, SessionController
from ddp_viz.model.theme import Theme
from ddp_viz.model.timeline import RunRecord, RunStatus

# A streaming run reaches the views 20 times a second. At 60 the window took 0.77 of a core
# during a fast 2-rank run (stage frames, plot repaints), the ranks' cores; at 20, about 0.45
# (`ddp-viz bench --only window` prints it), while a fast run still moves on screen.
# A fast run's refreshes redraw the plots and the stage in turns (refresh_turns.py).
REFRESH_MS = 50


class MainWindow(PlayerMoves, QMainWindow):
    run_started = Signal(object)  # RunRecord
    run_ended = Signal(object)  # RunRecord: finished, failed or cancelled
    run_shown = Signal(object)  # RunRecord: the run ended and the stage shows its last step

    def __init__(
        self,
        scenario: Scenario | None = None,
        theme: Theme | None = None,
        phase_ms: int = 1100,
        refresh_ms: int = REFRESH_MS,
        settings: QSettings | None = None,
        lesson_id: str | None = None,
    ) -> None:
        super().__init__()
        self.setWindowTitle("ddp-viz — DistributedDataParallel, for real")
        self.settings = settings
        self.presentation = Presentation(settings, self)
        self.theme = theme or self.presentation.theme
        done = settings.value("course/done", []) if settings is not None else []
        self.course = load_course(done=[done] if isinstance(done, str) else (done or []))
        remembered = settings.value("course/current", "") if settings is not None else ""
        self.lesson = self.course.get(first_lesson(self.course, lesson_id or remembered))
        self.engine = EngineProcess(self)
        self.session = SessionController(self.engine, self)
        connect_session(self.engine, self.session)
        self.session.set_questions(list(self.lesson.questions))
        self._refresh = QTimer(self, interval=refresh_ms)
        self._refresh.timeout.connect(self.session.tick)
        self.player = Player(self, phase_ms=phase_ms)
        self.turns = RefreshTurns(self._redraw, 2 * refresh_ms, self)
        self.stage_rate = StageRate(self._redraw, self)

        # --- views ---------------------------------------------------------------------------
        self.course_view = CourseView(self.course, self.lesson.id)
        self.lesson_view = LessonView(self.lesson, self.theme)
        self._quizzes: dict[str, QuizView] = {}  # one per lesson: answers survive a visit
        self.tried: dict[str, Scenario] = {}  # Try it yourself per lesson: edits survive too
        self.quiz_view = self.quiz_for(self.lesson)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.course_view, "Course")
        self.tabs.addTab(self.lesson_view, "Lesson")
        self.tabs.addTab(self.quiz_view, "Quiz")
        self.tabs.setCurrentWidget(self.lesson_view)
        self.form = ScenarioForm(scenario or self.lesson.scenario(), self.theme)
        self.stage = StageWidget(self.theme, self.lesson)
        self.code_view = CodeView(self.lesson, self.theme)
        self.process_view = ProcessView(self.theme)
        self.plots_panel = PlotsPanel(self.theme)
        # the views a kind's page adds to the left column (a watched run's tables): the
        # layout asks each how wide it wants the column
        self.side_views: list[SideView] = []
        lay_out(self)
        self.plots_panel.setVisible(self.lesson.plots)  # after it has its place in the layout
        self.file_actions = FileActions(self)
        self.blank = BlankScreen(self)  # a clicker's blank key (B): the window goes black
        self.toolbar = build_toolbar(self)
        build_menus(self)
        self.status = StatusLine()
        self.statusBar().addWidget(self.status, 1)

        # --- wiring --------------------------------------------------------------------------
        self.player.position_changed.connect(self._on_player_position_changed)
        self.stage.streamed_shown.connect(self._on_stage_streamed_shown)
        self.player.phase_entered.connect(self.code_view.highlight_phase)
        self.player.playing_changed.connect(self._on_player_playing_changed)
        self.form.validity_changed.connect(self._update_actions)
        self.form.scenario_changed.connect(self._on_form_scenario_changed)
        self.form.submitted.connect(self.start_run)
        self.process_view.restart.clicked.connect(self.session.restart_engine)
        self.process_view.log_toggle.toggled.connect(lambda _: apply_split_proportions(self))
        self.presentation.changed.connect(self._on_presentation_changed)
        self.course_view.lesson_chosen.connect(self.set_lesson)
        self.stage.link_activated.connect(lambda link: follow_link(self, link))
        self._engine_on_demand = False  # start(engine=False): started by a lesson that runs
        self._warm_timer = QTimer(self, singleShot=True, interval=400)
        self._warm_timer.timeout.connect(self._on_warm_timer_timeout)
        self._update_actions()
        self.after_paint = AfterFirstPaint(self)
        self.after_paint.add(self.lesson_view.render)
        self.after_paint.add(self.code_view.render)
        self.after_paint.add(self.plots_panel.ensure)
        self.key_router = KeyRouter(self, self.stage, lambda: self.player.record is not None)
        self.form.submitted.connect(self.key_router.on_run_from_field)
        app = QApplication.instance()
        if app is not None:
            app.installEventFilter(self.key_router)
        self.resize(1280, 800)
        if self.presentation.projector and theme is None:
            self._on_presentation_changed(self.theme, True)

    # --- lessons -----------------------------------------------------------------------------
    def set_lesson(self, lesson_id: str) -> None:
        show_lesson(self, self.course.get(lesson_id))

    def quiz_for(self, lesson: Lesson) -> QuizView:
        view = self._quizzes.get(lesson.id)
        if view is None:
            view = QuizView(list(lesson.questions), self.theme, learner=learner_of(self.settings))
            view.prediction_locked.connect(self._on_prediction_locked)
            view.passed.connect(self._on_quiz_passed)
            self._quizzes[lesson.id] = view
        return view

    def next_lesson(self) -> None:
        nxt = self.course.next(self.lesson.id)
        if nxt is not None:
            self.set_lesson(nxt.id)

    def previous_lesson(self) -> None:
        prev = self.course.previous(self.lesson.id)
        if prev is not None:
            self.set_lesson(prev.id)

    def _on_quiz_passed(self) -> None:
        self.course.mark_done(self.lesson.id)
        if self.settings is not None:
            self.settings.setValue("course/done", sorted(self.course.done))
            self.settings.sync()
        self.course_view.refresh()

    def _on_prediction_locked(self, question: Question, value: float) -> None:
        self.quiz_view.show_note(question.id, self.session.lock_prediction(question, value))

    # --- SessionView: what the session controller tells the window ----------------------------
    def show_engine_state(self, state: EngineState) -> None:
        self.process_view.set_engine_state(state)
        self._say_what_starts(state, self.session.workers)
        if state is EngineState.READY:
            self._on_warm_timer_timeout()
        self._update_actions()

    def show_workers(self, workers: dict[int, protocol.WorkerState], pending: int) -> None:
        self.process_view.set_workers(workers)
        if pending:
            self.process_view.set_pending(pending)
            self.stage.set_message(f"Starting {pending} rank(s)…")
        else:
            self._say_what_starts(self.session.engine_state, workers)

    def _say_what_starts(
        self, state: EngineState, workers: dict[int, protocol.WorkerState]
    ) -> None:
        """An empty stage says whether Run can start yet (a watched page runs nothing): the
        engine starting, then its ranks starting (long under spawn), then Press Run."""
        if self.player.record is None and self.lesson.id in self.course.ids:
            starting = starting_ranks_words(workers) if state is EngineState.READY else None
            self.stage.set_message(starting or waiting_words(state))

    def show_busy(self, busy: bool) -> None:
        self.form.set_enabled_for_run(not busy)
        self._update_actions()
        self._refresh.start() if busy else self._refresh.stop()
        if not busy and hasattr(self, "key_router"):  # ended, or cancelled before it began
            self.key_router.escape_leaves_once = False  # Escape leaves full screen again

    def show_status(self, text: str) -> None:
        self.status.setText(text)

    def show_log(self, text: str) -> None:
        self.process_view.append_log(text)

    def show_run_started(self, record: RunRecord) -> None:
        self.code_view.set_scenario(record.scenario)
        self.stage.set_record(record)
        self.plots.set_record(record)
        self.process_view.set_record(record)
        self.player.set_record(record)
        self.step_slider.setRange(0, max(0, record.steps_planned - 1))
        self.run_started.emit(record)

    def show_follow_latest(self, on: bool) -> None:
        self.follow.blockSignals(True)
        self.follow.setChecked(on)
        self.follow.blockSignals(False)
        self.player.follow_latest = on
        if on:
            self.player.pause()
            self.player.on_record_updated()
        elif self.session.busy and not self.player.playing and self.player.cursor.step == 0:
            self.player.play()  # a short run animates every step from the first

    def show_record(self, record: RunRecord) -> None:
        if not record.steps_planned:  # a watched run grows as it goes
            self.step_slider.setMaximum(max(0, len(record.steps) - 1))
        # the process view and the plots before the player: moving it can show the run to its
        # end at once, and whoever waits for that (a screenshot, --quit) must see them current
        self.process_view.set_record(record)
        self._redraw(self.turns.views(record, self.player.follow_latest))

    def _redraw(self, views: frozenset[str]) -> None:
        """The plots and (through the player) the stage, as the refresh's turn says."""
        if plots_too := "plots" in views:
            self.plots.update_record(self.session.record, self.player.cursor)
        rec = self.session.record
        if "stage" in views and self.stage_rate.due(rec, self.player.follow_latest, plots_too):
            self.player.on_record_updated()
            self.stage.refresh(self.streaming)

    def show_run_ended(self, record: RunRecord) -> None:
        if record.status is not RunStatus.FINISHED or not record.steps_planned:
            # the slider spans the steps the run made (a watched run's length is not known
            # before it ends)
            self.step_slider.setRange(0, max(0, len(record.steps) - 1))
        self.player.on_record_updated()
        self.stage.refresh()
        self.run_ended.emit(record)
        self.session.on_stage_position(self.player.cursor, self.player.progress)

    def show_run_shown(self, record: RunRecord) -> None:
        self.run_shown.emit(record)

    def show_prediction_graded(self, question: Question, feedback: Feedback, scored: bool) -> None:
        self.quiz_view.show_feedback(question, feedback, scored)
        self.status.setText("Your prediction was graded: see the Quiz tab.")

    def show_prediction_note(self, question: Question, text: str) -> None:
        self.quiz_view.show_note(question.id, text)

    # --- running -----------------------------------------------------------------------------
    def start_run(self) -> None:
        scenario = self.form.scenario()
        if scenario is not None:
            self.session.request_run(scenario)

    def _on_escape(self) -> None:
        if self.session.busy:
            self.session.cancel()
        elif self.isFullScreen():
            self.showNormal()

    def _on_form_scenario_changed(self, scenario: Scenario | None) -> None:
        if scenario is not None:
            self._warm_timer.start()  # keep the pool the size the next run needs

    def _on_warm_timer_timeout(self) -> None:
        s = self.form.scenario()
        if s is not None:
            self.session.warm(s.world_size)

    def _update_actions(self, *_: object) -> None:
        own = self.lesson.id in self.course.ids  # a watched run's page runs nothing itself
        self.run_action.setEnabled(own and self.form.valid and not self.session.busy)
        self.cancel_action.setEnabled(True)  # Escape also leaves full screen
        self.run_action.setToolTip(
            "Fix the marked fields first" if not self.form.valid else "Start real DDP ranks (R)"
        )

    def update_exports(self) -> None:
        """The Chrome trace is offered only for a run with timings (not before a file name is
        asked for, to then refuse it)."""
        trace = self.export_actions["export_trace"]
        ok = traceable(self.session.record)
        trace.setEnabled(ok)
        trace.setText("Chrome trace (Perfetto)…" if ok else "Chrome trace (no timings in this run)")

    # --- look --------------------------------------------------------------------------------
    def _on_side_panel_toggled(self, shown: bool) -> None:
        self.splitters["left"].setVisible(shown)
        apply_split_proportions(self)

    def _on_presentation_changed(self, theme: Theme, projector: bool) -> None:
        apply_presentation(self, theme, projector)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.WindowStateChange:  # the button says what it will do
            full = self.isFullScreen()
            self.fullscreen_action.setText("Leave full screen" if full else "Full screen")

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

    def toolbar_button(self, action: QAction) -> QWidget:
        return self.toolbar.widgetForAction(action)

    def show_shortcuts(self) -> None:
        """The key sheet (F1); non-blocking, so a presenter's next key still works."""
        self.shortcut_sheet = show_shortcut_sheet(self)

    def toggle_fullscreen(self) -> None:
        self.showNormal() if self.isFullScreen() else self.showFullScreen()

    # --- lifecycle ---------------------------------------------------------------------------
    @property
    def plots(self):  # -> Plots, built on first use
        return self.plots_panel.ensure()

    def start(self, engine: bool = True) -> None:
        """Start the engine in the background: the pool warms while the learner reads.
        ``engine=False`` (a window that watches a script: its ranks are the script's) starts it
        only once a lesson that runs ranks is opened (:meth:`lesson_needs_engine`). Started at
        once, its warm-up (torch imported, ranks made ready) took a share of the CPU from the
        page and the watched ranks in the run's first seconds, for a pool no one used."""
        self._engine_on_demand = not engine
        if engine:
            self.session.start_engine()

    def lesson_needs_engine(self) -> None:
        if self._engine_on_demand:
            self._engine_on_demand = False
            if self.session.engine_state is EngineState.STOPPED:
                self.session.start_engine()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        apply_split_proportions(self)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.player.pause()
        self._warm_timer.stop()
        self._refresh.stop()
        self.session.shutdown()
        super().closeEvent(event)
