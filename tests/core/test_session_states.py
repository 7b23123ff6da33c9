"""The session controller's state through the turns that are easy to get wrong (a fake
transport and view, recorded runs: no Qt, no torch): a refusal that is not about a run, a crash
while a run waits for the engine, ticks after a run ended, a live line said once, a worker that
leaves unseen."""

from __future__ import annotations

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.scenario import default_scenario
from ddp_viz.model.session import EngineState, RunState
from ddp_viz.model.timeline import walk
from tests.conftest import load_recording
from tests.core.test_session import make, play, ready


def _refused(s) -> None:
    s.request_run(default_scenario())
    s.on_transport_event(protocol.CommandError(message="steps: too many", field="steps"))


def _failed_to_start(s) -> None:
    s.request_run(default_scenario())
    s.on_transport_event(protocol.RunFailed(run=s._next_run - 1, reason="no ranks"))


def _crashed_while_pending(s) -> None:
    s.request_run(default_scenario())
    s.on_transport_state(EngineState.CRASHED)
    s.on_transport_state(EngineState.READY)


def _finished(s) -> None:
    s.request_run(default_scenario())
    play(s, "default-run.jsonl", run_id=s._next_run - 1)


@pytest.mark.parametrize(
    "before", [None, _refused, _failed_to_start, _crashed_while_pending, _finished]
)
def test_a_refusal_of_no_run_leaves_a_run_waiting_for_the_engine_waiting(before) -> None:
    """However the last try ended, a refusal that comes while no run was sent (the engine
    restarting) does not drop the run that waits for it."""
    s, t, _ = make()
    ready(s)
    if before is not None:
        before(s)
    assert not s.busy
    s.on_transport_state(EngineState.STARTING)
    s.request_run(default_scenario())  # waits for the engine
    s.on_transport_event(protocol.CommandError(message="warm: not now", field="world_size"))
    assert s.busy and s.run_state is RunState.PENDING
    s.on_transport_state(EngineState.READY)
    assert isinstance(t.sent[-1], protocol.RunCommand) and s.busy


def test_a_run_waiting_for_the_engine_keeps_waiting_through_a_crash() -> None:
    s, t, v = make()
    s.start_engine()
    s.request_run(default_scenario())
    s.on_transport_state(EngineState.CRASHED)
    assert s.busy and v.called("show_busy") == [(True,)]
    assert v.status == "Waiting for the engine to start…"
    s.on_transport_state(EngineState.READY)  # restarted: the run goes
    assert [type(c) for c in t.sent] == [protocol.RunCommand]


def test_an_engine_that_stops_after_a_run_ended_leaves_its_end_as_it_was() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    play(s, "default-run.jsonl")
    s.on_transport_state(EngineState.STOPPED)
    assert s.run_state is RunState.FINISHED and s.record.status.value == "finished"
    assert len(v.called("show_run_ended")) == 1


def test_the_first_tick_shows_nothing_before_any_event() -> None:
    s, _, v = make()
    s.tick()
    assert v.called("show_record") == []


def test_ticks_after_a_run_ended_show_nothing_more() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    play(s, "default-run.jsonl")
    shown = len(v.called("show_record"))
    s.tick()
    s.tick()
    assert len(v.called("show_record")) == shown


def test_a_live_line_is_said_once_while_more_events_come() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    events = load_recording("watched-hang.jsonl")
    for e in events:
        s.on_transport_event(e)
        s.tick()
    timings = [e for e in events if e.kind == "timing"]
    for e in timings[-3:]:  # the ranks keep reporting under the hang: the line stands
        s.on_transport_event(e)
        s.tick()
    hang = [a[0] for a in v.called("show_status") if "✗ hang" in a[0]]
    assert len(hang) == 1 and None not in [a[0] for a in v.called("show_status")]


def test_a_worker_that_leaves_unseen_is_no_error() -> None:
    s, _, v = make()
    s.on_transport_event(protocol.WorkerState(slot=1, pid=12, state="ready"))
    s.on_transport_event(protocol.WorkerState(slot=4, pid=15, state="exited"))
    assert list(s.workers) == [1] and v.called("show_workers")[-1][0] == s.workers


def test_a_failed_runs_line_is_said_once_not_again_when_the_stage_ends() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    play(s, "diverging-lr10.jsonl")
    line = v.status
    assert "failed" in line
    for cursor in walk(s.record.complete_prefix()):
        s.on_stage_position(cursor, 1.0)
    assert [a[0] for a in v.called("show_status")].count(line) == 1
    (shown,) = v.called("show_run_shown")
    assert shown[0] is s.record
