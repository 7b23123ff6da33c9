"""The not-averaged lines on the recorded run changed where they branch: a step the last rank
has not reported yet, a rank whose loaded parameters differ, timings without the flag of 0 ms
and under 1 ms, an int all-reduced without the flag, a reducer error naming no parameter."""

from __future__ import annotations

import dataclasses

from ddp_viz.kinds.not_averaged import events as se
from ddp_viz.kinds.not_averaged.report import (
    buffer_line,
    checkpoint_lines,
    cost_line,
    count_line,
    reducer_line,
    report_lines,
)
from ddp_viz.model.timeline import record
from tests.conftest import load_recording

RUN = "not-averaged.jsonl"


def _with(*extra, drop=lambda e: False, change=lambda e: e):
    """The recording with events changed, dropped, and ``extra`` added before its end."""
    events = [change(e) for e in load_recording(RUN) if not drop(e)]
    end = next(i for i, e in enumerate(events) if e.kind == "run_finished")
    return record(events[:end] + list(extra) + events[end:])


def test_a_step_the_last_rank_has_not_reported_says_nothing_yet() -> None:
    steps = sorted({e.step for e in load_recording(RUN) if e.kind == "buffers"})
    last = steps[-1]
    rec = _with(drop=lambda e: e.kind == "buffers" and e.step == last and e.rank == 1)
    assert buffer_line(rec, last, "before") == "" and buffer_line(rec, last, "after") == ""
    said = report_lines(rec)
    assert not any(x.startswith(f"step {last + 1},") for x in said)
    assert any(x.startswith(f"step {last},") for x in said)  # the step before is complete
    assert "" not in said[:-1]


def test_the_last_rank_whose_loaded_parameters_differ_says_so() -> None:
    def differ(e):
        if e.kind == "checkpoint" and e.action == "loaded" and e.rank == 1:
            return dataclasses.replace(e, same_params=False, replaced=["1.running_mean"])
        return e

    lines = checkpoint_lines(_with(change=differ))
    assert lines[1] == (
        "rank 0 loaded it (map_location='cpu'): ✓ the same file, parameters equal its own"
    )
    assert lines[2] == (
        "rank 1 loaded it (map_location='cpu'): ✓ the same file, ✗ parameters differ; "
        "the load replaced its 1.running_mean"
    )


def _cost(with_flag, without, counts_without=()):
    return se.UnusedCost(
        run=1,
        rank=0,
        with_flag=list(with_flag),
        without_flag=list(without),
        allreduces_with=[[["float", 4], ["int", 1]], [["float", 4], ["float", 4], ["int", 1]]],
        allreduces_without=[list(s) for s in counts_without],
    )


def test_the_change_in_time_is_against_the_time_without_the_flag() -> None:
    """0.75 ms with the flag, 0.5 ms without: +50% (a time under 1 ms is still a time)."""
    said = cost_line(_with(_cost([0.00075], [0.0005])))
    assert said == (
        "find_unused_parameters=True: 0.75 ms per step, False: 0.50 ms (+50%), medians timed "
        "alternately in this run"
    )


def test_no_time_without_the_flag_gives_no_percentage() -> None:
    said = cost_line(_with(_cost([0.00075], [0.0])))
    assert "False: 0.00 ms (+nan%)" in said


def test_the_count_without_the_flag_is_every_all_reduce_of_the_step() -> None:
    """Without the flag DDP all-reduces no bitmap: an int there would still be counted in."""
    counts = [[["float", 4], ["int", 1]], [["float", 4], ["float", 4]]]
    said = count_line(_with(_cost([0.001], [0.001], counts)))
    assert said == (
        "all-reduces per step (steps 1–2, profiled): find_unused_parameters=True 1+1, 2+1 "
        "(gradient buckets + the used-parameter bitmap); False 2, 2 (gradient buckets only)"
    )


def test_a_reducer_error_that_names_no_parameter_says_so() -> None:
    err = se.ReducerError(run=1, step=1, rank=2, error="Expected to have finished", unused=[])
    said = reducer_line(_with(err))
    assert said == (
        "step 2: DDP's reducer refused to start on rank(s) 2 (no gradient for ?); it said: "
        "Expected to have finished"
    )
