"""The doctor's record-side rules at their edges (pure: events made here): which section a
lost peer's error goes in with and without a hang, the odd collective's verdict word for word,
a hang where every rank waits in one collective, digests that differ by a tensor one rank
lacks or come out of order, and a hang's place with no step."""

from __future__ import annotations

from ddp_viz.kinds.watched.checks import findings, uneven_end, verdict
from ddp_viz.kinds.watched.events import (
    WatchDigests,
    WatchFailure,
    WatchHang,
    WatchRankLost,
    WatchSummary,
)
from tests.watch.made_runs import run

GONE = "Connection closed by peer [127.0.0.1]:7566"
STEP5 = {"seq": 5, "op": "all_reduce", "site": "t.py:20 in main", "bucket": 0, "step": 4}


def failure(rank: int, at: float, message: str, **kw: object) -> WatchFailure:
    return WatchFailure(1, rank, 5, at, "RuntimeError", message, f"t.py:{30 + rank} in main", **kw)  # type: ignore[arg-type]


def hang(*places: dict) -> WatchHang:
    return WatchHang(1, 3.0, 2.0, list(places))


def place(rank: int, state: str, call: dict | None = None, step: int | None = 5) -> dict:
    s: dict = {"rank": rank, "state": state, "quiet_s": 3.0}
    if step is not None:
        s["step"] = step
    if call is not None:
        s["inside"] = call
    return s


def sections(rec) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    return dict(findings(rec))


def test_a_lost_peer_alone_is_the_crash_and_after_a_hang_it_follows_it() -> None:
    alone = sections(run(failure(1, 2.0, GONE), world=2))
    assert alone["crash"][0].startswith("✗ crash: rank 1 raised RuntimeError: Connection closed")
    stuck = hang(place(0, "inside", STEP5), place(1, "outside"))
    after = sections(run(stuck, failure(1, 2.0, GONE), world=2))
    assert after["crash"][0] == "after that:"
    # a rank's own error beside a hang is still the crash, named first
    own = sections(run(stuck, failure(1, 2.0, "bad batch"), world=2))
    assert own["crash"][0].startswith("✗ crash: rank 1 raised RuntimeError: bad batch")
    assert next(iter(own)) == "crash"


def test_the_odd_collective_is_the_verdict_word_for_word_and_indented_in_the_crash() -> None:
    barrier = {"seq": 5, "op": "barrier", "site": "t.py:40 in main"}
    events = [
        failure(0, 2.0, GONE, inside=STEP5),
        failure(1, 2.1, GONE, inside=STEP5),
        failure(2, 2.2, GONE, inside=barrier),
    ]
    rec = run(*events)
    assert verdict(rec) == (
        "ddp-viz verdict: rank 2's collective does not match the others': rank 0 DDP's gradient "
        "all_reduce #5 at t.py:20 in main; rank 1 DDP's gradient all_reduce #5 at t.py:20 in "
        "main; rank 2 barrier #5 at t.py:40 in main"
    )
    assert sections(rec)["crash"][-1].startswith("  ✗ the ranks' collectives do not match: ")


def test_collectives_that_differ_with_no_rank_failed_name_no_cause() -> None:
    barrier = {"seq": 5, "op": "barrier", "site": "t.py:40 in main"}
    gone = [WatchRankLost(1, r, 100 + r, 5, STEP5) for r in (0, 1)]
    rec = run(*gone, WatchRankLost(1, 2, 102, 5, barrier), WatchSummary(1, 0))
    assert verdict(rec).startswith("ddp-viz verdict: ✓")  # the command's 0: every rank ended


def test_a_hang_where_every_rank_waits_in_one_collective_names_no_one_missing() -> None:
    rec = run(hang(place(0, "inside", STEP5), place(1, "inside", STEP5)), world=2)
    assert verdict(rec) == "ddp-viz verdict: hang: no rank moved (see each rank's place above)"


def test_a_tensor_only_one_rank_has_is_a_desync_and_agreement_is_the_latest_step() -> None:
    same = {"w": "aa"}
    events = [WatchDigests(1, 3, r, same) for r in (0, 1)]
    events += [WatchDigests(1, 2, r, same) for r in (0, 1)]  # an older step, compared later
    events += [WatchDigests(1, 4, 0, same), WatchDigests(1, 4, 1, {**same, "extra": "bb"})]
    said = sections(run(*events, world=2))["desync"][0]
    assert said == (
        "✗ desync: entering step 5 (after step 4), rank 1 held other bytes than rank 0 in "
        "extra; identical entering step 4"
    )


def test_a_place_with_no_step_inside_ddps_all_reduce_enters_no_step() -> None:
    rec = run(
        WatchFailure(1, 1, 0, 1.0, "RuntimeError", GONE, "t.py:1 in main"),
        hang(place(0, "inside", STEP5, step=None), place(1, "ended", step=0)),
        world=2,
    )
    assert uneven_end(rec) is None
