"""What the report and the status line say of the real 2-rank run, and of it changed where a
verdict turns (pure: recorded events)."""

from __future__ import annotations

import dataclasses

from ddp_viz.model.report import run_report
from ddp_viz.model.session import status_text
from ddp_viz.model.timeline import record
from tests.conftest import load_recording
from tests.kinds.resuming.widened import RUN, with_failed_attempt

EVENTS = load_recording(RUN)


def of(kind: str):
    return [e for e in EVENTS if e.kind == kind]


def test_the_report_says_every_number_of_the_run() -> None:
    text = run_report(record(EVENTS))
    saved = of("checkpoint_saved")[0]
    assert f"rank 0 saved {saved.bytes:,} bytes: model, optimizer, epoch, step, rng" in text
    e = next(x for x in of("resume_compared") if x.variant == "no_optimizer" and x.rank == 1)
    assert f"Adam's step {e.adam_step:g} not {e.adam_step_want:g}" in text
    masks = sum(x.mask_diff for x in of("resume_compared") if x.variant == "no_rng")
    assert f"dropout masks: {masks} of " in text
    o = of("restart_outcome")[0]
    assert (
        f"resumed from step {o.resumed_from}: steps lost {o.killed_after - o.resumed_from}" in text
    )
    assert "5 mod 3 = 2" in text
    ports = sorted({a.store_port for a in of("restart_attempt")})
    assert f"torchrun's store port in the attempts: {', '.join(map(str, ports))}" in text


def test_the_status_line_counts_the_resumes_and_the_restarts() -> None:
    line = status_text(record(EVENTS))
    assert "1 of 4 resumes bit-equal; torchrun restarted 1 time(s), lost 2 step(s)" in line
    failed = status_text(record(with_failed_attempt(EVENTS, 2)))
    assert "torchrun restarted 2 time(s)" in failed


def test_the_killed_rank_comes_first_and_the_peers_error_is_its_consequence() -> None:
    """Read fast, a survivor's "Connection reset by peer" listed first looked like the cause."""
    attempts = {(a.attempt, a.rank): a for a in of("restart_attempt")}
    dead = next(a for a in attempts.values() if a.end == "killed")
    peer = next(a for a in attempts.values() if a.attempt == dead.attempt and a is not dead)
    assert peer.end == "failed" and dead.rank > peer.rank  # listed by rank, it came first
    line = next(x for x in run_report(record(EVENTS)).splitlines() if "attempt 0:" in x)
    assert line == (
        f"  attempt 0: rank {dead.rank} from step {dead.start_step} to {dead.last_step}, killed; "
        f"rank {peer.rank} from step {peer.start_step} to {peer.last_step}, failed, as rank "
        f"{dead.rank} was gone ({peer.error[:60]})"
    )


def test_a_failed_rendezvous_is_reported_with_gloos_words() -> None:
    text = run_report(record(with_failed_attempt(EVENTS, 2)))
    assert "attempt 1: rank 0 failed before it resumed (Gloo connectFullMesh failed" in text
    assert "rendezvous failed in 1 attempt(s)" in text


def test_a_run_that_never_finished_says_so() -> None:
    events = [
        dataclasses.replace(e, max_diff=-1.0, weights="") if e.kind == "restart_outcome" else e
        for e in EVENTS
    ]
    text = run_report(record(events))
    assert "✗ final weights differ from the run never stopped: none against" in text


def test_the_steps_lost_question_reads_the_run() -> None:
    """The prediction's number is the run's: the step the rank died after less the step the
    restart resumed from (not the formula), on the recording and on it changed."""
    from ddp_viz.model.course import load_lesson
    from ddp_viz.model.quiz import Quantity

    question = next(q for q in load_lesson("when-a-rank-dies").questions if q.kind == "predict")
    assert question.quantity.what == "steps_lost"
    o = of("restart_outcome")[0]
    assert (
        Quantity(what="steps_lost", step=1).read(record(EVENTS)) == o.killed_after - o.resumed_from
    )
    moved = [
        dataclasses.replace(e, resumed_from=0) if e.kind == "restart_outcome" else e for e in EVENTS
    ]
    assert Quantity(what="steps_lost", step=1).read(record(moved)) == o.killed_after


def test_the_report_says_where_zero_kept_adam_s_state_and_what_rank_0_gathered() -> None:
    text = run_report(record(EVENTS)).splitlines()
    zeros = sorted(of("zero_consolidated"), key=lambda e: e.rank)
    assert [e.rank for e in zeros] == [0, 1]
    held = "; ".join(f"rank {e.rank} {', '.join(e.owned)} ({e.state_bytes:,} B)" for e in zeros)
    assert f"  {held}" in text
    names = [n for e in zeros for n in e.owned]
    assert sorted(names) == ["0.bias", "0.weight", "3.bias", "3.weight"]
    total = sum(e.state_bytes for e in zeros)
    # Adam keeps two float32 averages per value and a float32 step per parameter
    numels = {"0.weight": 64, "0.bias": 16, "3.weight": 16, "3.bias": 1}
    assert total == sum(8 * n + 4 for n in numels.values())
    assert (
        f"✓ every parameter's state on one rank; {total:,} B in all, gathered {total:,} B" in text
    )
    line = next(x for x in text if x.startswith("✓ consolidate_state_dict(to=0)"))
    assert "rank 0 saved 4 parameters' state" in line and "= plain Adam's, bit for bit" in line
    assert line.endswith(
        "state_dict() on rank 1: Optimizer state has not been consolidated on this rank"
    )


def test_a_recording_made_before_zero_was_shown_still_plays_without_it() -> None:
    """Schema 5 had no ZeRO event: its run is whole without one, and says nothing of ZeRO."""
    older = [e for e in EVENTS if e.kind != "zero_consolidated"]
    rec = record(older)
    assert rec.parts["resuming"].resumed(rec.world_size)
    assert "ZeRO" not in run_report(rec)
    one_of_two = [e for e in EVENTS if not (e.kind == "zero_consolidated" and e.rank == 1)]
    rec = record(one_of_two)
    assert not rec.parts["resuming"].resumed(rec.world_size)  # the other rank's is on its way
