"""A watched command whose ranks started more than once (torchrun --max-restarts), read
attempt by attempt (pure: events made here). Each rank's k-th process is attempt k; a run that
failed once and then finished is "✓" for its last attempt and names what ended the first; a
restart that failed too is the verdict, with the first attempt's cause after it. Each case has
its twin: the same events from processes that never restarted read as one run."""

from __future__ import annotations

from ddp_viz.kinds.watched import attempts
from ddp_viz.kinds.watched.diagnosis import rank_states
from ddp_viz.kinds.watched.events import (
    WatchDropped,
    WatchedRank,
    WatchExit,
    WatchFailure,
    WatchHang,
    WatchSummary,
)
from ddp_viz.kinds.watched.jumps import jumps
from ddp_viz.model.protocol import RankStarted
from tests.watch.made_runs import GONE, run

SITE = "train.py:19 in main"
# DDP's bucket all-reduce #3, where ranks 0 and 1 wait when rank 2 raises
BUCKET = {
    "seq": 3,
    "op": "all_reduce",
    "site": "train.py:20 in main",
    "sizes": [[5]],
    "bucket": 0,
    "step": 3,
}
FIRST = (
    "rank 2 is the root cause: RuntimeError at train.py:19 in main, in its step 3 (loop index 2) "
    "or after it, before it began any later step"
)


def joined(rank: int, pid: int) -> list:
    return [
        RankStarted(1, rank, pid, []),
        WatchedRank(1, rank, "vm", pid, rank, 3, 0.0, 0.0),
    ]


def start(pids: list[int]) -> list:
    return [e for r, pid in enumerate(pids) for e in joined(r, pid)]


def crash_at_step_3(pids: list[int]) -> list:
    """Rank 2 raises in step 3; ranks 0 and 1 then fail in the all-reduce; torchrun stops
    them (exits by pid, as the launcher wrote them)."""
    return [
        WatchFailure(1, 2, 3, 10.0, "RuntimeError", "flaky disk", SITE),
        WatchFailure(1, 0, 3, 10.5, "RuntimeError", GONE, "train.py:20 in main", inside=BUCKET),
        WatchFailure(1, 1, 3, 10.6, "RuntimeError", GONE, "train.py:20 in main", inside=BUCKET),
        *(WatchDropped(1, r, 0, steps=3) for r in (2, 0, 1)),
    ]


def exits(pids: list[int], codes: list[int]) -> list:
    return [WatchExit(1, r, pid, code, "SIGTERM" if code == -15 else "", 0.0)
            for r, (pid, code) in enumerate(zip(pids, codes, strict=True))]  # fmt: skip


def clean(pids: list[int], steps: int = 6) -> list:
    return [WatchDropped(1, r, 0, steps=steps) for r in range(len(pids))]


ONE, TWO = [101, 102, 103], [201, 202, 203]


def recovered():
    return run(
        *start(ONE), *crash_at_step_3(ONE),
        *start(TWO), *clean(TWO),
        *exits(ONE, [-15, -15, 1]), *exits(TWO, [0, 0, 0]),
        WatchSummary(1, 0),
    )  # fmt: skip


def test_a_run_that_failed_once_then_finished_is_well_for_its_last_attempt() -> None:
    rec = recovered()
    assert attempts.count(rec) == 2
    assert attempts.verdict(rec) == (
        "ddp-viz verdict: ✓ attempt 2 of 2 ran to the end (no hang, no crash, no NaN, no "
        f"desync and no straggler found); attempt 1 failed: {FIRST}"
    )
    found = attempts.findings(rec)
    assert [key for key, _ in found] == ["attempt1"]
    said = found[0][1]
    assert said[0].startswith("✗ attempt 1 of 2: crash: rank 2 raised RuntimeError: flaky disk")
    assert said[-1] == (
        "then every rank started again in a new process, as torchrun --max-restarts does"
    )
    # the processes of the last attempt all ended well: no rank reads failed or stopped
    assert rank_states(rec) == {}
    assert jumps(rec) == {}  # the first attempt's steps were counted again: nothing to jump to


def test_its_twin_without_the_restart_is_the_crash_it_was() -> None:
    rec = run(*start(ONE), *crash_at_step_3(ONE), *exits(ONE, [-15, -15, 1]), WatchSummary(1, 1))
    assert attempts.count(rec) == 1
    assert attempts.verdict(rec) == "ddp-viz verdict: " + FIRST
    assert [key for key, _ in attempts.findings(rec)] == ["crash"]
    assert rank_states(rec) == {0: "stopped", 1: "stopped", 2: "failed"}
    assert attempts.records(rec) == [rec]


REFUSED = "Gloo connectFullMesh failed with [pair.cc:152] timed out connecting: Connection refused"


def restart_failing(message: str, kind: str = "RuntimeError"):
    return run(
        *start(ONE), *crash_at_step_3(ONE),
        *start(TWO),
        WatchFailure(1, 1, 0, 20.0, kind, message, "train.py:8 in main"),
        WatchFailure(1, 0, 0, 20.1, kind, message, "train.py:8 in main"),
        *exits(ONE, [-15, -15, 1]), *exits(TWO, [1, 1, -15]),
        WatchSummary(1, 1),
    )  # fmt: skip


def test_a_restart_that_failed_too_is_the_verdict_with_the_first_cause_after_it() -> None:
    rec = restart_failing("shard-1.pt: no such file", "FileNotFoundError")
    assert attempts.verdict(rec) == (
        "ddp-viz verdict: rank 1 is the root cause: FileNotFoundError at train.py:8 in main, "
        "before its first step (in attempt 2 of 2); attempt 1 failed: " + FIRST
    )
    assert [key for key, _ in attempts.findings(rec)] == ["attempt1", "crash"]
    # the table says what the last processes did: rank 1 failed first, rank 2 was stopped
    assert rank_states(rec)[1] == "failed" and rank_states(rec)[2] == "killed (SIGTERM)"


def test_a_restart_that_could_not_connect_blames_torchruns_store_not_a_rank() -> None:
    rec = restart_failing(REFUSED)
    assert attempts.verdict(rec) == (
        "ddp-viz verdict: attempt 2 of 2 failed before its first step: the restarted ranks "
        "could not connect, as torchrun's store still held the addresses of the ranks before "
        "them; attempt 1 failed: " + FIRST
    )
    found = attempts.findings(rec)
    assert [key for key, _ in found] == ["attempt1", "crash", "stale_store"]
    assert found[-1][1] == [attempts.STALE_STORE]
    assert "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1" in attempts.STALE_STORE
    # its twin: the same words from the ranks' first start are no stale store
    first = run(
        *start(ONE),
        WatchFailure(1, 1, 0, 20.0, "RuntimeError", REFUSED, "train.py:8 in main"),
        WatchSummary(1, 1),
    )
    assert "store" not in attempts.verdict(first)
    assert "stale_store" not in dict(attempts.findings(first))
    # and a restart refused after its first step (a peer gone mid-run) is no stale store either
    late = run(
        *start(ONE), *crash_at_step_3(ONE), *start(TWO),
        WatchFailure(1, 1, 4, 20.0, "RuntimeError", REFUSED, "train.py:30 in main"),
        WatchSummary(1, 1),
    )  # fmt: skip
    assert not attempts.stale_store(attempts.last(late))
    # gloo's other words for it: every restarted rank timed out waiting for its peers
    timed = restart_failing("Gloo connectFullMesh failed with [pair.h:311] Connect timeout [none]")
    assert attempts.verdict(timed).startswith("ddp-viz verdict: attempt 2 of 2 failed before")


def test_events_go_to_the_attempt_of_the_process_that_sent_them() -> None:
    events = [
        *start(ONE), *crash_at_step_3(ONE),
        *joined(0, 201), *joined(2, 203),  # rank 1's new process joins last
        WatchDropped(1, 1, 0, steps=3),  # still rank 1's first process: its last word
        *joined(1, 202),
        WatchDropped(1, 1, 0, steps=6),
        *exits(ONE, [-15, -15, 1]), WatchExit(1, 1, 202, 0, "", 0.0),
        WatchSummary(1, 0),
    ]  # fmt: skip
    first, second = attempts.split(run(*events).events)
    assert [e.kind for e in first[:1] + second[:1]] == ["run_started", "run_started"]
    assert {e.pid for e in first if isinstance(e, WatchExit)} == set(ONE)
    assert [e.pid for e in second if isinstance(e, WatchExit)] == [202]
    late = [e for e in first if isinstance(e, WatchDropped) and e.rank == 1]
    assert [e.steps for e in late] == [3, 3]  # its step-3 word, and its last before 202 joined
    assert [e.steps for e in second if isinstance(e, WatchDropped)] == [6]
    assert [e.kind for e in second][-1] == "watch_summary"  # the command's end: the last's
    assert not any(e.kind == "watch_summary" for e in first)


def test_a_rank_that_joins_again_from_the_same_process_is_no_new_attempt() -> None:
    rec = run(*start(ONE), *joined(1, 102), *clean(ONE), WatchSummary(1, 0))
    assert attempts.count(rec) == 1 and attempts.records(rec) == [rec]


def test_the_split_follows_a_record_that_grows() -> None:
    rec = run(*start(ONE), *crash_at_step_3(ONE))
    assert attempts.count(rec) == 1
    for e in [*start(TWO), *clean(TWO), WatchSummary(1, 0)]:
        rec.apply(e)
    assert attempts.count(rec) == 2
    assert attempts.verdict(rec).startswith("ddp-viz verdict: ✓ attempt 2 of 2 ran to the end")
    assert len(attempts.records(rec)) == 2


def test_the_finding_of_an_earlier_attempt_is_its_whole_crash_then_the_restart() -> None:
    found = dict(attempts.findings(recovered()))
    assert found["attempt1"] == [
        "✗ attempt 1 of 2: crash: rank 2 raised RuntimeError: flaky disk — at train.py:19 in "
        "main, in its step 3 (loop index 2) or after it, before it began any later step (the "
        "first failure: the cause)",
        "  then rank 0 failed inside DDP's gradient all_reduce #3, in its step 3 (loop index 2): "
        "connection closed by a peer, because rank 2 had failed",
        "  then rank 1 failed inside DDP's gradient all_reduce #3, in its step 3 (loop index 2): "
        "connection closed by a peer, because rank 2 had failed",
        "then every rank started again in a new process, as torchrun --max-restarts does",
    ]


THREE = [301, 302, 303]


def test_three_attempts_name_each_earlier_failure_in_order() -> None:
    killed = [WatchExit(1, 1, 202, -9, "SIGKILL", 0.0)]
    rec = run(
        *start(ONE), *crash_at_step_3(ONE), *exits(ONE, [-15, -15, 1]),
        *start(TWO), WatchDropped(1, 0, 0, steps=2), *killed,
        *start(THREE), *clean(THREE), *exits(THREE, [0, 0, 0]),
        WatchSummary(1, 0),
    )  # fmt: skip
    assert attempts.count(rec) == 3 and len(attempts.records(rec)) == 3
    assert [key for key, _ in attempts.findings(rec)] == ["attempt1", "attempt2"]
    assert attempts.verdict(rec) == (
        "ddp-viz verdict: ✓ attempt 3 of 3 ran to the end (no hang, no crash, no NaN, no desync "
        f"and no straggler found); attempt 1 failed: {FIRST}; attempt 2 failed: rank 1 is the "
        "root cause: killed by SIGKILL, before any step of its reached ddp-viz"
    )
    said = dict(attempts.findings(rec))["attempt2"]
    assert said[0].startswith("✗ attempt 2 of 3: crash: rank 1 was killed by SIGKILL")


def test_an_earlier_attempt_that_ended_well_is_not_said() -> None:
    """A script that starts its ranks twice on purpose (two phases): nothing to say of the
    first, and the verdict is the last one's alone."""
    rec = run(
        *start(ONE), *clean(ONE), *exits(ONE, [0, 0, 0]),
        *start(TWO), *clean(TWO), WatchSummary(1, 0),
    )  # fmt: skip
    assert attempts.count(rec) == 2
    assert attempts.findings(rec) == []
    healthy = "ddp-viz verdict: ✓ no hang, no crash, no NaN, no desync and no straggler found"
    assert attempts.verdict(rec) == healthy


def test_a_hang_goes_to_the_attempt_whose_processes_were_running() -> None:
    first = WatchHang(1, 3.0, 2.0, [{"rank": 0, "state": "outside", "quiet_s": 3.0}])
    second = WatchHang(1, 4.0, 2.0, [{"rank": 1, "state": "outside", "quiet_s": 4.0}])
    events = [*start(ONE), first, *crash_at_step_3(ONE), *start(TWO), second, WatchSummary(1, 1)]
    one, two = attempts.split(run(*events).events)
    assert [e for e in one if isinstance(e, WatchHang)] == [first]
    assert [e for e in two if isinstance(e, WatchHang)] == [second]


def test_a_run_of_one_start_splits_into_itself() -> None:
    events = run(*start(ONE), *clean(ONE), WatchSummary(1, 0)).events
    assert attempts.split(events) == [events]
    assert attempts.split(events[:1]) == [events[:1]]  # no rank joined yet


def test_the_record_keeps_one_fold_of_the_starts_and_rebuilds_the_attempts_as_it_grows() -> None:
    rec = run(*start(ONE), *crash_at_step_3(ONE), *start(TWO))
    subs = attempts.records(rec)
    assert attempts.records(rec) is subs or attempts.records(rec) == subs
    assert [s is t for s, t in zip(attempts.records(rec), subs, strict=True)] == [True, True]
    part = rec.parts[attempts.PART]
    end = WatchSummary(1, 0)
    rec.apply(end)
    assert rec.parts[attempts.PART] is part
    assert attempts.records(rec)[-1].events[-1] == end
    assert end not in attempts.records(rec)[0].events


def test_the_last_attempts_hang_has_its_stacks_where_asked_an_earlier_ones_never() -> None:
    def hang(rank: int, frame: str) -> WatchHang:
        place = {"rank": rank, "state": "outside", "quiet_s": 3.0, "stack": [frame]}
        return WatchHang(1, 3.0, 2.0, [place])

    rec = run(
        *start(ONE), hang(0, "train.py:7 in first"), *crash_at_step_3(ONE),
        *start(TWO), hang(1, "train.py:9 in second"),
    )  # fmt: skip
    with_stacks = [line for _, said in attempts.findings(rec) for line in said]
    assert "    train.py:9 in second" in with_stacks
    assert "    train.py:7 in first" not in with_stacks  # an earlier attempt: said in short
    without = [line for _, said in attempts.findings(rec, stacks=False) for line in said]
    assert "    train.py:9 in second" not in without


def test_events_after_the_split_go_where_a_split_of_the_whole_run_puts_them() -> None:
    rec = run(*start(ONE), *crash_at_step_3(ONE), *start(TWO))
    assert len(attempts.records(rec)) == 2  # split here; what follows is forwarded
    later = [*clean(TWO), *exits(ONE, [-15, -15, 1]), *exits(TWO, [0, 0, 0]), WatchSummary(1, 0)]
    for e in later:
        rec.apply(e)
        attempts.records(rec)  # asked at every event, as the watch does
    assert [sub.events for sub in attempts.records(rec)] == attempts.split(rec.events)
    # a third process of rank 0 joins (the listener sends rank_started, then watched_rank)
    for e in joined(0, 301):
        rec.apply(e)
        subs = attempts.records(rec)
    assert [sub.events for sub in subs] == attempts.split(rec.events) and len(subs) == 3
