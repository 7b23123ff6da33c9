"""What a watched run's record says about each rank (kinds/watched/run.py), against the raw
JSON lines the listener wrote, read here without the code under test, and asked mid-stream as
well as at the end (pure: no Qt, no torch)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from ddp_viz.kinds.watched import run as watched
from ddp_viz.model import protocol
from ddp_viz.model.timeline import RunRecord, record
from tests.conftest import DATA, load_recording

NAMES = ["watched-uneven-3-ranks.jsonl", "watched-raises-3-ranks.jsonl", "watched-hang.jsonl"]


def _lines(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line]


def _events(name: str) -> list[protocol.Event]:
    return [protocol.decode(line) for line in (DATA / name).read_text().splitlines() if line]


def _launches(lines: list[dict]) -> dict[int, dict[int, float]]:
    """step -> rank -> when its first bucket was launched."""
    out: dict[int, dict[int, float]] = {}
    for d in lines:
        if d["event"] == "timing":
            launched = [b["launched"] for b in d["buckets"] if b.get("launched") is not None]
            if launched:
                out.setdefault(d["step"], {})[d["rank"]] = min(launched)
    return out


def _world(lines: list[dict]) -> int:
    return next(d["world_size"] for d in lines if d["event"] == "run_started")


def _last(at: dict[int, float], world: int) -> int | None:
    """Who the others waited for: only in a step every rank reached (a rank that crashed or
    hung before it leaves no one last)."""
    if len(at) < max(2, world):
        return None
    latest = max(at.values())
    return max(r for r, t in at.items() if t == latest)


@pytest.mark.parametrize("name", NAMES)
def test_places_and_ended_ranks_as_the_lines_arrive(name) -> None:
    lines, events = _lines(name), _events(name)
    rec = RunRecord()
    asked = 0
    for n, (line, event) in enumerate(zip(lines, events, strict=True)):
        rec.apply(event)
        seen = lines[: n + 1]
        want = {
            d["rank"]: (d["host"], d["pid"], d["local_rank"], d["clock_offset_s"])
            for d in seen
            if d["event"] == "watched_rank"
        }
        got = {
            r: (p.host, p.pid, p.local_rank, p.clock_offset_s)
            for r, p in watched.places(rec).items()
        }
        if line["event"] == "run_started" or rec.run is not None:
            assert got == want, n
            ended = {d["rank"] for d in seen if d["event"] == "watch_dropped"}
            assert watched.ranks_ended(rec) == ended, n
            assert all(r == p.rank for r, p in watched.places(rec).items())
            asked += 1
    assert asked > 10
    assert len(watched.places(rec)) == max(d["world_size"] for d in lines if "world_size" in d)


def test_a_record_of_our_own_runs_has_no_places() -> None:
    rec = record([protocol.decode(line) for line in (DATA / "four-ranks-3-steps.jsonl").open()])
    assert watched.places(rec) == {} and watched.ranks_ended(rec) == set()
    assert not watched.is_watched(rec)
    assert watched.is_watched(record(_events(NAMES[0])))


@pytest.mark.parametrize("name", NAMES)
def test_seen_steps_counts_the_steps_any_rank_timed(name) -> None:
    lines, events = _lines(name), _events(name)
    for cut in (len(events) // 3, len(events) // 2, len(events)):
        want = len({d["step"] for d in lines[:cut] if d["event"] == "timing" and d["spans"]})
        assert watched.seen_steps(record(events[:cut])) == want, cut


def test_step_time_runs_from_one_forward_to_the_next_on_that_rank() -> None:
    lines = _lines(NAMES[0])
    rec = record(_events(NAMES[0]))
    starts = {
        (d["step"], d["rank"]): d["spans"]["forward"][0][0]
        for d in lines
        if d["event"] == "timing" and d["spans"].get("forward")
    }
    steps = max(s for s, _ in starts) + 1
    checked = 0
    for (s, r), t in starts.items():
        got = watched.step_time(rec, s, r)
        if (s + 1, r) in starts:
            assert got == pytest.approx(starts[(s + 1, r)] - t, abs=1e-12), (s, r)
            checked += 1
        else:
            assert got is None
    assert checked >= 6
    assert watched.step_time(rec, steps - 1, 0) is None
    assert watched.step_time(rec, 0, 7) is None  # no such rank
    # the three ranks' step times differ: reading another rank's would be seen
    assert len({round(watched.step_time(rec, 1, r), 9) for r in range(3)}) > 1


@pytest.mark.parametrize("name", NAMES)
def test_arrivals_in_ms_after_the_first_rank_and_who_came_last(name) -> None:
    lines, events = _lines(name), _events(name)
    launches = _launches(lines)
    rec = record(events)
    for s, at in launches.items():
        got = watched.after_first_ms(rec.steps[s])
        first = min(at.values())
        assert got == pytest.approx({r: (t - first) * 1e3 for r, t in at.items()}), s
    for upto in range(len(rec.steps)):
        want = Counter(
            r
            for s, at in launches.items()
            if s <= upto and (r := _last(at, _world(lines))) is not None
        )
        assert watched.stragglers(rec, upto) == want, upto


def test_the_last_rank_differs_between_steps_in_a_recording_checked() -> None:
    # without it, a straggler count that names one fixed rank would pass the test above
    lines = _lines(NAMES[0])
    lasts = {_last(at, _world(lines)) for at in _launches(lines).values()}
    assert len(lasts - {None}) >= 2


@pytest.mark.parametrize("name", NAMES)
def test_latest_full_is_the_last_step_every_rank_captured_mid_stream_too(name) -> None:
    lines, events = _lines(name), _events(name)
    world = next(d["world_size"] for d in lines if d["event"] == "run_started")
    needed = {"local_grad", "averaged_grad", "params", "timing"}
    for cut in range(len(events) + 1):
        have: dict[tuple[int, int], set[str]] = {}
        for d in lines[:cut]:
            if d["event"] in needed:
                have.setdefault((d["step"], d["rank"]), set()).add(d["event"])
        full = [
            s
            for s in {s for s, _ in have}
            if all(have.get((s, r), set()) >= needed - {"timing"} for r in range(world))
        ]
        rec = record(events[:cut])
        for upto in (0, 2, 100):
            got = watched.latest_full(rec, upto)
            want = max((s for s in full if s <= upto), default=None)
            assert (got.step if got else None) == want, (cut, upto)


def test_the_steps_seen_count_the_thinned_ones_and_a_lesson_run_s_too(monkeypatch) -> None:
    """A long watched run's record empties its old steps (the history keeps their count); a
    lesson's run, with no history, counts the steps any rank timed."""
    from ddp_viz.kinds.watched import history as watched_history
    from tests.core.test_watched_history import NAMES, RANKS, step_events

    monkeypatch.setattr(watched_history, "KEEP_STEPS", 50)
    monkeypatch.setattr(watched_history, "CHUNK", 25)
    rec = RunRecord()
    params = [{"name": n, "shape": [16]} for n in NAMES]
    rec.apply(protocol.RunStarted(1, RANKS, 0, {"watched": True}, params=params))
    for step in range(300):
        for e in step_events(step):
            rec.apply(e)
    timed = sum(1 for st in rec.steps if any(rs.spans for rs in st.ranks.values()))
    assert timed < 300  # steps were emptied: counting what is left would be wrong
    assert watched.seen_steps(rec) == 300
    lines = [json.loads(x) for x in (DATA / "long-run-32-steps.jsonl").read_text().splitlines()]
    timed_steps = {d["step"] for d in lines if d["event"] == "timing"}
    assert len(timed_steps) == 32
    assert watched.seen_steps(record(load_recording("long-run-32-steps.jsonl"))) == 32


def test_where_the_ranks_are_is_folded_once_and_only_for_a_watched_run() -> None:
    """The page asks at every frame: the watched record keeps one part, extended as events
    come, and a lesson's record gets none."""
    events = load_recording("watched-raises-3-ranks.jsonl")
    rec = record(events[:-5])
    first = watched._places(rec)
    assert watched._places(rec) is first and rec.parts[watched.PLACES] is first
    lesson = record(load_recording("default-run.jsonl"))
    assert watched.ranks_ended(lesson) == set() and watched.PLACES not in lesson.parts


def test_arrivals_of_a_step_no_rank_reached_are_none() -> None:
    step = record(load_recording("watched-2-ranks.jsonl")).steps[1]
    assert sorted(watched.after_first_ms(step)) == [0, 1]
    empty = RunRecord()
    empty.apply(protocol.RunStarted(1, 2, 0, {"watched": True}, params=[]))
    empty.apply(protocol.Timing(1, 0, 0, {"forward": [[1.0, 1.1]]}))  # no bucket launched
    assert watched.after_first_ms(empty.steps[0]) == {}
