"""The crash doctor's words, line by line (pure: fake events, no torch, no Qt): each way a rank
ends said in full (raised, killed by each signal, vanished, exited with a status), the step
phrases on both sides of step 1, a long message cut at 160 characters, a peer-gone error in
few words, and which rank is the cause when three ranks end differently, the odd one last."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.kinds.watched import apart
from ddp_viz.kinds.watched import failures as fail
from ddp_viz.kinds.watched.events import WatchExit, WatchFailure, WatchRankLost

GONE = "RuntimeError: [pair.cc:553] Connection closed by peer [127.0.0.1]:7566."


def failure(rank: int, at: float, message: str, step: int = 5, **kw: object) -> WatchFailure:
    return WatchFailure(
        1, rank, step, at, "RuntimeError", message, f"t.py:{10 + rank} in main", **kw
    )  # type: ignore[arg-type]


def lost(rank: int, step: int, inside: dict | None = None, last: dict | None = None):
    return WatchRankLost(1, rank, 100 + rank, step, inside, last)  # type: ignore[arg-type]


def killed(rank: int, sig: str, at: float = 0.0, code: int = -9) -> WatchExit:
    return WatchExit(1, rank, 100 + rank, code, sig, at)


def bucket_call(seq: int, step: int) -> dict:
    return {"seq": seq, "op": "all_reduce", "site": "t.py:40 in main", "bucket": 0, "step": step}


def text(ends: list[fail.RankEnd]) -> list[str]:
    return fail.crash_lines(ends)


@pytest.mark.parametrize(
    "message",
    [
        "Connection closed by peer [127.0.0.1]:7566",
        "connection reset",
        "write: Broken pipe",
        "Socket Timeout",
        "the wait TIMED OUT after 30s",
        "Timeout waiting for key",
        "read: ECONNRESET",
        "peer closed the socket",
        "recvValue failed",
        "Connection refused",
        "NCCL communicator was aborted on rank 1",
    ],
)
def test_each_of_glooss_words_for_a_gone_peer_is_read_as_one(message: str) -> None:
    assert fail.peer_gone(message)
    assert fail.peer_gone(f"RuntimeError: {message}, retrying")


def test_an_error_of_its_own_is_not_a_gone_peer() -> None:
    assert not fail.peer_gone("bad batch at index 3")
    assert not fail.peer_gone("")


@pytest.mark.parametrize(
    ("sig", "said"),
    [
        (
            "SIGKILL",
            "SIGKILL: killed outright (the kernel's OOM killer sends it when memory runs out)",
        ),
        ("SIGSEGV", "SIGSEGV: a crash in native code"),
        (
            "SIGABRT",
            "SIGABRT: aborted by native code (gloo aborts a rank that receives more bytes than "
            "its own tensor holds: a collective whose tensors differ in shape or dtype between "
            "ranks, this one's or a peer's; see its \"Received data size doesn't match\" line)",
        ),
        ("SIGBUS", "SIGBUS: a bad memory access (often shared memory too small)"),
        ("SIGUSR1", "SIGUSR1"),  # one ddp-viz has no words for: its name
    ],
)
def test_a_rank_killed_by_a_signal_is_said_with_what_the_signal_means(sig: str, said: str) -> None:
    ends = fail.rank_ends([], [lost(2, 3)], [killed(2, sig, 7.0)], 1)
    assert [(r.rank, r.end, r.at, r.step, r.signal) for r in ends] == [
        (2, fail.End.KILLED, 7.0, 3, sig)
    ]
    assert text(ends) == [
        f"✗ crash: rank 2 was killed by {said}, in or after its step 3 (loop index 2) "
        "(the first failure: the cause)"
    ]
    assert fail.verdict(ends[0]) == (
        f"ddp-viz verdict: rank 2 is the root cause: killed by {sig}, in or after its step 3 "
        "(loop index 2)"
    )


def test_torchruns_sigterm_to_the_others_is_said_after_the_kill() -> None:
    # rank 2 (last) was killed first; torchrun then stopped ranks 0 and 1, whose times (the
    # launcher's clock) come before rank 2's: the SIGTERMs still follow the SIGKILL
    exits = [killed(0, "SIGTERM", 1.0, -15), killed(1, "SIGTERM", 1.0, -15), killed(2, "SIGKILL")]
    waiting = [lost(r, 4, inside=bucket_call(9, 3)) for r in (0, 1)]  # in step 4's all-reduce
    ends = fail.rank_ends([], [*waiting, lost(2, 3)], exits, 1)
    assert [(r.rank, r.end, r.waited) for r in ends] == [
        (2, fail.End.KILLED, 4),
        (0, fail.End.STOPPED, 0),
        (1, fail.End.STOPPED, 0),
    ]
    assert ends[0].at == float("inf")  # no launcher's time: not known
    sigterm = "SIGTERM: asked to stop (torchrun sends it to the other ranks once one failed)"
    assert text(ends)[1:] == [
        f"  then rank 0 was killed by {sigterm}, in or after its step 4 (loop index 3), after "
        "rank 2 failed",
        f"  then rank 1 was killed by {sigterm}, in or after its step 4 (loop index 3), after "
        "rank 2 failed",
    ]
    assert text(ends)[0] == (
        "✗ crash: rank 2 was killed by SIGKILL: killed outright (the kernel's OOM killer sends "
        "it when memory runs out), in its step 4 (loop index 3) or just before it: after step "
        "3's all-reduce, before step 4's, which the others reached (the first failure: the cause)"
    )


def test_a_step_is_said_from_1_and_as_a_loop_counting_from_0_would() -> None:
    assert fail.step_phrase(0) == "before its first step"
    assert fail.step_phrase(0, sure=False) == "before any step of its reached ddp-viz"
    assert fail.step_phrase(1) == "in its step 1 (loop index 0)"
    assert fail.step_phrase(1, sure=False) == "in or after its step 1 (loop index 0)"
    assert fail.step_phrase(12) == "in its step 12 (loop index 11)"


def test_a_message_is_cut_to_its_first_line_of_at_most_160_characters() -> None:
    assert fail.first_line("  \n  bad batch\nTraceback …\n") == "bad batch"
    assert fail.first_line("   ") == "" and fail.first_line("") == ""
    at_limit = "x" * 160
    assert fail.first_line(at_limit) == at_limit
    past = "y" * 157 + "abcd"  # 161: cut to 157 and an ellipsis, 158 in all
    assert fail.first_line(past) == "y" * 157 + "…"


@pytest.mark.parametrize(
    ("message", "words"),
    [
        ("Connection closed by peer [127.0.0.1]:7566", "connection closed by a peer"),
        ("read: Connection reset by peer", "connection reset by a peer"),
        ("write: Broken pipe", "broken pipe to a peer"),
        ("Wait timed out after 30000ms", "the collective timed out"),
        ("Socket Timeout", "the collective timed out"),
        ("recvValue failed\nat line 3", "recvValue failed"),  # no words of its own: its first line
    ],
)
def test_a_gone_peer_is_said_in_a_few_words(message: str, words: str) -> None:
    assert fail.gone_words(message) == words


def test_the_first_failure_is_said_in_full_and_the_others_in_a_line() -> None:
    bucket = bucket_call(7, 4)
    script = {"seq": 3, "op": "broadcast", "site": "t.py:33 in main"}
    ends = fail.rank_ends(
        [
            failure(0, 2.0, GONE, inside=bucket),
            failure(1, 2.5, "Socket Timeout", step=6),
            failure(2, 1.0, "bad batch\nmore", inside=script),
        ],
        [],
        [],
        1,
    )
    assert [r.rank for r in ends] == [2, 0, 1]
    assert [r.peer_gone for r in ends] == [False, True, True]
    assert text(ends) == [
        "✗ crash: rank 2 raised RuntimeError: bad batch — at t.py:12 in main, in its step 5 "
        "(loop index 4) inside broadcast #3 at t.py:33 in main (the first failure: the cause)",
        "  then rank 0 failed inside DDP's gradient all_reduce #7, in its step 5 (loop index 4): "
        "connection closed by a peer, because rank 2 had failed",
        "  then rank 1 failed at t.py:11 in main, in its step 6 (loop index 5): the collective "
        "timed out, because rank 2 had failed",
    ]
    assert fail.verdict(ends[0]) == (
        "ddp-viz verdict: rank 2 is the root cause: RuntimeError at t.py:12 in main, in its "
        "step 5 (loop index 4)"
    )


def test_a_consequence_with_an_error_of_its_own_is_said_with_it() -> None:
    # rank 1's error is neither the cause's nor a gone peer's: said as it is
    ends = fail.rank_ends(
        [failure(0, 1.0, "bad batch"), failure(1, 2.0, "other", step=6)], [], [], 1
    )
    assert text(ends)[1] == (
        "  then rank 1 raised RuntimeError: other — at t.py:11 in main, in its step 6 (loop "
        "index 5) or after it, before it began any later step, because rank 0 had failed"
    )
    # with no cause given (after a hang): no "because"
    assert fail.failure_text(ends[1], None) == [
        "  then rank 1 raised RuntimeError: other — at t.py:11 in main, in its step 6 (loop "
        "index 5) or after it, before it began any later step"
    ]
    # the same error as the cause's (type and first line): "the same"
    same = fail.rank_ends(
        [failure(0, 1.0, "bad batch\nA"), failure(1, 2.0, "bad batch\nB", step=6)], [], [], 1
    )
    assert (
        text(same)[1]
        == "  rank 1 raised the same RuntimeError at t.py:11 in main, in its step 6 (loop index 5)"
        " or after it, before it began any later step"
    )
    other_type = WatchFailure(1, 1, 6, 2.0, "ValueError", "bad batch", "t.py:11 in main")
    ends = fail.rank_ends([failure(0, 1.0, "bad batch"), other_type], [], [], 1)
    assert text(ends)[1].startswith("  then rank 1 raised ValueError: bad batch")


def ends_of(ends: list[fail.RankEnd]) -> list[tuple]:
    return [(r.rank, r.end, r.step, r.signal, r.status) for r in ends]


def test_how_each_rank_ended_by_its_own_word_and_its_launchers() -> None:
    # rank 0 raised twice (the first counts), rank 1 vanished (no launcher's word), rank 2 exited
    # with 1 after its launcher said so, without a signal: vanished too, its time unknown
    ends = fail.rank_ends(
        [failure(0, 3.0, "bad batch"), failure(0, 4.0, "again", step=6)],
        [lost(1, 4), lost(2, 5)],
        [WatchExit(1, 2, 102, 1, "", 9.0)],
        None,  # the command still runs
    )
    assert ends_of(ends) == [
        (0, fail.End.RAISED, 5, "", 0),
        (1, fail.End.VANISHED, 4, "", 0),
        (2, fail.End.VANISHED, 5, "", 0),
    ]
    assert ends[0].failure is not None and ends[0].failure.message == "bad batch"
    assert [r.at for r in ends] == [3.0, float("inf"), float("inf")]
    # the launcher's word of an exit with 0 is no failure: the rank ended cleanly
    clean = fail.rank_ends([], [lost(2, 5)], [WatchExit(1, 2, 102, 0, "", 9.0)], 0)
    assert clean == []
    # while the command runs, a rank gone without a word has vanished; once it exited with 0,
    # every rank did
    assert ends_of(fail.rank_ends([], [lost(2, 5)], [], None)) == [(2, fail.End.VANISHED, 5, "", 0)]
    assert ends_of(fail.rank_ends([], [lost(2, 5)], [], 1)) == [(2, fail.End.VANISHED, 5, "", 0)]
    assert fail.rank_ends([], [lost(2, 5)], [], 0) == []


def test_a_rank_that_said_its_last_word_failed_only_by_a_positive_status() -> None:
    finished = {0: 6, 1: 6, 2: 7}
    exits = [WatchExit(1, 1, 101, -9, "SIGKILL", 2.0), WatchExit(1, 2, 102, 3, "", 4.0)]
    ends = fail.rank_ends([], [], exits, 1, finished)
    # rank 1's SIGKILL came after its last word (it had finished): not a failure of its loop
    assert ends_of(ends) == [(2, fail.End.EXITED, 7, "", 3)]
    assert ends[0].at == 4.0
    assert fail.crash_lines(ends) == [
        "✗ crash: rank 2 exited with status 3 without raising (sys.exit?), in or after its "
        "step 7 (loop index 6) (the first failure: the cause)"
    ]
    assert fail.verdict(ends[0]) == (
        "ddp-viz verdict: rank 2 is the root cause: exited with status 3, in or after its step 7 "
        "(loop index 6)"
    )
    at_zero = fail.rank_ends([], [], [WatchExit(1, 2, 102, 1, "", 0.0)], 1, {2: 7})
    assert ends_of(at_zero) == [(2, fail.End.EXITED, 7, "", 1)] and at_zero[0].at == float("inf")
    # the others' steps are no business of an exited rank's
    assert fail.rank_ends([], [], [], 1, finished) == []


def test_ranks_that_ended_before_they_connected_are_named_from_the_launchers_word() -> None:
    exits = [
        WatchExit(1, 0, 100, -15, "SIGTERM", 5.0),
        WatchExit(1, 1, 101, 1, "", 0.0),
        WatchExit(1, 2, 102, -9, "SIGKILL", 3.0),
    ]
    ends = fail.rank_ends([], [], exits, 1)
    assert ends_of(ends) == [
        (1, fail.End.VANISHED, 0, "", 0),
        (2, fail.End.KILLED, 0, "SIGKILL", 0),
        (0, fail.End.STOPPED, 0, "SIGTERM", 0),
    ]
    assert [r.at for r in ends] == [float("inf"), 3.0, 5.0]
    assert fail.crash_lines(ends)[0] == (
        "✗ crash: rank 1 vanished without its last word (killed or crashed), before any step "
        "of its reached ddp-viz (the first failure: the cause)"
    )
    assert fail.verdict(ends[0]) == (
        "ddp-viz verdict: rank 1 is the root cause: vanished (killed or crashed), before any "
        "step of its reached ddp-viz"
    )
    # a rank whose connection was seen is not named twice
    assert [r.rank for r in fail.rank_ends([], [lost(2, 3)], exits[2:], 1)] == [2]


def test_the_order_own_errors_and_kills_first_then_gone_peers_then_sigterms() -> None:
    ends = fail.rank_ends(
        [failure(0, 1.0, GONE), failure(1, 6.0, "bad batch")],
        [lost(2, 5), lost(3, 5)],
        [killed(2, "SIGKILL", 0.5), killed(3, "SIGTERM", 0.1, -15)],
        1,
    )
    # an own error (at 6.0) before a kill (time not comparable), before the gone peer (at 1.0)
    assert [(r.rank, r.end) for r in ends] == [
        (1, fail.End.RAISED),
        (2, fail.End.KILLED),
        (0, fail.End.RAISED),
        (3, fail.End.STOPPED),
    ]
    # of equal standing and no comparable time, the lower rank first
    vanished = fail.rank_ends([], [lost(2, 5), lost(0, 5), lost(1, 5)], [], 1)
    assert [r.rank for r in vanished] == [0, 1, 2]


def test_where_a_rank_that_left_no_word_was_by_the_step_the_others_waited_in() -> None:
    # ranks 0 and 1 failed inside DDP's all-reduce of steps 4 and 5 (index 3, 4), though their
    # own counts said 7; rank 2 (the odd one, last) went at its step 3, inside a bucket of its
    # step 8 that is no business of the others' wait
    ends = fail.rank_ends(
        [
            failure(0, 1.0, GONE, step=7, inside=bucket_call(9, 3)),
            failure(1, 1.1, GONE, step=7, inside=bucket_call(9, 4)),
        ],
        [lost(2, 3, inside=bucket_call(9, 7))],
        [killed(2, "SIGKILL")],
        1,
    )
    assert [(r.rank, r.waited) for r in ends] == [(2, 5), (0, 0), (1, 0)]
    # the others in no bucket of DDP's (the script's own call, or none known): the step they
    # had begun, whose all-reduce no rank saw finish, is the one they waited in
    script = {"seq": 9, "op": "all_reduce", "site": "t.py:40 in main"}
    ends = fail.rank_ends(
        [failure(0, 1.0, GONE, step=4, inside=script), failure(1, 1.1, GONE, step=6)],
        [lost(2, 3)],
        [killed(2, "SIGKILL")],
        1,
    )
    assert ends[0].waited == 6
    assert fail.lost_step(ends[0]) == (
        "in its step 6 (loop index 5) or just before it: after step 5's all-reduce, before "
        "step 6's, which the others reached"
    )
    # … unless a rank saw that step's all-reduce finish: every rank joined it, rank 2 too,
    # and the others were in a collective of the script's own after it (a float64 metric
    # against float32, a run here: it was said "before step 6's all-reduce, which the others
    # reached", where rank 2 had done it)
    made = fail.rank_ends(
        [failure(0, 1.0, GONE, step=6, inside=script)],
        [lost(2, 3)],
        [killed(2, "SIGKILL")],
        1,
        made=6,
    )
    assert (made[0].rank, made[0].step, made[0].waited) == (2, 6, 0)
    assert fail.lost_step(made[0]) == "in or after its step 6 (loop index 5)"
    # made, and the others inside step 6's all-reduce: it did step 5's and never joined 6's
    ends = fail.rank_ends(
        [failure(0, 1.0, GONE, step=6, inside=bucket_call(9, 5))],
        [lost(2, 3)],
        [killed(2, "SIGKILL")],
        1,
        made=5,
    )
    assert fail.lost_step(ends[0]) == (
        "in its step 6 (loop index 5) or just before it: after step 5's all-reduce, before "
        "step 6's, which the others reached"
    )
    # the others no further: its own count
    ends = fail.rank_ends([failure(0, 1.0, GONE, step=3)], [lost(2, 3)], [killed(2, "SIGKILL")], 1)
    assert ends[0].waited == 0
    assert fail.lost_step(ends[0]) == "in or after its step 3 (loop index 2)"


UNEVEN_FIX = (
    "the ranks had different numbers of batches (lesson: uneven-inputs; fix: the same number "
    "of batches per rank, e.g. a DistributedSampler, which pads or trims every rank's share to "
    "one length, or DDP's join() context manager)"
)


def test_an_uneven_end_names_the_rank_furthest_past_the_shortest_loop() -> None:
    # ranks 0 and 1 finished 6 steps (rank 0 named: the lower), rank 3 entered step 8, rank 2
    # step 7: rank 3 is the one furthest past
    found = apart.uneven_end({1: 6, 0: 6}, {2: 7, 3: 8})
    assert found == apart.Uneven(3, 8, 0, 6)
    assert (
        found.text()
        == f"✗ uneven inputs: rank 3 entered step 8 after rank 0 finished 6 steps: {UNEVEN_FIX}"
        ", or rank 0 left its loop early (a break, a return, sys.exit)"
    )
    # seen only in a barrier by a hang (no last word): the barrier may be inside its loop
    c = {"seq": 7, "op": "barrier", "site": "t.py:30 in main"}
    said = dataclasses.replace(found, barrier=c).text()
    assert said.startswith(
        "✗ uneven inputs, or a collective only one rank makes: rank 3 entered step 8 while "
        "rank 0, after 6 steps, waits in barrier #7 at t.py:30 in main. If rank 0 makes that "
        f"call after its loop, {UNEVEN_FIX}; if it makes it inside its loop, the others never do"
    ), said
    # the shortest loop is the one that counts: rank 1 finished 5
    assert apart.uneven_end({0: 6, 1: 5}, {2: 6}) == apart.Uneven(2, 6, 1, 5)
    # of two as far, the lower rank
    assert apart.uneven_end({0: 6}, {2: 7, 1: 7}) == apart.Uneven(1, 7, 0, 6)
    # just inside: a rank in the step the other finished with is not past it
    assert apart.uneven_end({0: 6}, {1: 6, 2: 6}) is None
    assert apart.uneven_end({0: 6}, {1: 6, 2: 7}) == apart.Uneven(2, 7, 0, 6)
    # the finished rank itself, failing later, is no uneven end of its own
    assert apart.uneven_end({0: 6}, {0: 9}) is None
    assert apart.uneven_end({}, {1: 7}) is None and apart.uneven_end({0: 6}, {}) is None


def call(op: str, seq: int, sizes: list[list[int]], bucket: bool = False) -> dict:
    c = {"seq": seq, "op": op, "site": f"t.py:{20 + seq} in main", "sizes": sizes}
    return {**c, "bucket": 0, "step": 3} if bucket else c


def test_a_collective_one_rank_called_unlike_the_others_is_the_odd_one() -> None:
    # ranks 0 and 1 in DDP's bucket all-reduce #4; rank 2 (last) in the script's own, same sizes
    mine = [
        lost(0, 4, call("all_reduce", 4, [[2, 3]], bucket=True)),
        lost(1, 4, call("all_reduce", 4, [[2, 3]], bucket=True)),
        lost(2, 4, call("all_reduce", 4, [[2, 3]])),
    ]
    assert apart.call_mismatch([], mine) == (
        "✗ the ranks' collectives do not match: rank 0 DDP's gradient all_reduce #4 [2×3] at "
        "t.py:24 in main; rank 1 DDP's gradient all_reduce #4 [2×3] at t.py:24 in main; rank 2 "
        "all_reduce #4 [2×3] at t.py:24 in main",
        2,
    )
    # only the op differs: rank 2 broadcast, the others all_reduce
    ops = [lost(r, 4, call("all_reduce" if r < 2 else "broadcast", 4, [[3]])) for r in range(3)]
    said, odd = apart.call_mismatch([], ops) or ("", None)
    assert odd == 2 and said.endswith("rank 2 broadcast #4 [3] at t.py:24 in main")
    # all alike: nothing to say
    alike = [lost(r, 4, call("all_reduce", 4, [[3]])) for r in range(3)]
    assert apart.call_mismatch([], alike) is None
    # three different: no rank alone against the same call on all the others
    three = [lost(r, 4, call("all_reduce", 4, [[r + 1]])) for r in range(3)]
    said, odd = apart.call_mismatch([], three) or ("", -1)
    assert odd is None and said.startswith("✗ the ranks' collectives do not match: rank 0 ")


def test_of_two_ranks_the_scripts_own_call_is_the_odd_one() -> None:
    two = [
        lost(0, 4, call("all_reduce", 4, [[3]], bucket=True)),
        lost(1, 4, call("barrier", 4, [])),
    ]
    assert apart.call_mismatch([], two) == (
        "✗ the ranks' collectives do not match: rank 0 DDP's gradient all_reduce #4 [3] at "
        "t.py:24 in main; rank 1 barrier #4 at t.py:24 in main",
        1,
    )
    # both the script's own: neither is the odd one
    both = [lost(0, 4, call("all_reduce", 4, [[3]])), lost(1, 4, call("all_reduce", 4, [[4]]))]
    found = apart.call_mismatch([], both)
    assert found is not None and found[1] is None


def test_the_calls_compared_are_where_each_rank_was_the_earliest_sequence_first() -> None:
    # a lost rank's last call when it was inside none; a failure's call overrides nothing else
    failures = [
        failure(0, 1.0, GONE, inside=call("all_reduce", 4, [[3]])),
        failure(1, 1.0, "bad", inside=None),
    ]
    gone = [
        lost(1, 4, last=call("all_reduce", 4, [[3]])),
        lost(2, 4, last=call("all_reduce", 4, [[5]])),
    ]
    said, odd = apart.call_mismatch(failures, gone) or ("", None)
    assert odd == 2 and "rank 1 all_reduce #4 [3]" in said and "rank 2 all_reduce #4 [5]" in said
    # ranks 0 and 1 at #3 disagree, as do ranks 2 and 3 at #5: #3 is said
    split = [
        lost(3, 4, call("all_reduce", 5, [[1]])),
        lost(2, 4, call("all_reduce", 5, [[2]])),
        lost(1, 4, call("all_reduce", 3, [[3]], bucket=True)),
        lost(0, 4, call("broadcast", 3, [[3]])),
    ]
    said, odd = apart.call_mismatch([], split) or ("", None)
    assert said == (
        "✗ the ranks' collectives do not match: rank 0 broadcast #3 [3] at t.py:23 in main; "
        "rank 1 DDP's gradient all_reduce #3 [3] at t.py:23 in main"
    )
    assert odd == 0
    # ranks that agree at #3 leave #5's mismatch to be said
    split[3] = lost(0, 4, call("all_reduce", 3, [[3]], bucket=True))
    said, odd = apart.call_mismatch([], split) or ("", None)
    assert said.startswith("✗ the ranks' collectives do not match: rank 2 all_reduce #5 [2]")
    assert odd is None
    assert apart.call_mismatch([], [lost(0, 4), lost(1, 4)]) is None


def test_a_call_in_words_with_each_tensors_shape() -> None:
    c = call("all_gather", 6, [[2, 3], [4]], bucket=True)
    assert (
        apart.call_words(1, c) == "rank 1 DDP's gradient all_gather #6 [2×3] [4] at t.py:26 in main"
    )
    assert apart.call_words(2, call("barrier", 2, [])) == "rank 2 barrier #2 at t.py:22 in main"


SIZES = (
    "params[0] in this process with sizes [8, 6] appears not to match sizes of the same param "
    "in process 0."
)


def test_the_rank_whose_model_differs_is_said_with_its_peers_words() -> None:
    # rank 0 built 0.weight as 9×6, ranks 1 and 2 as 8×6: they say so; rank 0 only lost them
    p0 = [{"name": "0.weight", "shape": [9, 6]}]
    p12 = [{"name": "0.weight", "shape": [8, 6]}]
    ends = fail.rank_ends(
        [
            failure(1, 1.0, SIZES, step=0, params=p12),
            failure(2, 1.1, SIZES, step=0, params=p12),
            failure(0, 1.5, GONE, step=0, params=p0),
        ],
        [],
        [],
        1,
    )
    assert [(r.rank, r.model_odd) for r in ends] == [(0, True), (1, False), (2, False)]
    said = SIZES.split(" appears")[0]
    assert fail.crash_lines(ends) == [
        f"✗ crash: rank 0 raised RuntimeError: {GONE} — at t.py:10 in main, before its first "
        "step (its model is the odd one: the cause)",
        "  DDP: the model differs between ranks: rank 1's 0.weight has shape [8×6], rank 0's [9×6]",
        "  fix: build the same model on every rank (no rank-dependent sizes)",
        f"  then rank 1 raised RuntimeError: {said} appears not to match sizes of the same param "
        "in process 0. — at t.py:11 in main, before its first step, because rank 0 had failed",
        f"  then rank 2 raised RuntimeError: {said} appears not to match sizes of the same param "
        "in process 0. — at t.py:12 in main, before its first step, because rank 0 had failed",
    ]
    assert fail.verdict(ends[0]) == (
        "ddp-viz verdict: rank 0 is the root cause: its model differs from the other ranks' "
        "(found as DDP was built)"
    )


def test_the_world_counts_the_ranks_that_went_without_a_word() -> None:
    # ranks 1 and 2 say their sizes differ from process 0's, but rank 3 went too: of 4 ranks,
    # not every rank but 0 said it, so the first that did is the odd one
    ends = fail.rank_ends(
        [failure(1, 1.0, SIZES, step=0), failure(2, 1.1, SIZES, step=0)], [lost(3, 0)], [], 1
    )
    assert [(r.rank, r.model_odd) for r in ends] == [(1, True), (2, False), (3, False)]
    # the votes name a rank that never reported: nobody is flagged
    count = (
        "DDP expects same model across all ranks, but Rank {me} has 4 params, while rank 2 has "
        "inconsistent 2 params."
    )
    ends = fail.rank_ends(
        [failure(0, 1.0, count.format(me=0), step=0), failure(1, 1.1, count.format(me=1), step=0)],
        [],
        [],
        1,
    )
    assert [(r.rank, r.model_odd) for r in ends] == [(0, False), (1, False)]


def test_a_rank_that_vanished_is_said_before_the_peers_it_left() -> None:
    ends = fail.rank_ends([failure(0, 1.0, GONE), failure(1, 1.1, GONE)], [lost(2, 4)], [], 1)
    assert [(r.rank, r.end) for r in ends] == [
        (2, fail.End.VANISHED),
        (0, fail.End.RAISED),
        (1, fail.End.RAISED),
    ]


def test_a_rank_that_raised_and_then_lost_its_connection_is_said_once() -> None:
    # rank 0 raised, then its connection closed; rank 1's closed with no word (the order the
    # listener saw them in)
    ends = fail.rank_ends([failure(0, 1.0, "bad batch")], [lost(0, 5), lost(1, 5)], [], 1)
    assert ends_of(ends) == [(0, fail.End.RAISED, 5, "", 0), (1, fail.End.VANISHED, 5, "", 0)]
    # the command exited with 0, but the launcher saw rank 2 killed: that one is said
    ends = fail.rank_ends([], [lost(0, 5), lost(2, 5)], [killed(2, "SIGKILL", 1.0)], 0)
    assert ends_of(ends) == [(2, fail.End.KILLED, 5, "SIGKILL", 0)]


def test_a_rank_gone_before_its_first_step_is_said_as_such() -> None:
    ends = fail.rank_ends([], [lost(2, 0)], [killed(2, "SIGKILL")], 1)
    assert ends[0].waited == 0
    assert fail.lost_step(ends[0]) == "before any step of its reached ddp-viz"
    # the others inside step 1's all-reduce: it went in its first step, before that all-reduce
    # (there is no all-reduce of a step before the first to have finished)
    ends = fail.rank_ends(
        [failure(0, 1.0, GONE, step=1, inside=bucket_call(2, 0))],
        [lost(2, 0)],
        [killed(2, "SIGKILL")],
        1,
    )
    assert ends[0].rank == 2 and ends[0].waited == 1
    assert fail.lost_step(ends[0]) == (
        "in its step 1 (loop index 0) or just before it: before step 1's all-reduce, which the "
        "others reached"
    )


def test_without_a_cause_the_others_are_said_without_a_because() -> None:
    ends = fail.rank_ends([], [lost(0, 4)], [killed(0, "SIGTERM", 1.0, -15)], 1)
    sigterm = "SIGTERM: asked to stop (torchrun sends it to the other ranks once one failed)"
    assert fail.failure_text(ends[0], None) == [
        f"  then rank 0 was killed by {sigterm}, in or after its step 4 (loop index 3)"
    ]


def test_the_cause_is_said_with_its_own_words_and_its_peers_shapes() -> None:
    # rank 2 alone says its sizes differ; rank 0's shapes are named from its own report
    sizes = SIZES.replace("[8, 6]", "[9, 6]")
    ends = fail.rank_ends(
        [
            failure(0, 1.5, GONE, step=0, params=[{"name": "0.weight", "shape": [8, 6]}]),
            failure(2, 1.0, sizes, step=0, params=[{"name": "0.weight", "shape": [9, 6]}]),
        ],
        [],
        [],
        1,
    )
    assert [(r.rank, r.model_odd) for r in ends] == [(2, True), (0, False)]
    assert fail.crash_lines(ends)[1:3] == [
        "  DDP: the model differs between ranks: rank 2's 0.weight has shape [9×6], rank 0's [8×6]",
        "  fix: build the same model on every rank (no rank-dependent sizes)",
    ]


def test_a_cause_of_its_own_is_not_said_with_a_peers_ddp_words() -> None:
    # rank 2's error is its own; rank 0 then raised DDP's unused-parameters error: rank 2's
    # lines say nothing of DDP's
    unused = "Expected to have finished reduction in the prior iteration before starting a new one."
    ends = fail.rank_ends(
        [failure(2, 1.0, "bad batch"), failure(0, 1.5, unused, no_grad=["w"])], [], [], 1
    )
    lines = fail.crash_lines(ends)
    assert [line.split(":")[0] for line in lines] == [
        "✗ crash",
        "  then rank 0 raised RuntimeError",
    ]


def test_three_different_calls_name_no_odd_one_whoever_is_the_scripts() -> None:
    # ranks 0 and 1 in DDP's buckets of other sizes, rank 2 in the script's own: each alone
    three = [
        lost(0, 4, call("all_reduce", 4, [[3]], bucket=True)),
        lost(1, 4, call("all_reduce", 4, [[4]], bucket=True)),
        lost(2, 4, call("all_reduce", 4, [[5]])),
    ]
    found = apart.call_mismatch([], three)
    assert found is not None and found[1] is None


def test_calls_that_carry_no_sizes_are_compared_and_said_without_them() -> None:
    bare = [
        lost(0, 4, {"seq": 4, "op": "barrier", "site": "t.py:24 in main"}),
        lost(1, 4, {"seq": 4, "op": "barrier", "site": "t.py:24 in main"}),
        lost(2, 4, {"seq": 4, "op": "all_reduce", "site": "t.py:25 in main"}),
    ]
    assert apart.call_mismatch([], bare) == (
        "✗ the ranks' collectives do not match: rank 0 barrier #4 at t.py:24 in main; rank 1 "
        "barrier #4 at t.py:24 in main; rank 2 all_reduce #4 at t.py:25 in main",
        2,
    )


def test_the_others_wait_is_the_furthest_each_got_by_any_of_its_words() -> None:
    # rank 0 raised inside step 6's all-reduce, its connection then closed with a beat that
    # had said step 5: it got to step 6; rank 2 (last) went in step 4
    ends = fail.rank_ends(
        [failure(0, 1.0, GONE, step=6, inside=bucket_call(9, 5))],
        [lost(0, 5), lost(2, 4)],
        [killed(2, "SIGKILL")],
        1,
    )
    assert [(r.rank, r.waited) for r in ends] == [(2, 6), (0, 0)]
    # its lost word inside an older bucket (step 3) after the failure's (step 6): still 6
    ends = fail.rank_ends(
        [failure(0, 1.0, GONE, step=6, inside=bucket_call(9, 5))],
        [lost(0, 5, inside=bucket_call(7, 2)), lost(2, 4)],
        [killed(2, "SIGKILL")],
        1,
    )
    assert [(r.rank, r.waited) for r in ends] == [(2, 6), (0, 0)]
    # the others failed before their first step (DDP's construction): no step to wait in
    ends = fail.rank_ends([failure(0, 1.0, GONE, step=0)], [lost(2, 0)], [killed(2, "SIGKILL")], 1)
    assert ends[0].waited == 0
    assert fail.lost_step(ends[0]) == "before any step of its reached ddp-viz"
    # the others in step 2's all-reduce: it finished step 1's
    inside = bucket_call(9, 1)
    ends = fail.rank_ends(
        [failure(0, 1.0, GONE, step=2, inside=inside)], [lost(2, 1)], [killed(2, "SIGKILL")], 1
    )
    assert fail.lost_step(ends[0]) == (
        "in its step 2 (loop index 1) or just before it: after step 1's all-reduce, before "
        "step 2's, which the others reached"
    )


def test_an_error_outside_any_collective_is_placed_between_two_forwards() -> None:
    """A rank counts a step begun at DDP's forward: an error after step 30's forward and no
    collective open may come later in that loop turn or at the top of the next, before its
    forward (a KeyError in the data loading of loop index 30). The doctor says both; inside
    a collective, or before the first forward, it knows the step."""
    f = failure(2, 1.0, "KeyError: 'momentum'", step=30)
    assert fail.raised_phrase(f) == (
        "in its step 30 (loop index 29) or after it, before it began any later step"
    )
    inside_ddp = dataclasses.replace(
        f, inside={"seq": 31, "op": "all_reduce", "site": "t.py:9", "bucket": 0, "step": 29}
    )
    assert fail.raised_phrase(inside_ddp) == "in its step 30 (loop index 29)"
    assert fail.raised_phrase(dataclasses.replace(f, step=0)) == "before its first step"
    assert fail.raised_phrase(dataclasses.replace(f, step=1)) == (
        "in its step 1 (loop index 0) or after it, before it began any later step"
    )
    line = fail.verdict(fail.rank_ends([f], [], [], 1)[0])
    assert line.endswith(
        "in its step 30 (loop index 29) or after it, before it began any later step"
    )
