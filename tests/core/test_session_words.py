"""What the session controller says and sends at each turn of a run's life, word for word (the
controller with a fake transport and view, recorded runs: no Qt, no torch). Each number said is
counted here from the scenario or the raw events; each threshold is met on both sides."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.scenario import default_scenario
from ddp_viz.model.session import FOLLOW_LATEST_ABOVE, EngineState, RunState
from ddp_viz.model.timeline import Cursor, RunStatus, walk
from tests.conftest import load_recording
from tests.core.test_session import make, play, ready


def started(steps: int, world: int = 3, run: int = 1) -> protocol.RunStarted:
    return protocol.RunStarted(
        run=run, world_size=world, steps=steps, scenario=default_scenario().to_dict()
    )


def test_run_asked_of_a_ready_engine_says_how_many_ranks_start() -> None:
    s, t, v = make()
    ready(s)
    workers = {0: protocol.WorkerState(slot=0, pid=7, state="ready")}
    s.on_transport_event(workers[0])
    scenario = default_scenario().with_changes(world_size=3)
    assert s.request_run(scenario) == 1
    assert v.status == "Starting 3 rank(s) over gloo…"
    assert v.called("show_workers")[-1] == (workers, 3)  # the warm ones, 3 wanted
    assert t.sent == [protocol.RunCommand(run=1, scenario=scenario.to_dict())]
    assert s.run_state is RunState.PENDING and v.called("show_busy") == [(True,)]


def test_run_before_the_engine_is_ready_waits_and_says_so() -> None:
    s, t, v = make()
    s.start_engine()
    assert t.starts == 1 and s.request_run(default_scenario()) is None
    assert v.status == "Waiting for the engine to start…" and t.sent == []
    s.on_transport_state(EngineState.STARTING)  # not ready yet: still waiting
    assert t.sent == [] and s.busy
    s.on_transport_state(EngineState.READY)
    assert [type(c) for c in t.sent] == [protocol.RunCommand] and t.sent[0].run == 1
    assert v.status == f"Starting {default_scenario().world_size} rank(s) over gloo…"


def test_cancel_before_the_engine_is_ready_says_so_and_frees_the_session() -> None:
    s, t, v = make()
    s.request_run(default_scenario())
    s.cancel()
    assert v.status == "Run cancelled before the engine was ready."
    assert s.run_state is RunState.IDLE and v.called("show_busy") == [(True,), (False,)]
    assert t.sent == []  # nothing to cancel in the engine


def test_cancel_while_running_names_the_running_run() -> None:
    s, t, _ = make()
    ready(s)
    s.request_run(default_scenario())
    s.on_transport_event(started(3, run=1))
    assert s.run_state is RunState.RUNNING
    s.cancel()
    assert t.sent[-1] == protocol.CancelCommand(run=1)


def test_cancel_with_no_engine_sends_nothing() -> None:
    s, t, _ = make()
    ready(s)
    s.request_run(default_scenario())
    s.on_transport_event(started(3, run=1))
    s.engine_state = EngineState.STARTING  # as if it were restarting under the run
    s.cancel()
    assert not any(isinstance(c, protocol.CancelCommand) for c in t.sent)


def test_cancel_with_nothing_under_way_sends_nothing() -> None:
    s, t, _ = make()
    ready(s)
    s.cancel()
    assert t.sent == []
    s.request_run(default_scenario())
    play(s, "default-run.jsonl")  # a run that is over: not running
    assert s.record.run == 1 and s.run_state is RunState.FINISHED
    s.cancel()
    assert not any(isinstance(c, protocol.CancelCommand) for c in t.sent)


def test_warm_asks_for_ranks_only_of_a_ready_idle_engine() -> None:
    s, t, _ = make()
    s.warm(3)
    assert t.sent == []  # no engine
    ready(s)
    s.warm(3)
    assert t.sent == [protocol.WarmCommand(world_size=3)]
    s.request_run(default_scenario())
    s.warm(4)  # busy
    assert t.sent[-1] != protocol.WarmCommand(world_size=4)


def test_restart_stops_then_starts_and_forgets_the_workers() -> None:
    s, t, v = make()
    s.on_transport_event(protocol.WorkerState(slot=0, pid=7, state="ready"))
    s.restart_engine()
    assert (t.stops, t.starts) == (1, 1)
    assert s.workers == {} and v.called("show_workers")[-1] == ({}, 0)


def test_shutdown_stops_and_drops_a_run_waiting_for_the_engine() -> None:
    s, t, _ = make()
    s.request_run(default_scenario())
    s.shutdown()
    assert t.stops == 1
    s.on_transport_state(EngineState.READY)
    assert t.sent == []


def test_follow_latest_is_said_only_when_it_changes() -> None:
    s, _, v = make()
    s.set_follow_latest(False)
    assert v.called("show_follow_latest") == []
    s.set_follow_latest(True)
    s.set_follow_latest(True)
    assert v.called("show_follow_latest") == [(True,)] and s.follow_latest


@pytest.mark.parametrize(
    ("steps", "follows"), [(FOLLOW_LATEST_ABOVE, False), (FOLLOW_LATEST_ABOVE + 1, True)]
)
def test_a_run_longer_than_the_limit_follows_the_newest_step(steps, follows) -> None:
    assert FOLLOW_LATEST_ABOVE == 30
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    s.on_transport_event(started(steps))
    assert s.follow_latest is follows and v.called("show_follow_latest") == [(follows,)]
    assert v.status == "Run 1: 3 rank(s) training…"


def test_a_watched_run_follows_its_newest_step_whatever_its_length() -> None:
    s, _, v = make()
    s.replay(load_recording("watched-2-ranks.jsonl"))
    assert v.called("show_follow_latest")[0] == (True,)


def test_a_kind_that_says_why_a_run_takes_a_while_says_it_as_the_run_starts() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    play(s, "comm-hooks-14-steps.jsonl")
    lines = [a[0] for a in v.called("show_status")]
    assert lines[1].startswith("Run 1: 2 rank(s) train one model 6 ways in lockstep, 14 steps")


def test_a_run_started_for_another_run_is_not_this_one() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    s.on_transport_event(started(3, run=7))
    assert s.run_state is RunState.PENDING and v.called("show_run_started") == []


def test_the_live_line_of_a_hang_replaces_training_and_is_said_once() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    events = load_recording("watched-hang.jsonl")
    for e in events:
        s.on_transport_event(e)
        s.tick()
        s.tick()
    lines = [a[0] for a in v.called("show_status")]
    hang = [x for x in lines if "✗ hang" in x]
    assert len(hang) == 1 and hang[0].startswith("Run 1: ✗ hang: rank 1 never joined")
    assert s.run_state is RunState.RUNNING  # still under way: the hang is said live


def test_a_finished_runs_ticks_say_nothing_live() -> None:
    s, _, v = make()
    s.replay(load_recording("watched-hang.jsonl"))  # cut short: no live line after its end
    said = len(v.called("show_status"))
    s._dirty = True
    s.tick()
    assert len(v.called("show_status")) == said


def test_lines_the_engine_refused_or_garbled_are_logged_as_such() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    s.on_transport_event(protocol.CommandError(message="steps: too many", field="steps"))
    assert v.called("show_log")[-1] == ("[engine] refused: steps: too many\n",)
    assert v.status == "The engine refused the run: steps: too many"
    assert s.run_state is RunState.IDLE
    s.on_transport_bad_line("{oops")
    s.on_transport_bad_line("{again")
    assert s.record.bad_lines == 2
    assert v.called("show_log")[-1] == ("[window] ignored a bad line from the engine: {again\n",)
    s.on_transport_log("rank 0: hello\n")
    assert v.called("show_log")[-1] == ("rank 0: hello\n",)


def test_a_refusal_with_no_run_pending_leaves_the_state() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    s.on_transport_event(started(3))
    s.on_transport_event(protocol.CommandError(message="warm: no", field="world_size"))
    assert s.run_state is RunState.RUNNING
    # the run under way was not what the engine refused
    assert v.status == "The engine refused a command: warm: no"


def test_a_run_that_failed_to_start_says_why() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    s.on_transport_event(protocol.RunFailed(run=1, reason="ranks could not start"))
    assert v.status == "Run 1 did not start: ranks could not start"
    assert s.run_state is RunState.IDLE
    s.request_run(default_scenario())
    s.on_transport_event(protocol.RunCancelled(run=2))
    assert v.status == "Run 2 did not start: cancelled before any rank started"


def test_an_engine_stopped_while_a_run_waits_for_ranks_frees_the_session() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    s.on_transport_state(EngineState.STOPPED)
    assert s.run_state is RunState.IDLE and v.called("show_busy")[-1] == (False,)
    assert v.called("show_run_ended") == []
    s.on_transport_event(started(3))  # a late start of the run it gave up on
    assert v.called("show_run_started") == []


def test_an_engine_stopped_mid_run_fails_it_with_the_reason() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    for e in load_recording("default-run.jsonl")[:-3]:
        s.on_transport_event(e)
    s.on_transport_state(EngineState.STOPPED)
    assert s.run_state is RunState.FAILED and s.record.status is RunStatus.FAILED
    assert v.status == "Run 1 failed: the engine process ended during the run (incomplete)."
    assert v.called("show_run_ended")[-1][0] is s.record


def test_an_engine_that_stops_while_idle_only_says_its_state() -> None:
    s, _, v = make()
    ready(s)
    s.on_transport_state(EngineState.CRASHED)
    assert s.run_state is RunState.IDLE and v.called("show_busy") == []
    assert v.called("show_engine_state")[-1] == (EngineState.CRASHED,)


def test_forget_run_empties_the_record_unless_a_run_is_under_way() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    play(s, "default-run.jsonl")
    s.forget_run()
    assert s.record.run is None and s.record.steps == []
    s.tick()
    assert len(v.called("show_record")) == 1  # only the run's end showed it
    s.request_run(default_scenario())
    s.on_transport_event(started(3, run=2))
    s.forget_run()
    assert s.record.run == 2


def test_a_replayed_recording_keeps_its_note_and_is_marked_replayed() -> None:
    s, _, v = make()
    assert s.replay(load_recording("four-ranks-3-steps.jsonl"), "Event schema 1: upgraded.")
    assert s.record.replayed and s.record.note == "Event schema 1: upgraded."
    assert s.record.note_first is False
    for cursor in walk(s.record.complete_prefix()):
        s.on_stage_position(cursor, 1.0)
    assert v.status.startswith("Run 1 finished: 3 step(s)")
    assert v.status.endswith(". Event schema 1: upgraded.")
    s.replay(load_recording("four-ranks-3-steps.jsonl"), "Newer schema.", note_first=True)
    assert s.record.note_first is True


def test_a_recording_cut_short_is_shown_as_failed_and_says_why() -> None:
    s, _, v = make()
    events = [e for e in load_recording("default-run.jsonl") if e.kind != "run_finished"]
    assert s.replay(events)
    assert s.run_state is RunState.FAILED and not s.busy
    assert v.status == "Run 1 failed: the recording ends before the run did."


def test_no_recording_opens_while_a_run_is_under_way() -> None:
    s, _, v = make()
    ready(s)
    s.request_run(default_scenario())
    assert s.replay(load_recording("default-run.jsonl")) is False
    assert v.status == "Finish or cancel the run before opening another."
    assert s.record.run is None


def test_a_live_run_expected_from_elsewhere_is_shown() -> None:
    s, _, v = make()
    s.expect_run(5)
    s.on_transport_event(started(3, run=5))
    assert s.record.run == 5 and len(v.called("show_run_started")) == 1


def test_a_run_with_no_complete_step_is_shown_to_its_end_at_once() -> None:
    s, _, v = make()
    events = load_recording("default-run.jsonl")
    (start,) = [e for e in events if e.kind == "run_started"]
    s.replay([start, protocol.RunFailed(run=start.run, reason="ranks died")])
    assert s.record.complete_prefix() == 0
    s.on_stage_position(Cursor(0, 0), 0.0)
    assert len(v.called("show_run_shown")) == 1


def test_the_last_phase_shows_the_run_only_once_it_has_played_to_its_end() -> None:
    s, _, v = make()
    s.replay(load_recording("four-ranks-3-steps.jsonl"))
    last = list(walk(s.record.complete_prefix()))[-1]
    s.on_stage_position(last, 0.999)
    assert v.called("show_run_shown") == []
    s.on_stage_position(dataclasses.replace(last, step=last.step - 1), 1.0)
    assert v.called("show_run_shown") == []
    s.on_stage_position(last, 1.0)
    assert len(v.called("show_run_shown")) == 1
