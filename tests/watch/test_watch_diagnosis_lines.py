"""The doctor's diagnosis on the Processes table and the status bar (pure: the recorded 3-rank
crash and fake events, no Qt, no torch): each rank's state after each event, the cause
"failed" and never when an uneven end is the diagnosis, a signal named, the latest hang's
places, and the status bar's lines in full, with the steps and time read from the raw events."""

from __future__ import annotations

import json
from pathlib import Path

from ddp_viz.kinds.watched.diagnosis import finished_status, rank_states, status_line
from ddp_viz.kinds.watched.events import (
    WatchDropped,
    WatchExit,
    WatchFailure,
    WatchHang,
    WatchRankLost,
    WatchSummary,
)
from ddp_viz.model.timeline import RunRecord
from tests.conftest import load_recording
from tests.watch.made_runs import GONE, run

RAISES = "watched-raises-3-ranks.jsonl"  # rank 2 of 3 raises in its step 5 (tests/data/README)


def failure(rank: int, at: float, message: str, step: int = 5) -> WatchFailure:
    return WatchFailure(1, rank, step, at, "RuntimeError", message, f"t.py:{10 + rank} in main")


def test_each_ranks_state_as_the_crash_comes_in() -> None:
    rec = RunRecord()
    seen = []
    for e in load_recording(RAISES):
        rec.apply(e)
        if e.kind in ("watch_failure", "watch_exit"):
            seen.append(rank_states(rec))
    # rank 2 raised first; ranks 0 and 1 then lost it and raised; torchrun's SIGTERMs to them
    # came after their own words, which stand
    assert seen == [
        {2: "failed"},
        {2: "failed", 0: "stopped"},
        {2: "failed", 0: "stopped", 1: "stopped"},
        *[{2: "failed", 0: "stopped", 1: "stopped"}] * 3,
    ]


def test_a_signal_is_said_for_a_killed_rank_and_a_sigterm_for_a_stopped_one() -> None:
    rec = run(
        WatchRankLost(1, 0, 100, 3),
        WatchRankLost(1, 1, 101, 4),
        WatchRankLost(1, 2, 102, 4),
        WatchExit(1, 0, 100, -9, "SIGKILL", 1.0),
        WatchExit(1, 1, 101, -15, "SIGTERM", 2.0),
        WatchSummary(1, 1),
    )
    # rank 2 left no word and its launcher none: it vanished after the cause, "stopped"
    assert rank_states(rec) == {0: "killed (SIGKILL)", 1: "killed (SIGTERM)", 2: "stopped"}
    # a rank that vanished first is the cause: "failed"
    rec = run(WatchRankLost(1, 2, 102, 3), WatchSummary(1, 1))
    assert rank_states(rec) == {2: "failed"}


def test_when_an_uneven_end_is_the_diagnosis_no_rank_is_the_failed_one() -> None:
    # rank 0 finished its 6 steps; rank 2 (last) entered step 7 and lost its peer there
    rec = run(WatchDropped(1, 0, 0, steps=6), failure(2, 3.0, GONE, step=7))
    assert rank_states(rec) == {2: "stopped"}
    # even an error of its own, past rank 0's loop: the uneven end is the diagnosis
    rec = run(WatchDropped(1, 0, 0, steps=6), failure(2, 3.0, "bad batch", step=7))
    assert rank_states(rec) == {2: "stopped"}
    # the same failure in step 6, not past rank 0's loop: rank 0 ended cleanly while rank 2
    # still needed it, so rank 0 is the failed one and rank 2's lost peer follows from it
    rec = run(WatchDropped(1, 0, 0, steps=6), failure(2, 3.0, GONE, step=6))
    assert rank_states(rec) == {0: "failed", 2: "stopped"}
    # a lost peer with no rank that ended: no rank failed of its own, so none is "failed"
    assert rank_states(run(failure(2, 3.0, GONE, step=6))) == {2: "stopped"}
    # … and beside it an error of a rank's own is the failed one
    rec = run(failure(2, 3.0, GONE, step=6), failure(1, 3.1, "bad batch", step=6))
    assert rank_states(rec) == {1: "failed", 2: "stopped"}


def hang(*places: tuple[int, str]) -> WatchHang:
    call = {"seq": 4, "op": "all_reduce", "site": "t.py:3 in main", "sizes": [[3]], "bucket": 0}
    ranks = []
    for rank, state in places:
        s: dict = {"rank": rank, "state": state, "step": 4}
        if state == "inside":
            s["inside"] = call
        elif state == "outside":
            s["stack"] = ["t.py:9 in main: time.sleep(60)"]
        ranks.append(s)
    return WatchHang(1, 3.0, 2.0, ranks)  # type: ignore[arg-type]


def test_the_latest_hang_says_where_the_ranks_are() -> None:
    rec = run(hang((0, "inside"), (1, "outside"), (2, "outside")))
    assert rank_states(rec) == {0: "hung", 1: "stuck", 2: "stuck"}
    # the stall went on: rank 1 joined the all-reduce, rank 2 (last) ended
    rec.apply(hang((0, "inside"), (1, "inside"), (2, "ended")))
    assert rank_states(rec) == {0: "hung", 1: "hung"}
    # an end after the hang is said over its hang state: a timeout, which the hang explains,
    # is no failure of the rank's own; an error of its own is
    rec.apply(failure(1, 9.0, "Socket Timeout"))
    assert rank_states(rec) == {0: "hung", 1: "stopped"}
    rec = run(hang((0, "inside"), (1, "outside"), (2, "outside")))
    rec.apply(hang((0, "inside"), (1, "inside"), (2, "ended")))
    rec.apply(failure(1, 9.0, "bad batch"))
    assert rank_states(rec) == {0: "hung", 1: "failed"}


def test_the_status_bar_says_the_verdict_marked_as_a_finding() -> None:
    rec = run(failure(0, 10.5, GONE), failure(1, 10.4, GONE), failure(2, 10.0, "bad batch"))
    assert status_line(rec) == (
        "Run 1: ✗ rank 2 is the root cause: RuntimeError at t.py:12 in main, in its step 5 "
        "(loop index 4) or after it, before it began any later step"
    )
    rec = run(WatchDropped(1, 0, 0, steps=6), failure(2, 3.0, GONE, step=7))
    assert (
        status_line(rec)
        == "Run 1: ✗ uneven inputs: rank 2 entered step 7 after rank 0 finished 6 steps"
    )
    assert status_line(run(WatchSummary(1, 0))) is None
    assert finished_status(run(WatchSummary(1, 0))) is None


def test_a_finished_crashed_run_says_its_steps_and_time_then_the_verdict() -> None:
    rec = RunRecord()
    for e in load_recording(RAISES):
        rec.apply(e)
    # from the raw lines: the steps whose averaged gradients every rank sent, the training
    # from the first forward to the last bucket's end, and the command's own time
    raw = [json.loads(line) for line in (Path(__file__).parent.parent / "data" / RAISES).open()]
    ranks_of: dict[int, set[int]] = {}
    starts, ends = [], []
    for e in raw:
        if e["event"] == "averaged_grad":
            ranks_of.setdefault(e["step"], set()).add(e["rank"])
        if e["event"] == "timing":
            starts += [s[0] for s in e["spans"].get("forward", [])]
            ends += [b["finished"] for b in e.get("buckets", []) if b.get("finished") is not None]
    steps = sum(len(r) == 3 for r in ranks_of.values())
    assert steps == 4  # step 5 never completed
    whole = next(e["elapsed_s"] for e in raw if e["event"] == "run_finished")
    said = next(e for e in raw if e["event"] == "watch_failure" and e["rank"] == 2)
    assert finished_status(rec) == (
        f"Run 1 ended: 4 step(s) in {max(ends) - min(starts):.3f} s of training ({whole:.2f} s "
        f"with the launcher's start-up) on 3 rank(s). ✗ rank 2 is the root cause: "
        f"RuntimeError at {said['site']}, in its step 5 (loop index 4) or after it, before "
        "it began any later step"
    )
