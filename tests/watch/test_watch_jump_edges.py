"""Where a diagnosis leads at its edges (pure: fake events, no Qt, no torch): a failure before
the first step and in the first, a hang's rank when some ranks ended and none waits inside a
call, an uneven end's stack from the failure or else the hang, the first non-finite value and
desync by their lowest rank, and the Diagnosis tab's words when there is no step or rank."""

from __future__ import annotations

from ddp_viz.kinds.watched.checks import findings
from ddp_viz.kinds.watched.events import (
    WatchDigests,
    WatchDropped,
    WatchExit,
    WatchFailure,
    WatchHang,
    WatchNonFinite,
    WatchRankLost,
    WatchSummary,
)
from ddp_viz.kinds.watched.jumps import Jump, jump_text, jumps, link_hint, shown_step
from ddp_viz.model.timeline import RunRecord
from tests.watch.made_runs import GONE, run


def failure(rank: int, step: int, message: str = "bad batch", stack: list[str] | None = None):
    return WatchFailure(
        1, rank, step, 1.0 + rank, "RuntimeError", message, "t.py:9 in main", stack=stack or []
    )


def test_a_failure_in_the_first_step_and_before_it() -> None:
    j = jumps(run(failure(2, 1, stack=["t.py:9 in main: raise"])))["crash"]
    assert (j.step, j.rank, j.stack, j.no_stack) == (0, 2, ["t.py:9 in main: raise"], "")
    # before its first forward (DDP's construction): no step to show, its rank's frames
    j = jumps(run(failure(2, 0)))["crash"]
    assert (j.step, j.rank, j.stack) == (None, 2, [])
    assert j.no_stack == "its hook found no frame of your code"
    assert shown_step(j, 5) is None
    assert link_hint(j) == "the first step, rank 2"
    said = jump_text(j, 5)
    assert said[:3] == [
        "rank 2's stack, innermost last (ddp-viz's frames left out):",
        "  none: its hook found no frame of your code",
        "",
    ]


def test_a_rank_that_left_no_word_leads_to_the_step_the_others_waited_in() -> None:
    bucket = {"seq": 9, "op": "all_reduce", "site": "t.py:40 in main", "bucket": 0, "step": 5}
    rec = run(
        WatchRankLost(1, 2, 102, 3),
        WatchFailure(1, 0, 6, 1.0, "RuntimeError", GONE, "t.py:9 in main", inside=bucket),
        WatchSummary(1, 1),
    )
    j = jumps(rec)["crash"]
    # the others were in step 6's all-reduce: rank 2 finished step 5, it went in step 6
    assert (j.step, j.rank, j.stack) == (5, 2, [])
    assert j.no_stack == "rank 2 left no word of its own (vanished): no stack"
    rec = run(WatchRankLost(1, 2, 102, 3), WatchExit(1, 2, 102, -9, "SIGKILL", 1.0))
    assert jumps(rec)["crash"].step == 2  # its own count: step 3


def place(rank: int, state: str, step: int | None = 5, stack: list[str] | None = None) -> dict:
    s: dict = {"rank": rank, "state": state}
    if step is not None:
        s["step"] = step
    if state == "inside":
        s["inside"] = {"seq": 4, "op": "all_reduce", "site": "t.py:3 in main", "sizes": [[3]]}
    if stack:
        s["stack"] = stack
    return s


def test_a_hang_leads_to_the_first_rank_missing_from_the_call_the_others_are_in() -> None:
    h = WatchHang(
        1,
        3.0,
        2.0,
        [place(0, "inside"), place(1, "ended", 6), place(2, "outside", 5, ["t.py:7 in main"])],
    )
    j = jumps(run(h))["hang0"]
    assert (j.step, j.rank, j.stack) == (5, 1, [])
    assert j.no_stack == "rank 1 sent no stack (ended)"


def test_with_no_rank_inside_a_call_the_last_rank_in_none_is_the_one() -> None:
    h = WatchHang(
        1,
        3.0,
        2.0,
        [
            place(0, "outside", 5, ["t.py:5 in main"]),
            place(1, "ended", 4),
            place(2, "outside", 7, ["t.py:7 in main"]),
        ],
    )
    j = jumps(run(h))["hang0"]
    assert (j.step, j.rank, j.stack, j.no_stack) == (6, 2, ["t.py:7 in main"], "")
    # every rank ended: the first listed, with no step of its own known
    h = WatchHang(1, 3.0, 2.0, [place(2, "ended", None), place(0, "ended", 4)])
    rec = run(h)
    rec.apply(WatchHang(1, 9.0, 2.0, [place(1, "outside", 8, ["t.py:8 in main"])]))
    found = jumps(rec)
    assert (found["hang0"].rank, found["hang0"].step) == (2, None)
    assert (found["hang1"].rank, found["hang1"].step, found["hang1"].stack) == (
        1,
        7,
        ["t.py:8 in main"],
    )


def test_an_uneven_ends_stack_is_the_late_ranks_failure_or_else_its_place_in_the_hang() -> None:
    bucket = {"seq": 9, "op": "all_reduce", "site": "t.py:40 in main", "bucket": 0, "step": 6}
    late = {"rank": 2, "state": "inside", "step": 7, "inside": bucket, "stack": ["t.py:40 in main"]}
    on_time = {"rank": 1, "state": "inside", "step": 6, "inside": bucket, "stack": ["t.py:41"]}
    rec = run(WatchDropped(1, 0, 0, steps=6), WatchHang(1, 3.0, 2.0, [on_time, late]))
    j = jumps(rec)["uneven"]
    assert (j.step, j.rank, j.stack, j.no_stack) == (6, 2, ["t.py:40 in main"], "")
    assert j.lesson == "uneven-inputs"
    rec.apply(failure(2, 7, GONE, stack=["t.py:40 in main", "gloo.py:1 in wait"]))
    assert jumps(rec)["uneven"].stack == ["t.py:40 in main", "gloo.py:1 in wait"]
    # no stack anywhere: said so
    rec = run(WatchDropped(1, 0, 0, steps=6), failure(2, 7, GONE))
    j = jumps(rec)["uneven"]
    assert (j.rank, j.stack, j.no_stack) == (2, [], "rank 2 sent no stack")


def test_the_first_non_finite_value_and_desync_by_step_then_lowest_rank() -> None:
    rec = run(
        WatchNonFinite(1, 7, 2, float("nan"), ["w"]),
        WatchNonFinite(1, 7, 1, float("inf"), ["w"]),
        WatchNonFinite(1, 8, 0, None, ["w"]),
    )
    j = jumps(rec)["non_finite"]
    assert (j.step, j.rank, j.no_stack) == (7, 1, "a value, not an exception")
    digests = [WatchDigests(1, 5, r, {"w": "a" if r == 0 else f"b{r}"}) for r in range(3)]
    j = jumps(run(*digests))["desync"]
    assert (j.step, j.rank, j.no_stack) == (5, 1, "a value, not an exception")


def test_the_tab_and_the_hint_when_a_finding_names_no_step_or_no_rank() -> None:
    j = Jump("x", ["✗ something"])
    assert link_hint(j) == "the first step"
    assert jump_text(j, 4) == ["The diagnosis:", "  ✗ something"]
    j = Jump("x", ["✗ a", "  b"], step=2)
    assert link_hint(j) == "step 3"
    assert jump_text(j, 4) == ["Step 3", "", "The diagnosis:", "  ✗ a", "    b"]
    # the step complete: shown as it is; nothing complete yet: no step to show
    assert shown_step(j, 3) == 2 and shown_step(j, 4) == 2
    assert shown_step(j, 2) == 1 and shown_step(j, 1) == 0 and shown_step(j, 0) is None
    assert jump_text(j, 0)[0] == "Step 3"
    j = Jump("x", ["✗ a"], step=2, rank=1, stack=["t.py:1 in main", "t.py:2 in f"])
    assert link_hint(j) == "step 3 and rank 1's stack"
    assert jump_text(j, 2) == [
        "Step 3, rank 1: the stage shows step 2, the last every rank reported (step 3 never "
        "completed)",
        "",
        "rank 1's stack, innermost last (ddp-viz's frames left out):",
        "  t.py:1 in main",
        "  t.py:2 in f",
        "",
        "The diagnosis:",
        "  ✗ a",
    ]


def said(rec: RunRecord, key: str) -> list[str]:
    """The finding's lines as the page says them (without the stacks: the tab shows those)."""
    return next([line.strip() for line in lines] for k, lines in findings(rec, False) if k == key)


def test_each_jump_carries_its_findings_key_and_words() -> None:
    rec = run(failure(0, 6, GONE), failure(2, 5, stack=["t.py:9 in main: raise"]))
    assert jumps(rec)["crash"] == Jump(
        "crash", said(rec, "crash"), 4, 2, ["t.py:9 in main: raise"], ""
    )
    stack = ["t.py:7 in main: train(model)", "t.py:8 in train: time.sleep(9)"]
    h = WatchHang(
        1, 3.0, 2.0, [place(0, "inside"), place(1, "inside"), place(2, "outside", 5, stack)]
    )
    rec = run(h)
    hang = said(rec, "hang0")
    # the stack is the tab's, not the words' (they name the line it runs, its innermost)
    assert not any("t.py:7" in line for line in hang) and "t.py:8" in hang[-1]
    assert jumps(rec)["hang0"] == Jump("hang0", hang, 4, 2, stack, "")
    rec = run(WatchNonFinite(1, 7, 2, float("nan"), ["w"]))
    assert jumps(rec)["non_finite"] == Jump(
        "non_finite", said(rec, "non_finite"), 7, 2, no_stack="a value, not an exception"
    )
    rec = run(*[WatchDigests(1, 5, r, {"w": "a" if r < 2 else "b"}) for r in range(3)])
    assert jumps(rec)["desync"] == Jump(
        "desync", said(rec, "desync"), 5, 2, no_stack="a value, not an exception"
    )
    rec = run(WatchDropped(1, 0, 0, steps=6), failure(2, 7, GONE, stack=["t.py:40 in main"]))
    assert jumps(rec)["uneven"] == Jump(
        "uneven", said(rec, "uneven"), 6, 2, ["t.py:40 in main"], "", "uneven-inputs"
    )


def test_an_uneven_ends_stack_is_the_late_ranks_own_and_the_first_hangs() -> None:
    # rank 1's failure carries a stack; rank 2 (late, last) sent none with its failure
    bucket = {"seq": 9, "op": "all_reduce", "site": "t.py:40 in main", "bucket": 0, "step": 6}
    rec = run(
        WatchDropped(1, 0, 0, steps=6),
        failure(1, 6, GONE, stack=["t.py:41 in main"]),
        failure(2, 7, GONE),
    )
    j = jumps(rec)["uneven"]
    assert (j.rank, j.stack, j.no_stack) == (2, [], "rank 2 sent no stack")
    # a later hang's stack of the rank is not where it was when the end was found
    first = {"rank": 2, "state": "inside", "step": 7, "inside": bucket}
    later = {**first, "stack": ["t.py:99 in main"]}
    rec = run(WatchDropped(1, 0, 0, steps=6), WatchHang(1, 3.0, 2.0, [first]))
    rec.apply(WatchHang(1, 9.0, 2.0, [later]))
    j = jumps(rec)["uneven"]
    assert (j.rank, j.stack, j.no_stack) == (2, [], "rank 2 sent no stack")


def test_a_late_rank_with_no_stack_anywhere_has_an_empty_one() -> None:
    # rank 2 (last) went without a word in step 7, after rank 0 finished 6: no failure, no hang
    rec = run(WatchDropped(1, 0, 0, steps=6), WatchRankLost(1, 2, 102, 7))
    assert jumps(rec)["uneven"] == Jump(
        "uneven", said(rec, "uneven"), 6, 2, [], "rank 2 sent no stack", "uneven-inputs"
    )
    # a hang that found only rank 1 says nothing of rank 2's stack
    bucket = {"seq": 9, "op": "all_reduce", "site": "t.py:40 in main", "bucket": 0, "step": 5}
    one = {"rank": 1, "state": "inside", "step": 6, "inside": bucket, "stack": ["t.py:41"]}
    rec = run(WatchDropped(1, 0, 0, steps=6), failure(2, 7, GONE), WatchHang(1, 3.0, 2.0, [one]))
    j = jumps(rec)["uneven"]
    assert (j.rank, j.stack, j.no_stack) == (2, [], "rank 2 sent no stack")


def test_a_killed_ranks_jump_carries_its_findings_key_and_words() -> None:
    rec = run(WatchRankLost(1, 2, 102, 3), WatchExit(1, 2, 102, -9, "SIGKILL", 1.0))
    assert jumps(rec)["crash"] == Jump(
        "crash", said(rec, "crash"), 2, 2, [], "rank 2 left no word of its own (killed): no stack"
    )
