"""What the restart lesson's record folds and the numbers read from it (pure: the real 2-rank
recording, cut or changed here): a run is complete only with part one and torchrun's outcome,
the steps a death cost and the restarts as the quiz reads them, the table as the run had it."""

from __future__ import annotations

import dataclasses

from ddp_viz.kinds.resuming.record import (
    complete_steps,
    lost,
    restarts_quantity,
    spec_of,
    steps_lost_quantity,
)
from ddp_viz.kinds.resuming.spec import RestartSpec
from ddp_viz.model.timeline import record
from tests.conftest import load_recording

EVENTS = load_recording("resuming-2-ranks.jsonl")
OUTCOME = next(e for e in EVENTS if e.kind == "restart_outcome")


def test_a_run_is_complete_with_part_one_and_torchruns_outcome_only() -> None:
    assert complete_steps(record(EVENTS)) == 1
    assert complete_steps(record([e for e in EVENTS if e.kind != "restart_outcome"])) == 0
    # the outcome without every rank's part one is not a whole run either
    some = [e for e in EVENTS if not (e.kind == "checkpoint_loaded" and e.rank == 1)]
    assert complete_steps(record(some)) == 0


def test_the_steps_a_death_cost_as_the_quiz_reads_them() -> None:
    rec = record(EVENTS)
    assert lost(OUTCOME) == OUTCOME.killed_after - OUTCOME.resumed_from == 2
    assert steps_lost_quantity(rec, None) == 2.0
    assert restarts_quantity(rec, None) == float(OUTCOME.restarts) == 1.0
    # a death right after a checkpoint costs nothing: 0, not "not known"
    at_once = dataclasses.replace(OUTCOME, killed_after=3, resumed_from=3)
    assert lost(at_once) == 0
    swapped = [at_once if e.kind == "restart_outcome" else e for e in EVENTS]
    assert steps_lost_quantity(record(swapped), None) == 0.0
    assert lost(dataclasses.replace(OUTCOME, killed_after=0, resumed_from=0)) == 0
    # no death seen, or no resume: not a number of steps
    for changed in ({"killed_after": -1}, {"resumed_from": -1}):
        odd = dataclasses.replace(OUTCOME, **changed)
        assert lost(odd) == -1
        cut = [odd if e.kind == "restart_outcome" else e for e in EVENTS]
        assert steps_lost_quantity(record(cut), None) is None
    before = record([e for e in EVENTS if e.kind != "restart_outcome"])
    assert steps_lost_quantity(before, None) is None and restarts_quantity(before, None) is None


def test_the_table_is_the_runs_own_or_the_default() -> None:
    start = next(e for e in EVENTS if e.kind == "run_started")
    table = {**start.scenario["resuming"], "interval": 4}
    mine = dataclasses.replace(start, scenario={**start.scenario, "resuming": table})
    assert spec_of(record([mine])).interval == 4
    bare = {k: v for k, v in start.scenario.items() if k != "resuming"}
    assert spec_of(record([dataclasses.replace(start, scenario=bare)])) == RestartSpec()
