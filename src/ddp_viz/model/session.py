"""The life of a session: the engine, one run at a time, what the window says about it.

:class:`SessionController` owns that state and talks to two small interfaces: a
:class:`Transport` (the engine process in the window, a fake in tests, a network listener for
watched runs later) and a :class:`SessionView` (the main window, or a fake that records calls).
It has no Qt and no clock of its own: the window calls :meth:`tick` at display rate, which is
when throttled record updates reach the view. Tested without a window.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Protocol

from ddp_viz.model import protocol
from ddp_viz.model.cursor import reached
from ddp_viz.model.quiz import Feedback, Question, grade_prediction
from ddp_viz.model.run_status import playing_text, status_text
from ddp_viz.model.run_status import steps_done as steps_done  # its old home
from ddp_viz.model.scenario import Scenario
from ddp_viz.model.timeline import Cursor, RunRecord, RunStatus

FOLLOW_LATEST_ABOVE = 30  # runs longer than this stream in fast mode (follow the newest step)


class EngineState(Enum):
    STOPPED = "stopped"
    STARTING = "starting"
    READY = "ready"
    CRASHED = "crashed"


class RunState(StrEnum):
    IDLE = "idle"  # nothing run yet
    PENDING = "pending"  # Run pressed; waiting for the engine or for run_started
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Transport(Protocol):
    """Carries commands to an event source; reports back through the controller's
    ``on_transport_*`` methods."""

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def send(self, command: protocol.Command) -> None: ...


class SessionView(Protocol):
    def show_engine_state(self, state: EngineState) -> None: ...
    def show_workers(self, workers: dict[int, protocol.WorkerState], pending: int) -> None: ...
    def show_busy(self, busy: bool) -> None: ...
    def show_status(self, text: str) -> None: ...
    def show_log(self, text: str) -> None: ...
    def show_run_started(self, record: RunRecord) -> None: ...
    def show_follow_latest(self, on: bool) -> None: ...
    def show_record(self, record: RunRecord) -> None: ...
    def show_run_ended(self, record: RunRecord) -> None: ...
    def show_run_shown(self, record: RunRecord) -> None: ...
    def show_prediction_graded(
        self, question: Question, feedback: Feedback, scored: bool
    ) -> None: ...
    def show_prediction_note(self, question: Question, text: str) -> None: ...


@dataclass(frozen=True)
class LockedPrediction:
    question: Question
    value: float
    run: int | None = None  # the run it is graded against, fixed when that run starts
    practice: bool = False  # the value was already on screen: graded, but does not score


class SessionController:
    def __init__(self, transport: Transport, view: SessionView) -> None:
        self.transport = transport
        self.view = view
        self.engine_state = EngineState.STOPPED
        self.run_state = RunState.IDLE
        self._live_line: str | None = None  # the kind's latest word in the status bar
        self.record = RunRecord()
        self.workers: dict[int, protocol.WorkerState] = {}
        # one locked guess per predict question (a lesson may ask several, answered in any
        # order): each is graded on its own when the stage shows its value
        self.predictions: dict[str, LockedPrediction] = {}
        self.follow_latest = False  # fast mode: the stage shows the newest complete step
        self.questions: list[Question] = []  # the lesson's predict questions
        self.revealed: set[str] = set()  # questions whose value a run has shown on the stage
        self._next_run = 1
        self._pending_run: int | None = None
        self._run_when_ready: Scenario | None = None
        self._dirty = False
        self._shown_run: int | None = None
        # the run whose finished line waits for the stage to show the run to its end
        self._status_held: int | None = None

    # --- what the window asks ---------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self.run_state in (RunState.PENDING, RunState.RUNNING)

    @property
    def engine_ready(self) -> bool:
        return self.engine_state is EngineState.READY

    def start_engine(self) -> None:
        self.transport.start()

    def restart_engine(self) -> None:
        self.transport.stop()
        self._set_workers({})
        self.transport.start()

    def shutdown(self) -> None:
        self._run_when_ready = None
        self.transport.stop()

    def request_run(self, scenario: Scenario) -> int | None:
        """Run ``scenario`` now, or as soon as the engine is ready. Returns the run id."""
        if self.busy:
            return None
        self._set_run_state(RunState.PENDING)
        if not self.engine_ready:
            self._run_when_ready = scenario
            self.view.show_status("Waiting for the engine to start…")
            return None
        run_id = self._next_run
        self._next_run += 1
        self._pending_run = run_id
        self.transport.send(protocol.RunCommand(run=run_id, scenario=scenario.to_dict()))
        self.view.show_workers(dict(self.workers), scenario.world_size)
        self.view.show_status(f"Starting {scenario.world_size} rank(s) over gloo…")
        return run_id

    def cancel(self) -> None:
        if self._run_when_ready is not None:
            self._run_when_ready = None
            self._set_run_state(RunState.IDLE)
            self.view.show_status("Run cancelled before the engine was ready.")
            return
        run_id = self._pending_run or (
            self.record.run if self.run_state is RunState.RUNNING else None
        )
        if run_id is not None and self.engine_ready:
            self.transport.send(protocol.CancelCommand(run=run_id))

    def warm(self, world_size: int) -> None:
        if self.engine_ready and not self.busy:
            self.transport.send(protocol.WarmCommand(world_size=world_size))

    def set_follow_latest(self, on: bool) -> None:
        """Fast mode on or off (the checkbox, or stepping by hand, which leaves it)."""
        if on != self.follow_latest:
            self.follow_latest = on
            self.view.show_follow_latest(on)

    def forget_run(self) -> None:
        """Another lesson: the last run is gone from every view, exports included."""
        if not self.busy:
            self.record, self._dirty = RunRecord(), False

    def step_by_hand(self) -> None:
        """The learner moved the stage: a streaming run stops dragging it to the newest step."""
        self.set_follow_latest(False)

    def tick(self) -> None:
        """Display rate: hand the view the record if events changed it since the last tick."""
        if self._dirty:
            self._dirty = False
            self.view.show_record(self.record)
            if self.run_state is RunState.RUNNING:
                self._live_status()

    def _live_status(self) -> None:
        """A kind's word on the run while it streams in (a watched run's diagnosis): the
        status bar must not say "training…" under a hang the page shows in red."""
        for kind in self.record.kinds():
            line = kind.status_live(self.record) if kind.status_live is not None else None
            if line is not None and line != self._live_line:
                self._live_line = line
                self.view.show_status(line)
                return

    # --- prediction: lock before Run, graded when the stage reveals the value -------------------
    def set_questions(self, questions: list[Question]) -> None:
        """The lesson changed: its predict questions, none revealed yet."""
        self.questions = [q for q in questions if q.quantity is not None]
        self.revealed = set()
        self.predictions = {}

    def lock_prediction(self, question: Question, value: float) -> str:
        """Lock a guess for the next run; returns the text to show beside the question."""
        if self.busy:
            return "A run is under way: lock your guess before the next Run."
        practice = question.id in self.revealed
        self.predictions[question.id] = LockedPrediction(question, value, practice=practice)
        q = question.quantity
        ranks = q.conditions() if q else ""
        if practice:
            return (
                f"Locked in: {value:g}. You have already seen this value on the stage, so this "
                f"guess is practice and does not score. Press Run{ranks}."
            )
        return f"Locked in: {value:g}. Now press Run{ranks}; the stage will reveal the real value."

    def on_stage_position(self, cursor: Cursor, progress: float) -> None:
        """The stage moved. Grade a locked guess once its value is on screen; say once that a
        finished run has been shown to its end."""
        rec = self.record
        for question in self.questions:
            q = question.quantity
            if q is not None and q.matches(rec):
                actual = q.read(rec)
                if not reached(cursor, q.reveal_step(rec), q.phase) or actual is None:
                    continue
                p = self.predictions.get(question.id)
                if p is not None and p.run == rec.run:
                    del self.predictions[question.id]
                    feedback = grade_prediction(question, p.value, actual)
                    self.view.show_prediction_graded(question, feedback, not p.practice)
                self.revealed.add(question.id)
        if rec.done and rec.run is not None and rec.run != self._shown_run:
            n = rec.complete_prefix()
            if n == 0 or (cursor.is_last(n) and progress >= 1.0):
                self._shown_run = rec.run
                if self._status_held == rec.run:  # its verdicts, now the stage has them
                    self._status_held = None
                    self.view.show_status(status_text(rec))
                self.view.show_run_shown(rec)

    # --- what the transport reports ---------------------------------------------------------
    def on_transport_state(self, state: EngineState) -> None:
        self.engine_state = state
        if state in (EngineState.CRASHED, EngineState.STOPPED):
            self._set_workers({})
            if self.busy and self._run_when_ready is None:
                self._pending_run = None
                if self.run_state is RunState.RUNNING:
                    self.record.status = RunStatus.FAILED
                    self.record.reason = "the engine process ended during the run (incomplete)"
                    self._end_run()
                else:
                    self._set_run_state(RunState.IDLE)
        self.view.show_engine_state(state)
        if state is EngineState.READY and self._run_when_ready is not None:
            scenario, self._run_when_ready = self._run_when_ready, None
            self._set_run_state(RunState.IDLE)
            self.request_run(scenario)

    def expect_run(self, run: int) -> None:
        """Events of ``run`` will come from elsewhere (a watched run, live): show them."""
        self._pending_run = run

    def replay(
        self, events: list[protocol.Event], note: str = "", note_first: bool = False
    ) -> bool:
        """Show a recorded run (a file: one of ours, or a watched run) as if it had just run;
        no engine takes part. False while a run is busy. A recording that stops before its
        run ended is shown as far as it goes, marked as cut short. ``note``: what the file
        says about its version, kept with the run's status line (first: ``note_first``)."""
        if self.busy:
            self.view.show_status("Finish or cancel the run before opening another.")
            return False
        for event in events:
            if isinstance(event, protocol.RunStarted):
                self._pending_run = event.run
            self.on_transport_event(event)
            if isinstance(event, protocol.RunStarted):
                self.record.note, self.record.note_first = note, note_first
                self.record.replayed = True
        if self.busy:  # the file ends before the run did
            self.record.status = RunStatus.FAILED
            self.record.reason = "the recording ends before the run did"
            self._end_run()
        return True

    def on_transport_log(self, text: str) -> None:
        self.view.show_log(text)

    def on_transport_bad_line(self, text: str) -> None:
        self.record.bad_lines += 1
        self.view.show_log(f"[window] ignored a bad line from the engine: {text}\n")

    def on_transport_event(self, event: protocol.Event) -> None:
        match event:
            case protocol.WorkerState(slot=slot, state=state):
                workers = dict(self.workers)
                workers[slot] = event
                if state == protocol.WorkerStatus.EXITED:
                    workers.pop(slot, None)
                self._set_workers(workers)
            case protocol.CommandError(message=message):
                self.view.show_log(f"[engine] refused: {message}\n")
                # a refusal names the run only when a run was waiting on it: the engine also
                # refuses the window's other commands (warming ranks, a cancel too late)
                what = "a command"
                if self._pending_run is not None:
                    self._pending_run, what = None, "the run"
                    self._set_run_state(RunState.IDLE)
                self.view.show_status(f"The engine refused {what}: {message}")
            case protocol.RunFailed(run=run) | protocol.RunCancelled(run=run) if (
                run is not None and run == self._pending_run
            ):
                # the run ended before it started (cancelled while waiting for ranks, or
                # ranks that could not start)
                self._pending_run = None
                self._set_run_state(RunState.IDLE)
                reason = getattr(event, "reason", "cancelled before any rank started")
                self.view.show_status(f"Run {run} did not start: {reason}")
            case protocol.RunStarted(run=run):
                if run != self._pending_run:
                    return
                self._pending_run = None
                self.record = RunRecord()
                self._shown_run = None  # a new run (a second recording may reuse run 1's id)
                self.record.apply(event)
                self._bind_predictions(run)
                self._set_run_state(RunState.RUNNING)
                self.view.show_run_started(self.record)
                # a long run, or one whose length is not known in advance: the latest step
                long = self.record.steps_planned > FOLLOW_LATEST_ABOVE
                self.follow_latest = long or any(k.follow_latest for k in self.record.kinds())
                self.view.show_follow_latest(self.follow_latest)
                self._live_line = None
                said = (k.running(self.record) for k in self.record.kinds() if k.running)
                text = next((x for x in said if x), None)
                self.view.show_status(
                    text or f"Run {run}: {self.record.world_size} rank(s) training…"
                )
            case _:
                if not self.record.apply(event):
                    return
                self._dirty = True
                if self.record.done:
                    self._end_run()

    # --- inside -----------------------------------------------------------------------------
    def _bind_predictions(self, run: int) -> None:
        """A run started: each locked guess is graded against it if the run is the kind its
        question asks about; otherwise it stays locked for a later one. A guess bound to an
        earlier run that never showed its value binds to this one."""
        for qid, p in list(self.predictions.items()):
            q = p.question.quantity
            if q is None:
                continue
            if not q.matches(self.record):
                self.view.show_prediction_note(
                    p.question,
                    f"Your guess of {p.value:g} is for a run{q.conditions()}; this run has "
                    f"{q.mismatch(self.record)}. It stays locked for a run{q.conditions()}.",
                )
                self.predictions[qid] = LockedPrediction(p.question, p.value, None, p.practice)
                continue
            self.predictions[qid] = LockedPrediction(p.question, p.value, run, p.practice)

    def _set_workers(self, workers: dict[int, protocol.WorkerState]) -> None:
        self.workers = workers
        self.view.show_workers(dict(workers), 0)

    def _set_run_state(self, state: RunState) -> None:
        was_busy = self.busy
        self.run_state = state
        if self.busy != was_busy:
            self.view.show_busy(self.busy)

    def _end_run(self) -> None:
        rec = self.record
        self._dirty = False
        # state and status first: showing the record can show the run to its end at once (a
        # recording, a watched run), and whoever waits for that sees the run as ended
        self._set_run_state(RunState(rec.status))
        for qid, p in list(self.predictions.items()):
            q = p.question.quantity
            if p.run == rec.run and q is not None and q.read(rec) is None:
                del self.predictions[qid]  # the run never produced the value: nothing to grade
        held = playing_text(rec)
        self._status_held = rec.run if held != status_text(rec) else None
        self.view.show_status(held)
        self.view.show_record(rec)
        self.view.show_run_ended(rec)
