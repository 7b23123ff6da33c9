"""The uneven report's edges, on real recordings changed one field at a time: a verdict on the
ranks' final parameters only once every rank sent them, one process's comparison exactly at its
tolerance, monitored_barrier naming several ranks (``wait_all_ranks=True``), and the timeout a
recording without the field ran with (pure)."""

from __future__ import annotations

import dataclasses

from ddp_viz.kinds.uneven.record import ONE_PROCESS_TOL, UnevenRecord, missing_text
from ddp_viz.kinds.uneven.report import final_lines, found_line, raised, report_lines
from ddp_viz.kinds.uneven.spec import UnevenSpec
from ddp_viz.model.report import run_report
from ddp_viz.model.timeline import record
from tests.conftest import load_recording

JOIN, MONITORED = "uneven-join.jsonl", "uneven-monitored-3-ranks.jsonl"
# what torch 2.13's gloo says when monitored_barrier(wait_all_ranks=True) misses two ranks
# (run with ranks 1 and 2 asleep: ddp-viz's own script waits for the first only)
BOTH = "[Rank 0]: Ranks 1, 2 failed to pass monitoredBarrier in 2000 ms"


def _without_final(rank: int) -> list:
    return [e for e in load_recording(JOIN) if not (e.kind == "final_params" and e.rank == rank)]


def test_the_ranks_final_parameters_get_a_verdict_only_once_every_rank_sent_them() -> None:
    whole = report_lines(record(load_recording(JOIN)))
    assert "after the loop: ✓ the same parameters on every rank" in whole
    for rank in (0, 1):
        lines = report_lines(record(_without_final(rank)))
        assert not any(line.startswith("after the loop") for line in lines), lines
    # rank 0 carries one process's parameters: without rank 1 they are still compared
    assert any(
        line.startswith("one process, float64") for line in report_lines(record(_without_final(1)))
    )


def test_one_process_without_any_rank_final_parameters_says_nothing() -> None:
    rec = record(load_recording(JOIN))
    solo = {"weight": [1.0], "bias": [0.0]}
    assert final_lines(rec, UnevenRecord(one_process=solo)) == []


def test_one_process_exactly_at_the_tolerance_passes_and_just_past_it_fails() -> None:
    rec = record(load_recording(JOIN))
    solo = {"weight": [0.0], "bias": [0.5]}
    at = UnevenRecord(
        final_params={0: {"weight": [ONE_PROCESS_TOL], "bias": [0.5]}}, one_process=solo
    )
    line = final_lines(rec, at)[-1]
    assert f"(✓ largest difference {ONE_PROCESS_TOL:.2g}, tolerance {ONE_PROCESS_TOL:g})" in line
    past = UnevenRecord(
        final_params={0: {"weight": [ONE_PROCESS_TOL * 1.5], "bias": [0.5]}}, one_process=solo
    )
    assert "(✗ largest difference 1.5e-06" in final_lines(rec, past)[-1]


def test_a_run_with_nothing_uneven_to_say_adds_no_lines_not_even_a_blank() -> None:
    events = load_recording(MONITORED)
    first = next(i for i, e in enumerate(events) if e.kind == "run_started")
    assert report_lines(record(events[: first + 1])) == []
    assert report_lines(record(events)) != []


def _monitored(error: str | None = None, **uneven: object) -> list:
    out = []
    for e in load_recording(MONITORED):
        if e.kind == "run_started":
            table = {**e.scenario["uneven"], **uneven}
            table = {k: v for k, v in table.items() if v is not None}
            e = dataclasses.replace(e, scenario={**e.scenario, "uneven": table})
        elif e.kind == "stalled" and e.rank == 0 and error is not None:
            e = dataclasses.replace(e, error=error)
        out.append(e)
    return out


def test_monitored_barrier_naming_every_missing_rank_is_read_whole() -> None:
    rec = record(_monitored(BOTH))
    stall = rec.parts["uneven"].stalled[0]
    assert missing_text(stall) == "ranks 1, 2"
    assert raised(stall) == f"then monitored_barrier named ranks 1, 2: {BOTH}"
    line = found_line(rec)
    assert line == (
        f"monitored_barrier named ranks 1, 2 after {stall.waited_s:.3f} s "
        "(the process group's timeout: 4 s)"
    )
    assert line in run_report(rec)
    # the recording as torch wrote it: one rank, in the singular
    one = record(_monitored()).parts["uneven"].stalled[0]
    assert missing_text(one) == "rank 2" and "named rank 2 after" in found_line(
        record(_monitored())
    )


def test_the_timeout_shown_is_the_runs_own_or_the_default_it_ran_with() -> None:
    assert found_line(record(_monitored(timeout_s=7.5))).endswith(
        "(the process group's timeout: 7.5 s)"
    )
    default = found_line(record(_monitored(timeout_s=None)))
    assert default.endswith(f"(the process group's timeout: {UnevenSpec.timeout_s:g} s)")
    assert UnevenSpec.timeout_s == 4.0


def test_the_stage_names_every_missing_rank_too() -> None:
    from tests.kinds.uneven.test_find_the_hang import frame

    _, f = frame(_monitored(BOTH))
    text = " ".join(f.all_text().split())
    assert "Found: monitored_barrier named ranks 1, 2 after" in text
    assert "monitored_barrier ended it, naming ranks 1, 2" in text
    _, one = frame(_monitored())
    assert "monitored_barrier ended it, naming rank 2" in " ".join(one.all_text().split())
