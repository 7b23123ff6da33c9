"""While pooled ranks start (seconds each when spawned: Windows, macOS,
``DDP_VIZ_START_METHOD=spawn``) the empty stage says so, not "Press Run"; fed recorded
worker states, no engine."""

from __future__ import annotations

import pytest

from ddp_viz._qt.stage import PRESS_RUN, starting_ranks_words
from ddp_viz.model import protocol
from ddp_viz.model.session import EngineState


def workers(*states: str) -> dict[int, protocol.WorkerState]:
    return {s: protocol.WorkerState(slot=s, pid=5000 + s, state=st) for s, st in enumerate(states)}


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        (("starting", "starting", "starting"), "Starting ranks: 0 of 3 warm…"),
        (("ready", "busy", "starting"), "Starting ranks: 2 of 3 warm…"),
        (("ready", "exited", "starting"), "Starting ranks: 1 of 2 warm…"),  # a dead one is none
        (("ready", "ready", "ready"), None),
        ((), None),
    ],
)
def test_the_words_count_the_warm_ranks(states, expected) -> None:
    assert starting_ranks_words(workers(*states)) == expected


def test_the_empty_stage_says_ranks_start_until_the_last_is_warm(window) -> None:
    window.session.engine_state = EngineState.READY  # as its engine_ready event leaves it
    for states, said in [
        (("starting", "starting", "starting"), "Starting ranks: 0 of 3 warm…"),
        (("ready", "starting", "starting"), "Starting ranks: 1 of 3 warm…"),
        (("ready", "ready", "starting"), "Starting ranks: 2 of 3 warm…"),
        (("ready", "ready", "ready"), PRESS_RUN),
    ]:
        window.session.workers = workers(*states)
        window.show_workers(window.session.workers, 0)
        assert window.stage.message == said


def test_a_requested_run_names_its_ranks_and_a_starting_engine_is_not_a_rank(window) -> None:
    window.session.workers = workers("starting", "starting")
    window.show_engine_state(EngineState.STARTING)
    assert window.stage.message.startswith("Starting the engine")
    window.show_workers(window.session.workers, 3)
    assert window.stage.message == "Starting 3 rank(s)…"
