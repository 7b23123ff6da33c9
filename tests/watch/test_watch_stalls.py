"""A hang the run got past (pure: events made here). Rank 0 checkpointing or evaluating alone
holds the others past the hang threshold, then arrives: the run goes on and ends well. The
hang named live becomes a stall that resolved: said in one line, not as the diagnosis, and a
run found well says it had one. Each case has its twin where the hang did not end."""

from __future__ import annotations

from ddp_viz.kinds.watched import attempts, stalls
from ddp_viz.kinds.watched.diagnosis import rank_states
from ddp_viz.kinds.watched.events import (
    WatchDropped,
    WatchFailure,
    WatchHang,
    WatchNonFinite,
    WatchRankLost,
    WatchSummary,
)
from ddp_viz.model import protocol
from tests.watch.made_runs import GONE, run

HEALTHY = "ddp-viz verdict: ✓ no hang, no crash, no NaN, no desync and no straggler found"
ALL_REDUCE = {"seq": 4, "op": "all_reduce", "site": "train.py:14 in main", "sizes": [[5]],
              "bucket": 0, "step": 3}  # fmt: skip
SAVE = ["train.py:23 in <module>: sys.exit(main())", "train.py:17 in main: save(model)"]


def checkpoint_hang() -> WatchHang:
    """Ranks 1 and 2 wait in DDP's all-reduce #4; rank 0 is saving, in no collective."""
    return WatchHang(1, 2.0, 2.0, [
        {"rank": 0, "state": "outside", "quiet_s": 2.0, "step": 3, "stack": SAVE},
        {"rank": 1, "state": "inside", "quiet_s": 2.0, "step": 4, "inside": ALL_REDUCE},
        {"rank": 2, "state": "inside", "quiet_s": 2.0, "step": 4, "inside": ALL_REDUCE},
    ])  # fmt: skip


def step(rank: int, n: int) -> protocol.Timing:
    return protocol.Timing(1, n, rank, {"forward": [[float(n), n + 0.1]]})


def ended(*ranks: int, steps: int = 6) -> list[WatchDropped]:
    return [WatchDropped(1, r, 0, steps=steps) for r in ranks]


STALL = (
    "a stall that resolved: no rank moved for 2.0 s (threshold 2.0 s); the others waited in "
    "all_reduce #4 for rank 0 (running train.py:17 in main: save(model)), then every rank "
    "went on"
)


def test_a_hang_every_rank_went_on_from_is_a_stall_and_the_run_is_well() -> None:
    rec = run(checkpoint_hang(), *(step(r, 4) for r in (0, 1, 2)), *ended(0, 1, 2),
              WatchSummary(1, 0))  # fmt: skip
    assert attempts.findings(rec) == [("stall0", [STALL])]
    assert attempts.verdict(rec) == (
        f"{HEALTHY}; a stall resolved (the others waited in all_reduce #4 for rank 0, then "
        "every rank went on)"
    )
    assert rank_states(rec) == {}  # nobody hung in the Processes table
    assert stalls.resolved(rec.events) == [checkpoint_hang()]


def test_its_last_words_count_as_going_on_at_the_end_of_a_run() -> None:
    """A barrier after the loop: the ranks sent no later step, only their clean last word."""
    rec = run(checkpoint_hang(), *ended(0, 1, 2), WatchSummary(1, 0))
    assert [key for key, _ in attempts.findings(rec)] == ["stall0"]
    assert attempts.verdict(rec).startswith(HEALTHY + "; a stall resolved")


def test_twin_a_hang_one_rank_never_went_on_from_is_the_diagnosis() -> None:
    """Ranks 1 and 2 said their last word (the command was stopped); rank 0 never moved."""
    rec = run(checkpoint_hang(), *ended(1, 2), WatchSummary(1, 0))
    assert attempts.verdict(rec).startswith("ddp-viz verdict: hang: rank 0 never joined")
    assert [key for key, _ in attempts.findings(rec)] == ["hang0"]
    assert rank_states(rec) == {0: "stuck", 1: "hung", 2: "hung"}


def test_twin_a_hang_that_ended_in_a_failure_is_the_diagnosis() -> None:
    fail = WatchFailure(1, 1, 4, 9.0, "RuntimeError", GONE, "train.py:14 in main")
    rec = run(checkpoint_hang(), step(0, 4), step(2, 4), fail, WatchSummary(1, 1))
    assert not stalls.resolved(rec.events)
    lost = run(checkpoint_hang(), step(0, 4), step(2, 4), WatchRankLost(1, 1, 101, 4))
    assert not stalls.resolved(lost.events)


def test_a_threads_error_after_the_hang_does_not_undo_its_going_on() -> None:
    thread = WatchFailure(1, 0, 4, 9.0, "ValueError", "bad", "t.py:3 in fetch", thread="fetch")
    rec = run(checkpoint_hang(), thread, *(step(r, 4) for r in (0, 1, 2)), WatchSummary(1, 0))
    assert stalls.resolved(rec.events) == [checkpoint_hang()]
    assert "stall0" in dict(attempts.findings(rec))


def test_a_stall_beside_another_finding_leaves_the_verdict_to_it() -> None:
    nan = WatchNonFinite(1, 5, 1, float("inf"), [])
    rec = run(checkpoint_hang(), *(step(r, 4) for r in (0, 1, 2)), nan, WatchSummary(1, 0))
    said = attempts.verdict(rec)
    assert (
        said.startswith("ddp-viz verdict: rank 1 is the first non-finite") and "stall" not in said
    )
    assert [key for key, _ in attempts.findings(rec)] == ["non_finite", "stall0"]


def test_a_hang_that_names_no_rank_is_never_resolved() -> None:
    empty = WatchHang(1, 2.0, 2.0, [])
    rec = run(empty, *(step(r, 4) for r in (0, 1, 2)))
    assert stalls.resolved(rec.events) == []


def test_the_settled_record_follows_a_record_that_grows() -> None:
    rec = run(checkpoint_hang(), step(0, 4), step(1, 4))
    assert stalls.settled(rec) == (rec, [])  # rank 2 has not moved yet
    rec.apply(step(2, 4))
    settled, past = stalls.settled(rec)
    assert past == [checkpoint_hang()] and settled is not rec
    assert not [e for e in settled.events if isinstance(e, WatchHang)]
    assert len(settled.events) == len(rec.events) - 1
    assert stalls.settled(rec)[0] is settled  # built once for these events


def two_away() -> WatchHang:
    """Rank 2 waits in all-reduce #4; ranks 0 and 1 are busy elsewhere."""
    return WatchHang(1, 3.0, 2.0, [
        {"rank": 0, "state": "outside", "quiet_s": 3.0, "step": 3, "stack": SAVE},
        {"rank": 1, "state": "outside", "quiet_s": 3.0, "step": 3},
        {"rank": 2, "state": "inside", "quiet_s": 3.0, "step": 4, "inside": ALL_REDUCE},
    ])  # fmt: skip


def test_two_ranks_the_others_waited_for_are_both_named_and_two_stalls_counted() -> None:
    rec = run(
        checkpoint_hang(), *(step(r, 4) for r in (0, 1, 2)),
        two_away(), *(step(r, 5) for r in (0, 1, 2)),
        *ended(0, 1, 2), WatchSummary(1, 0),
    )  # fmt: skip
    found = dict(attempts.findings(rec))
    assert found["stall1"] == [
        "a stall that resolved: no rank moved for 3.0 s (threshold 2.0 s); the others waited "
        "in all_reduce #4 for rank 0, rank 1, then every rank went on"
    ]
    assert attempts.verdict(rec) == (
        f"{HEALTHY}; 2 stalls resolved (the others waited in all_reduce #4 for rank 0, then "
        "every rank went on)"
    )


def test_a_stall_with_every_rank_quiet_says_so() -> None:
    quiet = WatchHang(1, 2.5, 2.0, [
        {"rank": r, "state": "outside", "quiet_s": 2.5, "step": 3} for r in (0, 1, 2)
    ])  # fmt: skip
    rec = run(quiet, *(step(r, 4) for r in (0, 1, 2)), WatchSummary(1, 0))
    assert dict(attempts.findings(rec))["stall0"] == [
        "a stall that resolved: no rank moved for 2.5 s (threshold 2.0 s); every rank was quiet "
        "at once, then every rank went on"
    ]


def test_a_last_word_before_any_step_counts_as_going_on() -> None:
    """Ranks stalled before their first step, then ended cleanly without one (steps 0)."""
    rec = run(checkpoint_hang(), *ended(0, 1, 2, steps=0), WatchSummary(1, 0))
    assert stalls.resolved(rec.events) == [checkpoint_hang()]
    # a last word that says it was cut short (steps -1) is no going on
    cut = run(checkpoint_hang(), *ended(0, 1, 2, steps=-1), WatchSummary(1, 0))
    assert stalls.resolved(cut.events) == []


def test_a_rank_lost_before_it_went_on_keeps_the_hang_and_after_it_not() -> None:
    went_on = [step(r, 4) for r in (0, 1, 2)]
    lost = WatchRankLost(1, 1, 101, 4)
    before = run(checkpoint_hang(), step(0, 4), lost, step(1, 4), step(2, 4))
    assert stalls.resolved(before.events) == []
    # once every rank went on, the stall is over: a later loss is a failure of its own
    after = run(checkpoint_hang(), *went_on, lost)
    assert stalls.resolved(after.events) == [checkpoint_hang()]


def test_a_stall_with_every_rank_in_one_collective_says_every_rank_was_quiet() -> None:
    inside = WatchHang(1, 2.5, 2.0, [
        {"rank": r, "state": "inside", "quiet_s": 2.5, "step": 4, "inside": ALL_REDUCE}
        for r in (0, 1, 2)
    ])  # fmt: skip
    rec = run(inside, *(step(r, 4) for r in (0, 1, 2)))
    assert (
        "every rank was quiet at once, then every rank went on"
        in dict(attempts.findings(rec))["stall0"][0]
    )
