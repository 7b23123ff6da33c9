"""Another thread's uncaught error, read by the doctor (pure: events made here). It is no end
of its rank: alone it is said and named in the verdict, never "✓"; beside a hang on its rank it
says why the rank waits; on another rank than the hang's it is said, not blamed."""

from __future__ import annotations

from ddp_viz.kinds.watched.checks import doctoring, findings, rank_ends, verdict
from ddp_viz.kinds.watched.events import WatchDropped, WatchFailure, WatchHang, WatchSummary
from ddp_viz.kinds.watched.jumps import jumps
from ddp_viz.kinds.watched.threads import first_each, hang_note, when
from tests.watch.made_runs import run

HEALTHY = "ddp-viz verdict: ✓ no hang, no crash, no NaN, no desync and no straggler found"
SITE = "t.py:12 in prefetch"


def thread_error(rank: int, at: float, step: int = 2, name: str = "prefetch", kind="ValueError"):
    return WatchFailure(1, rank, step, at, kind, "record 3 is corrupt", SITE, thread=name)


def ended(*ranks: int) -> list[WatchDropped]:
    return [WatchDropped(1, r, 0, steps=6) for r in ranks]


def lines(rec) -> list[str]:  # type: ignore[no-untyped-def]
    return [line for _, said in findings(rec) for line in said]


def test_a_threads_error_alone_is_said_and_named_in_the_verdict_but_ends_no_rank() -> None:
    rec = run(thread_error(1, 3.0), *ended(0, 1, 2), WatchSummary(1, 0))
    assert lines(rec) == [
        "✗ rank 1's thread 'prefetch' raised ValueError: record 3 is corrupt — at t.py:12 in "
        "prefetch, while the rank was in its step 2 (loop index 1); the thread ended, the rank "
        "went on without it"
    ]
    assert verdict(rec) == (
        "ddp-viz verdict: no hang, crash, NaN or desync, but rank 1's thread 'prefetch' raised "
        "ValueError at t.py:12 in prefetch (the rank went on without it)"
    )
    assert rank_ends(rec) == [] and doctoring(rec).failures == []
    # the same run without it: healthy
    assert verdict(run(*ended(0, 1, 2), WatchSummary(1, 0))) == HEALTHY


def test_each_threads_first_error_is_said_once_earliest_first() -> None:
    errors = [
        thread_error(2, 5.0, name="logger"),
        thread_error(1, 4.0),
        thread_error(1, 4.5),  # the same thread again (a restarted one of the same name)
        thread_error(0, 4.0, name="logger"),
    ]
    assert [(f.rank, f.thread, f.at) for f in first_each(errors)] == [
        (0, "logger", 4.0),
        (1, "prefetch", 4.0),
        (2, "logger", 5.0),
    ]
    assert when(0) == "before the rank's first step"
    assert when(1) == "while the rank was in its step 1 (loop index 0)"


def _hang(outside: int, inside: list[int]) -> WatchHang:
    call = {"seq": 4, "op": "all_reduce", "site": "t.py:30 in main", "bucket": 0, "step": 3}
    ranks = [
        {"rank": r, "state": "inside", "quiet_s": 2.0, "step": 4, "inside": call} for r in inside
    ]
    ranks.append(
        {
            "rank": outside,
            "state": "outside",
            "quiet_s": 2.0,
            "step": 3,
            "stack": ["t.py:25 in main: x, y = batches.get()"],
        }
    )
    return WatchHang(1, 2.0, 2.0, ranks)


def test_beside_a_hang_on_its_rank_it_says_why_the_rank_waits() -> None:
    rec = run(thread_error(2, 1.0), _hang(2, [0, 1]))
    assert verdict(rec).startswith("ddp-viz verdict: hang: rank 2 never joined all_reduce #4")
    assert verdict(rec).endswith(f"; rank 2's thread 'prefetch' had raised ValueError at {SITE}")
    # it explains the hang, and came first: said first (the stage shows the first lines)
    assert [k for k, _ in findings(rec)] == ["thread", "hang0"]
    # a thread's error on a rank the hang does not name is said after it, not blamed
    other = run(thread_error(0, 1.0), _hang(2, [0, 1]))
    assert "had raised" not in verdict(other)
    assert [k for k, _ in findings(other)] == ["hang0", "thread"]
    assert lines(other)[-1].startswith("✗ rank 0's thread 'prefetch'")


def test_the_hangs_ranks_are_those_in_no_communication_and_those_missing_from_a_call() -> None:
    # every rank outside any collective: no call is missing anyone, rank 1 is named as outside
    outside = {"rank": 1, "state": "outside", "quiet_s": 2.0, "stack": ["t.py:25 in main: f()"]}
    asleep = {**outside, "rank": 0}
    rec = run(thread_error(1, 1.0), WatchHang(1, 2.0, 2.0, [asleep, outside]))
    assert verdict(rec).endswith(f"; rank 1's thread 'prefetch' had raised ValueError at {SITE}")
    # rank 2 missing from the all-reduce, inside a barrier of its own: named as absent
    reduce = {"seq": 4, "op": "all_reduce", "site": "t.py:30 in main", "bucket": 0, "step": 3}
    barrier = {"seq": 4, "op": "barrier", "site": "t.py:33 in main"}
    ranks = [
        {"rank": 0, "state": "inside", "quiet_s": 2.0, "step": 4, "inside": reduce},
        {"rank": 1, "state": "inside", "quiet_s": 2.0, "step": 4, "inside": reduce},
        {"rank": 2, "state": "inside", "quiet_s": 2.0, "step": 3, "inside": barrier},
    ]
    hang = WatchHang(1, 2.0, 2.0, ranks)
    note = f"; rank 2's thread 'prefetch' had raised ValueError at {SITE}"
    assert hang_note(hang, [thread_error(2, 1.0)]) == note
    assert hang_note(hang, [thread_error(0, 1.0)]) == ""  # rank 0 is in the all-reduce


def test_a_thread_error_with_no_message_says_its_type_alone() -> None:
    quiet = WatchFailure(1, 1, 2, 3.0, "StopIteration", "", SITE, thread="prefetch")
    rec = run(quiet, *ended(0, 1, 2), WatchSummary(1, 0))
    assert lines(rec)[0].startswith(
        f"✗ rank 1's thread 'prefetch' raised StopIteration — at {SITE}"
    )


def test_a_crash_stays_the_verdict_and_the_threads_error_is_said_beside_it() -> None:
    own = WatchFailure(1, 1, 4, 6.0, "RuntimeError", "bad shape", "t.py:40 in main")
    rec = run(thread_error(2, 1.0), own, WatchSummary(1, 1))
    assert verdict(rec).startswith("ddp-viz verdict: rank 1 is the root cause: RuntimeError")
    assert [r.rank for r in rank_ends(rec)] == [1]
    assert any("rank 2's thread 'prefetch' raised ValueError" in line for line in lines(rec))


def test_the_threads_line_leads_to_its_rank_its_step_and_its_frames() -> None:
    stack = ["t.py:40 in <module>: main()", "t.py:12 in prefetch: raise ValueError(x)"]
    first = WatchFailure(1, 2, 3, 1.0, "ValueError", "bad", SITE, stack, thread="prefetch")
    later = WatchFailure(1, 0, 5, 2.0, "KeyError", "k", SITE, thread="logger")
    j = jumps(run(later, first, _hang(2, [0, 1])))["thread"]
    assert (j.step, j.rank, j.stack, j.no_stack) == (2, 2, stack, "")
    assert j.said[0].startswith("✗ rank 2's thread 'prefetch' raised ValueError")
    # no frame of the user's code: says so instead of an empty stack
    bare = WatchFailure(1, 1, 0, 1.0, "ValueError", "bad", "?", thread="prefetch")
    j = jumps(run(bare, *ended(0, 1, 2), WatchSummary(1, 0)))["thread"]
    assert (j.step, j.rank, j.no_stack) == (None, 1, "its hook found no frame of your code")
