"""The session controller with a fake transport and a fake view: no Qt, no torch, no window."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.course import load_lesson
from ddp_viz.model.scenario import default_scenario
from ddp_viz.model.session import EngineState, RunState, SessionController, SessionView
from ddp_viz.model.timeline import Cursor, RunStatus, walk
from tests.conftest import load_recording


@dataclass
class FakeTransport:
    sent: list[protocol.Command] = field(default_factory=list)
    starts: int = 0
    stops: int = 0

    def start(self) -> None:
        self.starts += 1

    def stop(self) -> None:
        self.stops += 1

    def send(self, command: protocol.Command) -> None:
        self.sent.append(command)


def _recorder(name: str, method: Callable[..., None]) -> Callable[..., None]:
    signature = inspect.signature(method)

    def record(self: FakeView, *args: Any, **kwargs: Any) -> None:
        # A call the protocol's signature does not accept fails here (TypeError).
        bound = signature.bind(self, *args, **kwargs)
        self.calls.append((name, tuple(bound.arguments.values())[1:]))

    record.__name__ = name
    return record


VIEW_METHODS = sorted(
    name
    for name, value in vars(SessionView).items()
    if callable(value) and not name.startswith("_")
)


class FakeView:
    """Exactly the ``SessionView`` protocol's methods, each recording its call as (method, args).

    Built from the protocol: a method the protocol does not declare does not exist here
    (AttributeError), and a call its signature does not accept raises TypeError.
    """

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def called(self, name: str) -> list[tuple[Any, ...]]:
        assert name in VIEW_METHODS, f"{name} is not a SessionView method"
        return [args for n, args in self.calls if n == name]

    @property
    def status(self) -> str:
        return self.called("show_status")[-1][0]


for _name in VIEW_METHODS:
    setattr(FakeView, _name, _recorder(_name, getattr(SessionView, _name)))


def test_the_fake_view_is_the_protocol_and_nothing_else() -> None:
    v = FakeView()
    assert len(VIEW_METHODS) >= 10 and "show_status" in VIEW_METHODS
    for name in VIEW_METHODS:
        assert callable(getattr(v, name))
    with pytest.raises(AttributeError):
        v.show_no_such_thing("x")  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        v.show_status()  # the protocol's show_status takes the text
    v.show_status("a")
    assert v.calls == [("show_status", ("a",))]


def make() -> tuple[SessionController, FakeTransport, FakeView]:
    t, v = FakeTransport(), FakeView()
    return SessionController(t, v), t, v


def ready(s: SessionController) -> None:
    s.start_engine()
    s.on_transport_state(EngineState.STARTING)
    s.on_transport_state(EngineState.READY)


def play(s: SessionController, name: str, run_id: int = 1) -> None:
    """Events of a recorded run, renumbered to ``run_id`` as if the engine had sent them."""
    for e in load_recording(name):
        if hasattr(e, "run"):
            e = type(e)(**{**e.__dict__, "run": run_id})
        s.on_transport_event(e)


def test_run_waits_for_the_engine_then_starts_once() -> None:
    s, t, v = make()
    s.start_engine()
    assert s.request_run(default_scenario()) is None
    assert s.busy and "Waiting for the engine" in v.status and t.sent == []
    s.on_transport_state(EngineState.READY)
    (cmd,) = [c for c in t.sent if isinstance(c, protocol.RunCommand)]
    assert cmd.run == 1 and cmd.scenario == default_scenario().to_dict()
    assert s.request_run(default_scenario()) is None  # busy: no second run
    assert len([c for c in t.sent if isinstance(c, protocol.RunCommand)]) == 1


def test_a_run_streams_to_the_view_at_display_rate_and_ends_with_a_status() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario().with_changes(world_size=4, steps=3))
    play(s, "four-ranks-3-steps.jsonl")
    assert s.run_state is RunState.FINISHED and not s.busy
    assert len(v.called("show_run_started")) == 1
    assert v.called("show_follow_latest") == [(False,)]  # 3 steps: animate every step
    assert v.called("show_run_ended")[0][0] is s.record
    assert [args[0] for args in v.called("show_busy")] == [True, False]
    # the verdicts wait for the stage (see test_status_verdicts); at its end they are there
    walk_stage(s)
    assert v.status.startswith("Run 1 finished: 3 step(s)")
    assert "✓ ranks agree" in v.status and "✓ average = full batch" in v.status


def test_record_updates_are_throttled_to_ticks() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    events = load_recording("four-ranks-3-steps.jsonl")
    for e in events[:-1]:
        s.on_transport_event(e if not hasattr(e, "run") else type(e)(**{**e.__dict__, "run": 1}))
    assert v.called("show_record") == []  # nothing until the display asks
    s.tick()
    s.tick()
    assert len(v.called("show_record")) == 1


def test_long_runs_follow_the_newest_step() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario().with_changes(steps=31))
    s.on_transport_event(
        protocol.RunStarted(run=1, world_size=2, steps=31, scenario=default_scenario().to_dict())
    )
    assert v.called("show_follow_latest") == [(True,)]
    s.step_by_hand()  # stepping back by hand leaves fast mode, once
    s.step_by_hand()
    assert v.called("show_follow_latest") == [(True,), (False,)] and not s.follow_latest


def test_cancel_sends_the_run_id_and_says_how_far_it_got() -> None:
    s, t, v = make()
    ready(s)
    s.request_run(default_scenario().with_changes(world_size=4, steps=3))
    events = [e for e in load_recording("four-ranks-3-steps.jsonl") if e.kind != "run_finished"]
    for e in events:
        s.on_transport_event(e)
    s.cancel()
    assert isinstance(t.sent[-1], protocol.CancelCommand) and t.sent[-1].run == 1
    s.on_transport_event(protocol.RunCancelled(run=1))
    assert s.run_state is RunState.CANCELLED
    assert v.status == "Run 1 cancelled after 3 complete step(s)."


def test_cancel_before_the_engine_is_ready_drops_the_waiting_run() -> None:
    s, t, _ = make()
    s.start_engine()
    s.request_run(default_scenario())
    s.cancel()
    s.on_transport_state(EngineState.READY)
    assert not s.busy and not any(isinstance(c, protocol.RunCommand) for c in t.sent)


def test_a_refused_run_frees_the_session() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    s.on_transport_event(protocol.CommandError(message="world_size: too big", field="world_size"))
    assert not s.busy and "refused" in v.status


def test_an_engine_that_dies_mid_run_marks_it_incomplete() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario().with_changes(world_size=4, steps=3))
    for e in load_recording("four-ranks-3-steps.jsonl")[:-5]:
        s.on_transport_event(e)
    s.on_transport_state(EngineState.CRASHED)
    assert s.record.status is RunStatus.FAILED and "incomplete" in s.record.reason
    assert not s.busy and v.called("show_engine_state")[-1][0] is EngineState.CRASHED
    assert v.called("show_workers")[-1][0] == {}


def test_bad_lines_are_counted_and_logged() -> None:
    s, _, v = make()
    s.on_transport_bad_line("not JSON")
    assert s.record.bad_lines == 1 and "bad line" in v.called("show_log")[0][0]


def test_workers_come_and_go() -> None:
    s, _, _ = make()
    s.on_transport_event(protocol.WorkerState(slot=0, pid=11, state="ready"))
    s.on_transport_event(protocol.WorkerState(slot=1, pid=12, state="ready"))
    s.on_transport_event(protocol.WorkerState(slot=0, pid=11, state="exited"))
    assert list(s.workers) == [1]


def predict_question(s: SessionController | None = None):
    lesson = load_lesson("ddp-pattern")
    if s is not None:
        s.set_questions(list(lesson.questions))
    return next(q for q in lesson.questions if q.kind == "predict")


def walk_stage(s: SessionController) -> list[tuple[Cursor, int]]:
    """Move the stage through every phase; return where each grading happened."""
    graded = []
    for cursor in walk(s.record.complete_prefix()):
        before = len(s.view.called("show_prediction_graded"))
        s.on_stage_position(cursor, 0.5)
        s.on_stage_position(cursor, 1.0)
        if len(s.view.called("show_prediction_graded")) > before:
            graded.append((cursor, before))
    return graded


@pytest.mark.parametrize(("guess", "right"), [(-33.17, True), (-40.0, False), (-30.0, False)])
def test_a_locked_guess_is_graded_once_when_the_average_is_on_stage(guess, right) -> None:
    s, _, v = make()
    ready(s)
    q = predict_question(s)
    assert "Locked in" in s.lock_prediction(q, guess)
    s.request_run(default_scenario().with_changes(world_size=3, steps=2))
    play(s, "uneven-3-ranks.jsonl")
    assert v.called("show_prediction_graded") == []  # the run ended; the stage has not shown it
    graded = walk_stage(s)
    assert [c for c, _ in graded] == [Cursor(0, 2)]  # step 1's all-reduce, not before or after
    ((question, feedback, scored),) = v.called("show_prediction_graded")
    assert question is q and feedback.correct is right and scored
    assert "-33.1667" in feedback.text
    walk_stage(s)  # replaying the run grades nothing again
    assert len(v.called("show_prediction_graded")) == 1


def test_no_guess_can_be_locked_while_a_run_is_under_way() -> None:
    s, _, _ = make()
    ready(s)
    s.request_run(default_scenario())
    assert "before the next Run" in s.lock_prediction(predict_question(), -27.5)
    assert s.predictions == {}


def test_run_shown_is_said_once_when_the_stage_reaches_the_end() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    play(s, "default-run.jsonl")
    s.on_stage_position(Cursor(0, 2), 1.0)
    assert v.called("show_run_shown") == []
    s.on_stage_position(Cursor(0, 3), 1.0)
    s.on_stage_position(Cursor(0, 3), 1.0)
    assert len(v.called("show_run_shown")) == 1


def test_a_guess_waits_for_a_run_with_the_world_size_it_is_about() -> None:
    s, _, v = make()
    ready(s)
    q = predict_question(s)
    s.lock_prediction(q, -33.17)
    s.request_run(default_scenario())
    play(s, "default-run.jsonl")  # 2 ranks: not the question's 3
    ((question, note),) = v.called("show_prediction_note")
    assert question is q and "for a run with 3 ranks; this run has 2" in note
    walk_stage(s)
    assert v.called("show_prediction_graded") == []
    assert set(s.predictions) == {q.id}  # still locked
    s.request_run(default_scenario().with_changes(world_size=3, steps=2))
    play(s, "uneven-3-ranks.jsonl", run_id=2)
    walk_stage(s)
    ((_, feedback, scored),) = v.called("show_prediction_graded")
    assert feedback.correct and scored


def test_a_guess_locked_after_the_value_was_on_stage_is_practice() -> None:
    s, _, v = make()
    ready(s)
    q = predict_question(s)
    s.request_run(default_scenario().with_changes(world_size=3, steps=2))
    play(s, "uneven-3-ranks.jsonl")
    walk_stage(s)  # the learner watched the average without a guess
    assert "practice and does not score" in s.lock_prediction(q, -33.17)
    s.request_run(default_scenario().with_changes(world_size=3, steps=2))
    play(s, "uneven-3-ranks.jsonl", run_id=2)
    walk_stage(s)
    ((_, feedback, scored),) = v.called("show_prediction_graded")
    assert feedback.correct and not scored


@pytest.mark.parametrize(
    "ending",
    [
        protocol.RunCancelled(run=1),
        protocol.RunFailed(run=1, reason="rank processes could not start: 3 in a row"),
    ],
)
def test_a_run_that_ends_before_it_starts_frees_the_session(ending) -> None:
    s, t, v = make()
    ready(s)
    s.request_run(default_scenario())
    s.cancel()
    assert isinstance(t.sent[-1], protocol.CancelCommand) and t.sent[-1].run == 1
    s.on_transport_event(ending)
    assert not s.busy and v.called("show_busy")[-1] == (False,)
    assert v.status.startswith("Run 1 did not start")
    assert s.request_run(default_scenario()) == 2  # Run works again
