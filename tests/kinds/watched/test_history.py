"""A watched run's bounded history at a small scale (pure, fast): the limits shrunk so that 40
steps of 3 ranks go through every thinning, each step whole or emptied exactly when the rules
say, and what the page and the doctor read from every step (who was last at the all-reduce and
how long the others waited, the steps seen and complete, the emptied steps' full captures,
differing averages and first NaN) still right for the steps that went, queried after every
step as the page does. Expected values come from the feed's own pattern, by hand."""

from __future__ import annotations

import math

import pytest

from ddp_viz.kinds.watched import history as h
from ddp_viz.kinds.watched.events import WatchDropped
from ddp_viz.kinds.watched.kind import step_reported
from ddp_viz.kinds.watched.run import seen_steps
from ddp_viz.kinds.watched.steps import stragglers_with_waits
from ddp_viz.model import protocol
from ddp_viz.model.timeline import RunRecord

NAMES = ["w", "b"]
RANKS = 3
DIFFER, NAN = 9, (15, 27)  # rank 2's average differs at step 9; every rank's is NaN at these


@pytest.fixture(autouse=True)
def small(monkeypatch) -> None:
    monkeypatch.setattr(h, "KEEP_STEPS", 8)
    monkeypatch.setattr(h, "CHUNK", 4)
    monkeypatch.setattr(h, "KEEP_EVERY", 4)
    monkeypatch.setattr(h, "KEEP_OLD", 3)


def late(step: int) -> dict[int, float]:
    """When each rank launched its bucket after the step's start (exact binary fractions):
    rank 0 last by 0.25 in every 5th step, rank 2 by 0.5 in the next two, rank 1 by 0.125."""
    if step % 5 == 0:
        return {0: 0.25, 1: 0.0, 2: 0.125}
    if step % 5 in (1, 2):
        return {0: 0.0625, 1: 0.0, 2: 0.5}
    return {0: 0.0, 1: 0.125, 2: 0.0625}


def who_waited(step: int) -> tuple[int, float]:
    return {0: (0, 0.25), 1: (2, 0.5), 2: (2, 0.5)}.get(step % 5, (1, 0.125))


def expected(lo: int, hi: int) -> dict[int, tuple[int, float]]:
    out: dict[int, tuple[int, float]] = {}
    for s in range(lo, hi + 1):
        r, w = who_waited(s)
        n, total = out.get(r, (0, 0.0))
        out[r] = (n + 1, total + w)
    return out


def said(rec: RunRecord, upto: int, first: int) -> dict[int, tuple[int, float]]:
    return {s.rank: (s.count, s.mean_wait_s) for s in stragglers_with_waits(rec, upto, first)}


def full(step: int) -> bool:
    return step % 3 == 0


def rank_events(step: int, r: int) -> list[protocol.Event]:
    out: list[protocol.Event] = []
    if full(step):
        avg = {"w": [0.5, float(step)], "b": [1.0]}
        if step in NAN:
            avg = {"w": [math.nan, 1.0], "b": [1.0]}
        if step == DIFFER and r == 2:
            avg = {"w": [0.5, float(step) + 0.25], "b": [1.0]}
        out += [
            protocol.LocalGrad(1, step, r, 1.0, {"w": [float(r), 1.0], "b": [2.0]}, [NAMES]),
            protocol.AveragedGrad(1, step, r, avg),
            protocol.Params(1, step, r, {"w": [1.0, 2.0], "b": [3.0]}),
        ]
    t = float(step)
    at = t + 0.5 + late(step)[r]
    bucket = {"index": 0, "params": NAMES, "bytes": 12, "launched": at, "finished": t + 0.875}
    spans = {"forward": [[t, t + 0.25]], "allreduce": [[at, t + 0.875]]}
    out.append(protocol.Timing(1, step, r, spans, buckets=[bucket]))
    return out


def start() -> RunRecord:
    rec = RunRecord()
    params = [{"name": "w", "shape": [2]}, {"name": "b", "shape": [1]}]
    rec.apply(protocol.RunStarted(1, RANKS, 0, {"watched": True}, params=params))
    return rec


def whole(rec: RunRecord) -> set[int]:
    return {st.step for st in rec.steps if st.ranks}


def span(*parts: object) -> set[int]:
    out: set[int] = set()
    for p in parts:
        out |= set(p) if isinstance(p, range) else {p}  # type: ignore[arg-type]
    return out


# after each step's events from every rank: the steps still whole (KEEP_STEPS 8, CHUNK 4,
# every 4th kept, the stride doubling to 8 once 16 // 4 > 3, and to 16 once 32 // 8 > 3)
WHOLE = {
    10: span(range(11)),
    11: span(0, range(4, 12)),
    14: span(0, range(4, 15)),
    15: span(0, 4, range(8, 16)),
    19: span(0, 4, 8, range(12, 20)),
    23: span(0, 8, range(16, 24)),
    27: span(0, 8, 16, range(20, 28)),
    31: span(0, 8, 16, range(24, 32)),
    35: span(0, 8, 16, 24, range(28, 36)),
    39: span(0, 16, range(32, 40)),
}


def test_steps_are_emptied_in_chunks_keeping_every_strideth_and_the_newest() -> None:
    rec = start()
    part = rec.parts[h.HISTORY]
    assert isinstance(part, h.History)
    for step in range(40):
        for r in range(RANKS):
            for e in rank_events(step, r):
                rec.apply(e)
        if step in WHOLE:
            assert whole(rec) == WHOLE[step], step
        # what the page reads of every step, the emptied ones too, as it asks every frame
        assert seen_steps(rec) == step + 1
        assert h.complete_count(rec) == step + 1
        assert part.emptied == step + 1 - len(whole(rec))
        for first in (0, 1):
            got = said(rec, step, first)
            want = {r: (n, total / n) for r, (n, total) in expected(first, step).items()}
            assert got == want, (step, first)
    assert part.stride == 16
    # the emptied steps' events left the record; the kept ones' stayed, every rank's
    gone = set(range(40)) - whole(rec)
    kept_events = [e for e in rec.events if isinstance(e, h.STEP_EVENTS)]
    assert not [e for e in kept_events if e.step in gone]
    assert len(kept_events) == sum(RANKS * (4 if full(s) else 1) for s in whole(rec))
    assert isinstance(rec.events[0], protocol.RunStarted)
    # what the report counts of the steps that went: full captures, differing, the first NaN
    emptied_full = [s for s in gone if full(s)]
    assert part.emptied_full == len(emptied_full) == 10
    assert part.emptied_differ == 1  # step 9: NaN on every rank alike is not a difference
    assert part.first_non_finite == NAN[0]


def test_stepping_back_counts_the_earlier_steps_afresh() -> None:
    rec = start()
    for step in range(40):
        for r in range(RANKS):
            for e in rank_events(step, r):
                rec.apply(e)
    for upto in (39, 12, 30, 3, 39, 0):
        for first in (0, 1, 5):
            got = said(rec, upto, first)
            want = {r: (n, total / n) for r, (n, total) in expected(first, upto).items()}
            assert got == want, (upto, first)
    # most often last first, a tie by rank: in steps 2-40 ranks 1 and 2 were last 16 times
    # each, rank 0 7 times; in steps 2-38 rank 2 16 times, rank 1 14
    assert [(s.rank, s.count) for s in stragglers_with_waits(rec, 39, 1)] == [
        (1, 16), (2, 16), (0, 7)]  # fmt: skip
    assert [(s.rank, s.count) for s in stragglers_with_waits(rec, 37, 1)] == [
        (2, 16), (1, 14), (0, 7)]  # fmt: skip


def test_a_silent_rank_keeps_every_step_past_it_whole_and_counts_none_of_them() -> None:
    rec = start()
    part = rec.parts[h.HISTORY]
    for step in range(40):
        for r in range(RANKS if step < 5 else RANKS - 1):  # rank 2's events stop in step 6
            for e in rank_events(step, r):
                rec.apply(e)
        # the others' all-reduces finished, so rank 2 joined them: every step was made
        assert h.complete_count(rec) == step + 1
        assert seen_steps(rec) == step + 1
    assert whole(rec) == span(0, range(4, 40))
    assert part.emptied == 3 and part.emptied_full == 1  # step 3
    # the others waited for no one in a step rank 2 never reached: no one is counted
    got = {s.rank: s.count for s in stragglers_with_waits(rec, 39, 0)}
    assert got == {r: n for r, (n, _) in expected(0, 4).items()}


def test_a_step_is_reported_once_every_rank_sent_its_timings() -> None:
    rec = start()
    part = rec.parts[h.HISTORY]
    for step in range(2):
        for r in range(RANKS):
            for e in rank_events(step, r):
                rec.apply(e)
    events = {r: rank_events(3, r) for r in range(RANKS)}  # a full step: tensors, then timings
    for r in range(RANKS):
        for e in events[r][:-1]:
            rec.apply(e)
    st = rec.steps[3]
    assert seen_steps(rec) == 2 and not step_reported(rec, st)
    rec.apply(events[0][-1])  # rank 0's timings: the step is seen, not yet complete
    assert seen_steps(rec) == 3 and not step_reported(rec, st)
    # rank 0's all-reduce finished: every rank made the step, though not every rank told yet
    assert h.complete_count(rec) == 3
    assert stragglers_with_waits(rec, 3, 0) == stragglers_with_waits(rec, 1, 0)
    rec.apply(events[1][-1])
    assert not step_reported(rec, st) and h.complete_count(rec) == 3
    assert list(part.last) == [0, 2, -1, -1]  # step 3 (index 3): two of three ranks arrived
    assert list(part.wait) == [0.25, 0.5, 0.0, 0.0]  # no one waited for anyone there yet
    rec.apply(events[2][-1])
    assert step_reported(rec, st) and seen_steps(rec) == 3
    assert list(part.last) == [0, 2, -1, 1] and part.wait[3] == 0.125
    # the step no rank reported (index 2) counts nowhere
    got = {s.rank: s.count for s in stragglers_with_waits(rec, 3, 0)}
    assert got == {0: 1, 2: 1, 1: 1}
    # timings without a span (a rank that reported nothing of step 5) do not make it seen
    rec.apply(protocol.Timing(1, 5, 0, {}))
    assert seen_steps(rec) == 3 and list(part.last)[4:] == [-1, -1]
    assert list(part.wait)[4:] == [0.0, 0.0]


def test_a_history_asked_for_late_folds_the_events_so_far() -> None:
    rec = start()
    for step in range(6):
        for r in range(RANKS):
            for e in rank_events(step, r):
                rec.apply(e)
    del rec.parts[h.HISTORY]
    part = h.history(rec)
    assert rec.parts[h.HISTORY] is part and h.history(rec) is part
    assert part.seen_steps() == 6
    assert list(part.last) == [who_waited(s)[0] for s in range(6)]
    assert list(part.wait) == [who_waited(s)[1] for s in range(6)]
    assert h.complete_count(rec) == 6


def test_complete_count_without_a_history_counts_the_complete_steps() -> None:
    rec = start()
    for step in range(3):
        for r in range(RANKS):
            for e in rank_events(step, r):
                rec.apply(e)
    rec.parts.pop(h.HISTORY)
    assert h.complete_count(rec) == 3


@pytest.mark.parametrize(
    ("step", "kept"),
    [(0, True), (9_999, True), (10_000, True), (10_001, False), (19_998, True),
     (19_999, False), (20_000, True), (20_002, False), (39_996, True), (39_998, False),
     (40_000, True), (40_004, False), (40_008, True)],
)  # fmt: skip
def test_the_recording_keeps_every_step_then_every_2nd_4th_8th(step, kept) -> None:
    for e in (
        protocol.Timing(1, step, 0, {}),
        protocol.LocalGrad(1, step, 0, 1.0, {}),
        protocol.AveragedGrad(1, step, 0, {}),
        protocol.Params(1, step, 0, {}),
    ):
        assert h.recorded(e) is kept
    assert h.recorded(protocol.RunFinished(1, step, 1.0))


def timing(step: int, r: int, *finished: float | None) -> protocol.Timing:
    """Rank ``r``'s step with one bucket per value of ``finished`` (None: not finished)."""
    buckets = [
        {"index": i, "params": NAMES[i : i + 1], "bytes": 4, "launched": step + 0.5, "finished": f}
        for i, f in enumerate(finished)
    ]
    return protocol.Timing(1, step, r, {"forward": [[step, step + 0.25]]}, buckets=buckets)


@pytest.mark.parametrize(
    ("others", "counted"),
    [
        ((3.9, 3.95), True),  # every bucket finished on ranks 0, 1: rank 2 joined them all
        ((3.9, None), False),  # the second bucket's all-reduce never finished: a hang
        ((None, None), False),
        ((), False),  # no bucket (a step under no_sync): nothing vouches for rank 2
        ((0.0, 0.0), True),  # a clock's zero is a finish
    ],
)
def test_a_step_a_rank_never_reported_counts_when_a_rank_saw_its_all_reduce_finish(
    others: tuple[float | None, ...], counted: bool
) -> None:
    """A watched rank's step leaves when its next forward begins: rank 2, killed (or held)
    after step 4's backward, never sent step 4; ranks 0 and 1 did."""
    rec = start()
    for step in range(3):
        for r in range(RANKS):
            rec.apply(timing(step, r, step + 0.9))
    assert h.complete_count(rec) == 3
    rec.apply(timing(3, 0, *others))
    assert h.complete_count(rec) == 3 + counted
    rec.apply(timing(3, 1, *others))  # a second rank's word for it counts the step once
    assert h.complete_count(rec) == 3 + counted
    rec.apply(timing(3, 2, 3.9, 3.95))  # and so does rank 2's own, come late
    assert h.complete_count(rec) == 4


def test_a_step_every_rank_sent_as_it_failed_is_not_made_until_its_all_reduce_finished() -> None:
    """A failing rank sends the step it failed in as it ends: file_lock.py at 2 ranks did three
    steps and failed in the fourth's all-reduce, and read "4 step(s)"."""
    rec = start()
    for step in range(3):
        for r in range(RANKS):
            rec.apply(timing(step, r, step + 0.9, step + 0.95))
    for r in range(RANKS):
        rec.apply(timing(3, r, 3.9, None))  # the second bucket's all-reduce failed everywhere
    assert step_reported(rec, rec.steps[3])  # every rank reported it
    assert h.complete_count(rec) == 3


def test_no_more_steps_than_a_rank_said_it_began_in_its_last_word() -> None:
    """Uneven inputs under DDP's join(): rank 2, out of data after 2 steps, joins the others'
    all-reduces with zeros; its last word says it began 2. The run trained 2 steps on every
    rank, though 4 all-reduces finished."""
    rec = start()
    for step in range(4):
        for r in range(RANKS - 1 if step >= 2 else RANKS):
            rec.apply(timing(step, r, step + 0.9))
    assert h.complete_count(rec) == 4  # no last word yet: the all-reduces vouch for 4
    rec.apply(WatchDropped(1, 2, 0, steps=2))
    assert h.complete_count(rec) == 2
    for r in (0, 1):
        rec.apply(WatchDropped(1, r, 0, steps=4))
    assert h.complete_count(rec) == 2
    twin = start()  # every rank's last word says 4: the count stays 4
    for step in range(4):
        for r in range(RANKS):
            twin.apply(timing(step, r, step + 0.9))
    for r in range(RANKS):
        twin.apply(WatchDropped(1, r, 0, steps=4))
    assert h.complete_count(twin) == 4
