"""The one line `ddp-viz watch` prints last, for each diagnosis, word for word (pure): which
finding it names when there are several, the step it counts from 1, the ranks in the singular
and the plural, and the healthy run's line."""

from __future__ import annotations

from ddp_viz.kinds.watched.checks import PART, Doctoring, fail_ranks, hang_verdict, verdict
from ddp_viz.kinds.watched.events import WatchDigests, WatchFailure, WatchHang, WatchNonFinite
from ddp_viz.model.timeline import record
from tests.conftest import load_recording
from tests.watch.test_watch_verdicts import _arrivals

HEALTHY = "ddp-viz verdict: ✓ no hang, no crash, no NaN, no desync and no straggler found"


def _rec(doctoring: Doctoring | None = None, events=None):
    rec = record(events or load_recording("watched-2-ranks.jsonl"))
    if doctoring is not None:
        rec.parts[PART] = doctoring
    return rec


def _place(rank: int, state: str, op: str = "", seq: int = 0, stack: str = "") -> dict:
    s: dict = {"rank": rank, "state": state, "quiet_s": 12.0, "step": 3}
    if op:
        s["inside"] = {"seq": seq, "op": op, "site": f"train.py:{40 + rank} in main", "sizes": []}
    if stack:
        s["stack"] = ["train.py:9 in <module>: main()", stack]
    return s


def _hang(*places: dict) -> WatchHang:
    return WatchHang(run=1, stalled_s=12.0, threshold_s=10.0, ranks=list(places))


def test_a_healthy_run_says_nothing_was_found() -> None:
    assert verdict(_rec()) == HEALTHY


def test_a_straggler_is_named_with_its_count() -> None:
    rec = record(_arrivals([0.02] * 10))
    assert verdict(rec) == (
        "ddp-viz verdict: straggler: rank 1 was the last to reach the all-reduce in 9 of 9 steps"
    )
    assert verdict(record(_arrivals([0.0015] * 10))) == HEALTHY  # noise: nothing to name


def test_a_desync_counts_the_step_entered_from_1() -> None:
    d = Doctoring(world=3)
    for step, crcs in ((4, ("01", "01", "01")), (7, ("02", "02", "03"))):
        for rank, crc in enumerate(crcs):
            d.apply(WatchDigests(1, step, rank, {"fc.weight": "aa", "bn.running_mean": crc}))
    assert verdict(_rec(d)) == (
        "ddp-viz verdict: desync: rank(s) 2 differ from rank 0 entering step 8"
    )


def test_a_desync_of_two_ranks_names_both_in_order() -> None:
    d = Doctoring(world=4)
    for rank, crc in enumerate(("01", "02", "01", "03")):  # ranks 1 and 3 hold other bytes
        d.apply(WatchDigests(1, 2, rank, {"fc.weight": "aa", "bn.running_mean": crc}))
    assert verdict(_rec(d)) == (
        "ddp-viz verdict: desync: rank(s) 1, 3 differ from rank 0 entering step 3"
    )


def test_the_first_non_finite_beats_a_desync_and_counts_from_1() -> None:
    d = Doctoring(world=2)
    d.apply(WatchNonFinite(1, 5, 1, float("nan"), ["fc.weight"]))
    d.apply(WatchNonFinite(1, 3, 1, float("inf"), []))
    for rank, crc in enumerate(("01", "02")):
        d.apply(WatchDigests(1, 2, rank, {"fc.weight": crc}))
    assert d.desync is not None
    assert verdict(_rec(d)) == "ddp-viz verdict: rank 1 is the first non-finite, at step 4"


def test_a_hang_names_the_rank_missing_from_the_collective_the_others_are_in() -> None:
    h = _hang(
        _place(0, "inside", "all_reduce", 9),
        _place(1, "inside", "all_reduce", 9),
        _place(2, "outside", stack="time.sleep(600)"),
    )
    assert hang_verdict(h) == (
        "hang: rank 2 never joined all_reduce #9 that the others are in; "
        "rank 2 is running time.sleep(600)"
    )
    d = Doctoring(world=3)
    d.apply(h)
    assert verdict(_rec(d)) == "ddp-viz verdict: " + hang_verdict(h)


def test_two_ranks_missing_are_named_in_the_plural_the_first_ones_place_said() -> None:
    h = _hang(
        _place(0, "inside", "barrier", 4),
        _place(1, "inside", "all_reduce", 5),
        _place(2, "inside", "barrier", 4),
        _place(3, "inside", "all_gather", 6),
    )
    assert hang_verdict(h) == (
        "hang: ranks 1, 3 never joined barrier #4 that the others are in; "
        "rank 1 is inside all_reduce #5 at train.py:41 in main"
    )


def test_ranks_in_no_communication_are_named_with_the_last_ones_line() -> None:
    h = _hang(_place(0, "outside", stack="a()"), _place(1, "outside", stack="b()"))
    assert hang_verdict(h) == "hang: ranks 0, 1 in no communication; rank 1 is running b()"
    alone = _hang(_place(0, "outside"))
    assert hang_verdict(alone) == "hang: rank 0 in no communication"
    ended = _hang(_place(0, "ended"), _place(1, "ended"))
    assert hang_verdict(ended) == "hang: no rank moved (see each rank's place above)"


def test_the_latest_hang_is_the_verdict() -> None:
    d = Doctoring(world=2)
    first = _hang(_place(0, "outside", stack="a()"), _place(1, "outside", stack="a()"))
    later = _hang(_place(0, "inside", "barrier", 3), _place(1, "outside", stack="c()"))
    d.apply(first)
    d.apply(later)
    assert verdict(_rec(d)) == "ddp-viz verdict: " + hang_verdict(later)
    assert hang_verdict(later) != hang_verdict(first)


def test_a_rank_that_raised_is_the_cause_even_after_a_hang_but_a_lost_peer_is_not() -> None:
    own = WatchFailure(
        1, 1, 3, 5.0, "ValueError", "bad row", "train.py:31 in main",
        ["train.py:31 in main: raise ValueError('bad row')"],
    )  # fmt: skip
    hang = _hang(_place(0, "inside", "all_reduce", 9), _place(1, "outside", stack="x()"))
    d = Doctoring(world=2)
    d.apply(hang)
    d.apply(own)
    assert verdict(_rec(d)).startswith("ddp-viz verdict: rank 1 is the root cause: ValueError")
    gone = WatchFailure(
        1, 0, 3, 6.0, "RuntimeError", "Connection closed by peer [127.0.0.1]:3973",
        "train.py:29 in main", ["train.py:29 in main: loss.backward()"],
    )  # fmt: skip
    d = Doctoring(world=2)
    d.apply(hang)
    d.apply(gone)
    assert verdict(_rec(d)) == "ddp-viz verdict: " + hang_verdict(hang)


def test_rank_words() -> None:
    assert fail_ranks([3]) == "rank 3"
    assert fail_ranks([1, 2]) == "ranks 1, 2"


def test_the_status_bar_line_is_a_sentence_that_a_second_one_can_follow(monkeypatch) -> None:
    """The window writes "The watched command exited with 1." (or a recording's note) after
    the run's line; a verdict ending "… before it began any later step" ran straight into it."""
    from ddp_viz.kinds.watched import diagnosis
    from ddp_viz.model.run_status import status_text

    rec = record(load_recording("watched-raises-3-ranks.jsonl"))
    assert status_text(rec).endswith("before it began any later step.")
    for end in (".", "!", "?"):  # a line that ends a sentence itself gets no second mark
        monkeypatch.setattr(diagnosis, "verdict", lambda _r, e=end: f"ddp-viz verdict: ✗ odd{e}")
        assert status_text(rec).endswith(f"on 3 rank(s). ✗ odd{end}"), status_text(rec)
