"""What the Processes table calls each rank of an uneven run (pure, and one window): a stalled
run's ranks once all read "done" in green while the stage showed rank 2 stuck in its step's
all-reduce. Expected words come from the recording's raw lines, not from the code."""

from __future__ import annotations

import json

from ddp_viz.kinds.uneven.record import rank_states
from ddp_viz.model import protocol
from ddp_viz.model.timeline import record
from tests.conftest import DATA, load_recording
from tests.qt_helpers import feed


def _raw(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]


def _expected_at_end(name: str) -> dict[int, str]:
    stalls = [e for e in _raw(name) if e["event"] == "stalled"]
    return {e["rank"]: "stuck" if e["what"] == "all-reduce" else "waited" for e in stalls}


def test_a_stalled_run_names_the_rank_stuck_in_the_all_reduce_and_those_that_waited() -> None:
    names = (
        "uneven-monitored-3-ranks.jsonl",
        "uneven-monitored-barrier.jsonl",
        "uneven-stall.jsonl",
    )
    for name in names:
        want = _expected_at_end(name)
        assert "stuck" in want.values() and "waited" in want.values(), name  # both sides
        assert rank_states(record(load_recording(name))) == want, name
    # the monitored_barrier run at 3 ranks: the last rank is the one held
    assert rank_states(record(load_recording("uneven-monitored-3-ranks.jsonl"))) == {
        0: "waited",
        1: "waited",
        2: "stuck",
    }


def test_mid_stream_a_rank_with_heartbeats_is_waiting_until_its_wait_ends() -> None:
    events = load_recording("uneven-monitored-3-ranks.jsonl")
    first_stall = next(i for i, e in enumerate(events) if e.kind == "stalled")
    first_beat = next(i for i, e in enumerate(events) if e.kind == "waiting")
    assert rank_states(record(events[:first_beat])) == {}  # nobody blocked yet
    beating = {e.rank for e in events[:first_stall] if e.kind == "waiting"}
    assert beating  # the recording has heartbeats before the first error
    assert rank_states(record(events[:first_stall])) == dict.fromkeys(sorted(beating), "waiting")
    # one rank's wait ended, the others' not yet
    after_one = rank_states(record(events[: first_stall + 1]))
    ended = events[first_stall]
    assert after_one[ended.rank] == ("stuck" if ended.what == "all-reduce" else "waited")
    assert all(after_one[r] == "waiting" for r in beating - {ended.rank})


def test_a_run_that_trains_to_the_end_or_was_cancelled_gets_no_word_of_the_kind() -> None:
    assert rank_states(record(load_recording("uneven-join.jsonl"))) == {}
    assert rank_states(record(load_recording("default-run.jsonl"))) == {}  # not this kind
    events = load_recording("uneven-monitored-barrier.jsonl")
    events = [e for e in events if e.kind != "run_finished"]
    cancelled = [*events, protocol.RunCancelled(run=events[-1].run)]
    assert rank_states(record(cancelled)) == {}


def test_the_processes_table_says_stuck_in_red_and_waited_not_done(qtbot, make_window) -> None:
    window = make_window(lesson_id="uneven-inputs")
    with qtbot.waitSignal(window.run_ended, timeout=30_000):
        feed(window, load_recording("uneven-monitored-3-ranks.jsonl"))
    qtbot.waitUntil(
        lambda: [r[2] for r in window.process_view.rows()][:3] == ["waited"] * 2 + ["stuck"]
    )
    table = window.process_view.table
    theme = window.process_view.theme
    assert table.item(2, 2).foreground().color().name() == theme.bad.lower()
    assert table.item(0, 2).foreground().color().name() != theme.ok.lower()
