"""A crashed run's diagnosis on both sides (pure: fake events, no torch, no Qt): which rank's
failure is the cause and which are consequences, a killed rank named with its signal, a clean
exit never called a crash, DDP's errors translated with the parameter, an uneven end, NaN
averages that agree, and the straggler rule against a 3 ms wait that is chance."""

from __future__ import annotations

import math

from ddp_viz.kinds.watched import failures as fail
from ddp_viz.kinds.watched.agree import averages_identical, non_finite_average, same_values
from ddp_viz.kinds.watched.checks import findings, uneven, verdict
from ddp_viz.kinds.watched.diagnosis import rank_states, status_line
from ddp_viz.kinds.watched.events import (
    WatchDropped,
    WatchExit,
    WatchFailure,
    WatchHang,
    WatchRankLost,
    WatchSummary,
)
from ddp_viz.kinds.watched.straggler import straggler_text
from ddp_viz.model import protocol
from ddp_viz.model.timeline import RunRecord
from tests.watch.made_runs import run

GONE = (
    "Got the following error when running the callback: RuntimeError: [pair.cc:553] "
    "Connection closed by peer [127.0.0.1]:7566."
)
UNUSED = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing loss."
)


def failure(rank: int, at: float, message: str, step: int = 5, **kw: object) -> WatchFailure:
    return WatchFailure(
        1, rank, step, at, "RuntimeError", message, f"t.py:{10 + rank} in main", **kw
    )  # type: ignore[arg-type]


def test_the_first_failure_by_time_is_the_cause_and_the_others_follow() -> None:
    # rank 2 (the odd one, last) raised first; the others then lost their connection
    rec = run(failure(0, 10.5, GONE), failure(2, 10.0, "bad batch"), failure(1, 10.4, GONE))
    (key, lines), *_ = findings(rec)
    assert key == "crash"
    assert lines[0].startswith("✗ crash: rank 2 raised RuntimeError: bad batch — at t.py:12")
    assert (
        "in its step 5 (loop index 4)" in lines[0] and "(the first failure: the cause)" in lines[0]
    )
    assert [line.split(" failed")[0].strip() for line in lines[1:]] == [
        "then rank 1",
        "then rank 0",
    ]
    assert all("connection closed by a peer, because rank 2 had failed" in x for x in lines[1:])
    assert verdict(rec).startswith("ddp-viz verdict: rank 2 is the root cause: RuntimeError")


def test_a_peer_gone_error_is_no_cause_even_when_reported_earlier() -> None:
    # rank 0's clock put its connection error before rank 2's own: rank 2 is still the cause
    rec = run(failure(0, 9.0, GONE), failure(2, 10.0, "bad batch"))
    assert "rank 2 is the root cause" in verdict(rec)
    # with no other failure it is still no cause: the report says no rank raised its own
    alone = verdict(run(failure(0, 9.0, GONE)))
    assert alone.startswith(
        "ddp-viz verdict: no rank raised an error of its own: rank 0 lost its connection to a "
        "peer (the first at "
    ), alone
    assert "root cause" not in alone


def test_of_two_own_errors_the_earlier_report_is_the_cause() -> None:
    assert "rank 1 is the root cause" in verdict(run(failure(1, 5.0, "a"), failure(2, 6.0, "b")))
    assert "rank 2 is the root cause" in verdict(run(failure(1, 7.0, "a"), failure(2, 6.0, "b")))


def lost(rank: int, step: int, inside: dict | None = None) -> WatchRankLost:
    return WatchRankLost(1, rank, 100 + rank, step, inside)  # type: ignore[arg-type]


# inside DDP's all-reduce of step 4 (from 0: 3), as a rank's last beat says it
STEP_4_BUCKET = {"seq": 9, "op": "all_reduce", "site": "t.py:40 in main", "bucket": 0, "step": 3}


def test_a_rank_killed_by_a_signal_is_named_with_it_and_the_sigterms_follow() -> None:
    rec = run(
        lost(2, 3),
        lost(0, 4, STEP_4_BUCKET),
        lost(1, 4, STEP_4_BUCKET),
        WatchExit(1, 0, 100, -15, "SIGTERM", 2.0),
        WatchExit(1, 2, 102, -9, "SIGKILL", 1.0),
        WatchExit(1, 1, 101, -15, "SIGTERM", 2.0),
        WatchSummary(1, 1),
    )
    (_, lines), *_ = findings(rec)
    assert lines[0].startswith("✗ crash: rank 2 was killed by SIGKILL")
    # its own word reached step 3; the others waited in step 4's all-reduce, so it finished
    # step 3's and never joined step 4's
    assert "in its step 4 (loop index 3) or just before it" in lines[0]
    assert lines[1].startswith("  then rank 0 was killed by SIGTERM")
    assert "ddp-viz verdict: rank 2 is the root cause: killed by SIGKILL" in verdict(rec)
    # the others no further than it: as far as its own word says
    rec = run(lost(2, 3), lost(0, 3), WatchExit(1, 2, 102, -9, "SIGKILL", 1.0), WatchSummary(1, 1))
    assert "in or after its step 3 (loop index 2)" in findings(rec)[0][1][0]
    # the others further, their beats in no call: the step they had begun, whose all-reduce
    # no rank saw finish, is the one they waited in
    sigterm = WatchExit(1, 0, 100, -15, "SIGTERM", 2.0)
    rec = run(lost(2, 3), lost(0, 4), WatchExit(1, 2, 102, -9, "SIGKILL", 1.0), sigterm)
    rec.apply(WatchSummary(1, 1))
    assert "in its step 4 (loop index 3) or just before it" in findings(rec)[0][1][0]


def test_a_lost_rank_is_at_least_at_the_steps_whose_all_reduce_a_rank_saw_finish() -> None:
    """Rank 1 was aborted before its first beat got out (its word: step 0); rank 0 reported
    three steps whose all-reduce finished, which rank 1 joined: it went in or after step 3.
    (A float64 metric against float32, tried by hand: it was said "before step 1's
    all-reduce, which the others reached", where it had done step 1's.)"""
    names = ["w"]
    made = []
    for step in range(3):
        t = float(step)
        bucket = {
            "index": 0,
            "params": names,
            "bytes": 4,
            "launched": t + 0.5,
            "finished": t + 0.75,
        }
        spans = {"forward": [[t, t + 0.25]], "allreduce": [[t + 0.5, t + 0.75]]}
        made.append(protocol.Timing(1, step, 0, spans, buckets=[bucket]))
    exits = [
        WatchExit(1, 1, 101, -6, "SIGABRT", 1.0),
        WatchExit(1, 0, 100, -15, "SIGTERM", 2.0),
        WatchExit(1, 2, 102, -15, "SIGTERM", 2.0),
    ]
    rec = run(*made, lost(1, 0), lost(0, 3), lost(2, 3), *exits, WatchSummary(1, 1))
    (_, lines), *_ = findings(rec)
    assert lines[0].startswith("✗ crash: rank 1 was killed by SIGABRT: ")
    assert lines[0].endswith(
        ", in or after its step 3 (loop index 2) (the first failure: the cause)"
    )
    # twin: no step seen made, the others had begun step 3: they waited in its all-reduce
    rec = run(lost(1, 0), lost(0, 3), lost(2, 3), *exits, WatchSummary(1, 1))
    assert findings(rec)[0][1][0].endswith(
        ", in its step 3 (loop index 2) or just before it: after step 2's all-reduce, before "
        "step 3's, which the others reached (the first failure: the cause)"
    )


def test_a_clean_exit_is_never_a_crash() -> None:
    # the connections closed without a last word, but the command (every rank) exited with 0
    rec = run(lost(0, 12), lost(1, 12), lost(2, 12), WatchSummary(1, 0))
    assert findings(rec) == []
    assert verdict(rec).startswith("ddp-viz verdict: ✓")
    # the same with the command failing, and no launcher's word: vanished
    rec = run(lost(0, 12), lost(1, 12), lost(2, 12), WatchSummary(1, 1))
    assert findings(rec)[0][1][0].startswith("✗ crash: rank 0 vanished without its last word")
    # … unless the user stopped it (Ctrl-C, the window closed): then they were stopped
    rec = run(lost(0, 12), lost(1, 12), lost(2, 12), WatchSummary(1, 1, stopped=True))
    assert findings(rec) == []


def test_expected_to_finish_reduction_names_the_parameters_without_a_gradient() -> None:
    f = failure(2, 1.0, UNUSED, step=5, no_grad=["aux.weight", "aux.bias"])
    said = fail.ddp_error(f)
    assert said[0].startswith("DDP: aux.weight, aux.bias got no gradient in step 4")
    assert "find_unused_parameters=True" in said[1] and "static_graph" in said[1]
    rec = run(f, failure(0, 1.2, UNUSED, no_grad=["aux.weight", "aux.bias"]))
    lines = findings(rec)[0][1]
    assert lines[1].strip().startswith("DDP: aux.weight, aux.bias got no gradient")
    assert (
        lines[-1].strip()
        == "rank 0 raised the same RuntimeError at t.py:10 in main, in its step 5 (loop index 4)"
        " or after it, before it began any later step"
    )
    assert fail.ddp_error(failure(1, 1.0, "something else")) == []


def test_a_model_that_differs_names_the_parameter_its_shape_and_the_ranks() -> None:
    msg = (
        "[2]: params[1] in this process with sizes [9] appears not to match sizes of the same "
        "param in process 0."
    )
    mine = failure(
        2,
        1.0,
        msg,
        step=0,
        params=[{"name": "0.weight", "shape": [9, 6]}, {"name": "0.bias", "shape": [9]}],
    )
    theirs = failure(
        0,
        1.5,
        GONE,
        step=0,
        params=[{"name": "0.weight", "shape": [8, 6]}, {"name": "0.bias", "shape": [8]}],
    )
    said = fail.ddp_error(mine, [mine, theirs])
    assert said[0] == (
        "DDP: the model differs between ranks: rank 2's 0.bias has shape [9], rank 0's [8]"
    )
    counts = (
        "DDP expects same model across all ranks, but Rank 0 has 4 params, while rank 2 has "
        "inconsistent 2 params."
    )
    assert "rank 0 has 4 parameters, rank 2 has 2" in fail.ddp_error(failure(2, 1.0, counts))[0]


def test_a_rank_entering_a_step_after_another_finished_is_an_uneven_end() -> None:
    rec = run(WatchDropped(1, 0, 0, steps=40), failure(1, 3.0, GONE, step=41), world=2)
    assert uneven(rec) is not None
    assert "rank 1 entered step 41 after rank 0 finished 40 steps" in uneven(rec)
    assert "uneven-inputs" in uneven(rec)
    assert verdict(rec).startswith("ddp-viz verdict: uneven inputs: rank 1 entered step 41")
    # the crash is then its consequence, not a cause of its own
    assert [k for k, _ in findings(rec)] == ["uneven", "crash"]
    assert findings(rec)[1][1][0] == "after that:"
    # the same step on both: no uneven end (rank 1 failed for another reason)
    assert (
        uneven(run(WatchDropped(1, 0, 0, steps=40), failure(1, 3.0, "x", step=40), world=2)) is None
    )


def test_nan_averages_compare_equal_value_by_value_and_say_not_finite() -> None:
    assert same_values([math.nan, 1.0], [math.nan, 1.0])
    assert not same_values([math.nan, 1.0], [math.nan, 2.0])
    assert not same_values([math.nan], [1.0])
    rec = run(world=3)
    for r in range(3):
        rec.apply(protocol.AveragedGrad(1, 0, r, {"w": [math.nan, math.inf, 0.5]}))
    st = rec.steps[0]
    assert averages_identical(st) is True and non_finite_average(st)
    rec.apply(protocol.AveragedGrad(1, 1, 0, {"w": [math.nan, 1.0]}))
    rec.apply(protocol.AveragedGrad(1, 1, 1, {"w": [math.nan, 1.0]}))
    rec.apply(protocol.AveragedGrad(1, 1, 2, {"w": [math.nan, 1.5]}))  # the odd one last
    assert averages_identical(rec.steps[1]) is False


def _waits(lates: list[dict[int, float]], world: int, step_s: float) -> RunRecord:
    rec = run(world=world)
    rec.apply(
        protocol.RunStarted(1, world, 0, {"watched": True}, params=[{"name": "w", "shape": [4]}])
    )
    for step, late in enumerate(lates):
        t = step * step_s
        end = t + 0.005 + max(late.values(), default=0.0)
        for r in range(world):
            at = t + 0.002 + late.get(r, 0.0)
            b = {"index": 0, "params": ["w"], "bytes": 16, "launched": at, "finished": end}
            spans = {"forward": [[t, t + 0.001]], "allreduce": [[at, end]]}
            rec.apply(protocol.Timing(1, step, r, spans, buckets=[b]))
    return rec


def test_a_rank_chance_makes_last_is_no_straggler_whatever_its_wait() -> None:
    # 2 ranks, 40 ms steps: rank 0 last in 48 of 80 steps by 6 ms, rank 1 in 32 by as much:
    # 1 in 11 by chance, and no wait stands out
    lates = [{0: 0.006}] * 48 + [{1: 0.006}] * 32
    said = straggler_text(_waits([lates[0], *lates], 2, 0.04))
    assert said is not None and said.startswith("no straggler: rank 0"), said
    assert "as often as chance makes one of 2 ranks last" in said
    # last in 72 of 80 by the same wait: a straggler
    lates = [{0: 0.006}] * 72 + [{1: 0.006}] * 8
    said = straggler_text(_waits([lates[0], *lates], 2, 0.04))
    assert said is not None and said.startswith("✗ straggler: rank 0"), said


def hang_event(*places: tuple[int, str]) -> WatchHang:
    call = {"seq": 4, "op": "all_reduce", "site": "t.py:3 in main", "sizes": [[3]], "bucket": 0}
    ranks = []
    for rank, state in places:
        s = {"rank": rank, "state": state, "step": 4}
        if state == "inside":
            s["inside"] = call
        else:
            s["stack"] = ["t.py:9 in main: time.sleep(60)"]
        ranks.append(s)
    return WatchHang(1, 3.0, 2.0, ranks)  # type: ignore[arg-type]


def test_every_surface_says_what_the_doctor_found() -> None:
    rec = run(failure(0, 10.5, GONE), failure(2, 10.0, "bad batch"), failure(1, 10.4, GONE))
    assert rank_states(rec) == {2: "failed", 0: "stopped", 1: "stopped"}
    line = status_line(rec)
    assert line is not None and line.startswith("Run 1: ✗ rank 2 is the root cause"), line
    # killed by a signal: said with it
    rec = run(lost(2, 3), WatchExit(1, 2, 102, -9, "SIGKILL", 1.0), WatchSummary(1, 1))
    assert rank_states(rec) == {2: "killed (SIGKILL)"}
    # a clean run: nothing of the doctor's, the core's words stand
    rec = run(lost(0, 12), WatchSummary(1, 0))
    assert rank_states(rec) == {} and status_line(rec) is None


def test_a_hang_shows_as_hung_until_a_step_comes_after_it() -> None:
    rec = run(hang_event((0, "inside"), (1, "inside"), (2, "outside")))
    assert rank_states(rec) == {0: "hung", 1: "hung", 2: "stuck"}
    line = status_line(rec)
    assert line is not None and "hang: rank 2" in line, line  # the one not in all_reduce #4
    spans = {"forward": [[4.0, 4.1]]}
    rec.apply(protocol.Timing(1, 4, 0, spans))  # the ranks moved again
    assert rank_states(rec) == {}


def test_a_rank_that_exits_with_a_status_without_raising_is_the_cause() -> None:
    # rank 2 said its last word in step 6 and exited with 3 (sys.exit(3)); the others then
    # lost their connection in step 6, and torchrun stopped them
    rec = run(
        WatchDropped(1, 2, 0, steps=6),
        failure(0, 5.0, GONE, step=6),
        failure(1, 5.1, GONE, step=6),
        WatchExit(1, 2, 102, 3, "", 4.0),
        WatchExit(1, 0, 100, 1, "", 5.5),
        WatchSummary(1, 1),
    )
    lines = findings(rec)[0][1]
    assert lines[0].startswith("✗ crash: rank 2 exited with status 3 without raising"), lines
    assert "in or after its step 6" in lines[0]
    assert verdict(rec).startswith(
        "ddp-viz verdict: rank 2 is the root cause: exited with status 3"
    )
    assert uneven(rec) is None  # it did not finish its loop: it quit
    # the same last word and a status of 0: it finished, and nothing is said of it
    rec = run(WatchDropped(1, 2, 0, steps=6), WatchSummary(1, 0))
    assert findings(rec) == []


def _call(op: str, seq: int, sizes: list[int], bucket: bool = False) -> dict:
    c = {"seq": seq, "op": op, "site": f"t.py:{20 + seq} in main", "sizes": [sizes]}
    return {**c, "bucket": 0, "step": 3} if bucket else c


def test_a_rank_gloo_aborted_over_a_mismatch_is_not_taken_for_the_cause() -> None:
    # rank 0 was aborted (SIGABRT) inside its all_reduce #4 of 2 values; rank 1 was inside
    # the same; rank 2, the odd one, all-reduced 3 values
    mine = [
        WatchRankLost(1, 0, 100, 4, _call("all_reduce", 4, [2])),
        WatchRankLost(1, 1, 101, 4, _call("all_reduce", 4, [2])),
        WatchRankLost(1, 2, 102, 4, _call("all_reduce", 4, [3])),
    ]
    rec = run(*mine, WatchExit(1, 0, 100, -6, "SIGABRT", 1.0), WatchSummary(1, 1))
    said = verdict(rec)
    assert said.startswith("ddp-viz verdict: rank 2's collective does not match"), said
    assert "rank 2 all_reduce #4 [3] at t.py:24 in main" in said
    assert any("✗ the ranks' collectives do not match" in x for x in findings(rec)[0][1])
    # all three the same: the aborted rank stays the cause
    same = [*mine[:2], WatchRankLost(1, 2, 102, 4, _call("all_reduce", 4, [2]))]
    rec = run(*same, WatchExit(1, 0, 100, -6, "SIGABRT", 1.0), WatchSummary(1, 1))
    assert verdict(rec).startswith("ddp-viz verdict: rank 0 is the root cause: killed by SIGABRT")


def test_last_in_10_of_11_steps_is_a_straggler_only_if_its_wait_stands_out() -> None:
    # 1 in 85 by chance at 2 ranks: named when the other rank, last once, kept it waiting far
    # less (the rank does extra work), noise when both were late alike
    slow = [{1: 0.031}] * 10 + [{0: 0.001}]
    said = straggler_text(_waits([slow[0], *slow], 2, 0.1))
    assert said is not None and said.startswith("✗ straggler: rank 1"), said
    alike = [{1: 0.031}] * 10 + [{0: 0.030}]
    said = straggler_text(_waits([alike[0], *alike], 2, 0.1))
    assert said is not None and said.startswith("no straggler: rank 1"), said


def test_a_rank_last_by_under_5ms_is_noise_however_often() -> None:
    # a real clean run on a shared machine: rank 1 last in 10 of 11 steps by 3.6 ms
    lates = [{1: 0.0036}] * 10 + [{0: 0.0005}]
    said = straggler_text(_waits([lates[0], *lates], 2, 0.015))
    assert said is not None and said.startswith("no straggler: rank 1"), said
    assert said.endswith("under 5 ms: noise"), said


def _count(me: int, other: int, mine: int, theirs: int) -> str:
    return (
        f"DDP expects same model across all ranks, but Rank {me} has {mine} params, while "
        f"rank {other} has inconsistent {theirs} params."
    )


def test_the_rank_whose_model_differs_is_the_cause_whoever_reported_first() -> None:
    # rank 2 built 2 parameters, the others 4; rank 0 reported first, naming rank 2
    rec = run(
        failure(0, 1.0, _count(0, 2, 4, 2), step=0),
        failure(1, 1.1, _count(1, 2, 4, 2), step=0),
        failure(2, 1.2, _count(2, 0, 2, 4), step=0),
    )
    assert verdict(rec).startswith("ddp-viz verdict: rank 2 is the root cause"), verdict(rec)
    # rank 0 the odd one: ranks 1 and 2 both say their sizes differ from process 0's
    sizes = (
        "params[0] in this process with sizes [8, 6] appears not to match sizes of the same "
        "param in process 0."
    )
    rec = run(
        failure(1, 1.0, sizes, step=0),
        failure(2, 1.1, sizes, step=0),
        failure(0, 1.5, GONE, step=0),
    )
    assert verdict(rec).startswith("ddp-viz verdict: rank 0 is the root cause"), verdict(rec)
    # one rank of three says so: it is the odd one
    rec = run(failure(2, 1.0, sizes, step=0), failure(0, 1.5, GONE, step=0))
    assert verdict(rec).startswith("ddp-viz verdict: rank 2 is the root cause"), verdict(rec)
