"""The stage's position (model/cursor.py) against positions counted by hand: the four
phases of every step in order, where a walk stops, what "shown" and "reached" mean at a
phase's edges, and how many steps a view may show."""

from __future__ import annotations

import pytest

from ddp_viz.model.cursor import PHASES, Cursor, reached, shown, steps_shown, walk


def test_a_walk_visits_every_phase_of_every_step_once_in_order() -> None:
    assert [(c.step, c.phase_name) for c in walk(3)] == [
        (s, p) for s in range(3) for p in ("shards", "local", "allreduce", "step")
    ]
    assert list(walk(1)) == [Cursor(0, 0), Cursor(0, 1), Cursor(0, 2), Cursor(0, 3)]


@pytest.mark.parametrize(
    ("at", "steps", "after"),
    [
        (Cursor(0, 0), 2, Cursor(0, 1)),
        (Cursor(0, 2), 2, Cursor(0, 3)),
        (Cursor(0, 3), 2, Cursor(1, 0)),  # the next step begins with its first phase
        (Cursor(1, 3), 2, Cursor(1, 3)),  # the last phase of the last step stays
        (Cursor(1, 3), 3, Cursor(2, 0)),  # unless a step came in since
    ],
)
def test_next_goes_one_phase_on_and_stops_at_the_last(at, steps, after) -> None:
    assert at.next(steps) == after
    assert at.is_last(steps) is (after == at)


@pytest.mark.parametrize(
    ("at", "before"),
    [(Cursor(1, 0), Cursor(0, 3)), (Cursor(1, 2), Cursor(1, 1)), (Cursor(0, 0), Cursor(0, 0))],
)
def test_prev_goes_one_phase_back_and_stops_at_the_first(at, before) -> None:
    assert at.prev() == before


def test_a_phase_is_shown_once_it_played_to_its_end_or_the_stage_moved_past_it() -> None:
    assert not shown(Cursor(1, 1), 0.999, 1, "local")
    assert shown(Cursor(1, 1), 1.0, 1, "local")
    assert shown(Cursor(1, 2), 0.0, 1, "local")  # past it, whatever the progress
    assert not shown(Cursor(1, 0), 1.0, 1, "local")  # before it, even at its end
    assert shown(Cursor(2, 0), 0.0, 1, "step")
    assert not shown(Cursor(0, 3), 1.0, 1, "shards")


def test_a_phase_is_reached_as_it_begins() -> None:
    assert reached(Cursor(1, 1), 1, "local")
    assert not reached(Cursor(1, 0), 1, "local")
    assert reached(Cursor(2, 0), 1, "step")


@pytest.mark.parametrize(
    ("at", "progress", "phase", "count"),
    [
        (Cursor(2, 1), 0.5, "local", 2),  # step 3's local phase is still playing
        (Cursor(2, 1), 1.0, "local", 3),
        (Cursor(2, 1), 1.0, "step", 2),  # its step phase is yet to come
        (Cursor(2, 3), 0.2, "local", 3),
        (Cursor(0, 0), 0.0, "shards", 0),
    ],
)
def test_steps_shown_counts_the_steps_whose_phase_the_stage_showed(
    at, progress, phase, count
) -> None:
    assert steps_shown(at, progress, phase) == count
    assert len(PHASES) == 4
