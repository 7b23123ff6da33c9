"""A watched run of 100,000 steps keeps the record's memory bounded (pure: a synthetic feed of
the events a watched run of 2 ranks sends, a few fresh Python objects per event as decoded
lines are; every 64th step captured in full). Past the first few thousand steps the memory
levels off (counted as the objects Python's collector tracks: every list, dict and event the
record holds; tracemalloc made the feed four times slower); the straggler verdict and the steps
seen still count every step."""

from __future__ import annotations

import gc

import pytest

from ddp_viz.kinds.watched import history as watched_history
from ddp_viz.kinds.watched.run import seen_steps
from ddp_viz.kinds.watched.steps import stragglers_with_waits
from ddp_viz.model import protocol
from ddp_viz.model.timeline import RunRecord

NAMES = [f"layer{i}.weight" for i in range(20)]
RANKS = 2


def step_events(step: int) -> list[protocol.Event]:
    out: list[protocol.Event] = []
    t = float(step)
    for r in range(RANKS):
        # rank 1 is last in 3 steps of 4 by 4 ms, rank 0 in the fourth by 2 ms
        late = (0.004 if step % 4 else 0.0) if r == 1 else (0.0 if step % 4 else 0.002)
        if step % 64 == 0:
            values = {n: [0.001 * i for i in range(16)] for n in NAMES}
            out += [
                protocol.LocalGrad(1, step, r, float("nan"), values, [list(NAMES)]),
                protocol.AveragedGrad(1, step, r, {n: list(v) for n, v in values.items()}),
                protocol.Params(1, step, r, {n: list(v) for n, v in values.items()}),
            ]
        bucket = {"index": 0, "params": list(NAMES), "bytes": 1280}
        bucket.update(launched=t + 0.01 + late, finished=t + 0.02)
        spans = {"forward": [[t, t + 0.005]], "allreduce": [[t + 0.01 + late, t + 0.02]]}
        out.append(protocol.Timing(1, step, r, spans, buckets=[bucket]))
    return out


@pytest.mark.slow
def test_a_100000_step_watched_record_levels_off_in_memory() -> None:
    rec = RunRecord()
    rec.apply(protocol.RunStarted(1, RANKS, 0, {"watched": True}, params=[
        {"name": n, "shape": [16]} for n in NAMES
    ]))  # fmt: skip
    marks = []
    # the collector's automatic passes off while feeding (each full one walks the millions of
    # objects the feed makes: 40% of this test's time); the counts are taken after a full
    # collection of our own, so what they measure is the same
    gc.disable()
    try:
        for step in range(100_000):
            for e in step_events(step):
                rec.apply(e)
            if (step + 1) % 25_000 == 0:
                gc.collect()
                marks.append(len(gc.get_objects()))
    finally:
        gc.enable()
    # by 25,000 steps the newest steps' detail is all there; after that a step adds its empty
    # record alone (whole, the feed adds about 32 objects a step: 2.4 million more)
    grown = marks[-1] - marks[0]
    assert grown < 75_000 * 2, marks
    kept = sum(1 for st in rec.steps if st.ranks)
    h = watched_history
    assert kept <= h.KEEP_STEPS + h.CHUNK + h.KEEP_OLD + 1
    assert len(rec.events) < 10 * kept
    # the page's and the doctor's counts still cover every step
    assert seen_steps(rec) == 100_000
    one, zero = stragglers_with_waits(rec, 99_999)
    assert (one.rank, one.count, zero.rank, zero.count) == (1, 75_000, 0, 25_000)
    assert abs(one.mean_wait_s - 0.004) < 1e-6 and abs(zero.mean_wait_s - 0.002) < 1e-6


def test_the_recording_of_a_100000_step_run_keeps_a_log_of_its_steps() -> None:
    kept = [s for s in range(100_000) if watched_history.recorded(step_events(s)[-1])]
    assert kept[: watched_history.RECORD_ALL] == list(range(watched_history.RECORD_ALL))
    assert len(kept) < 28_000 and kept[-1] >= 99_984  # every 16th step by then
    # what a replay and the doctor need whatever the step: the run's and the findings' events
    assert watched_history.recorded(protocol.RunFinished(1, 100_000, 1.0))


def test_the_listeners_recording_is_thinned_as_it_is_written(tmp_path, monkeypatch) -> None:
    from ddp_viz.kinds.watched.watch.command import Recorder

    monkeypatch.setattr(watched_history, "RECORD_ALL", 100)
    path = tmp_path / "long.jsonl"
    recorder = Recorder(str(path))
    recorder(protocol.RunStarted(1, RANKS, 0, {"watched": True}, params=[
        {"name": n, "shape": [16]} for n in NAMES
    ]))  # fmt: skip
    for step in range(1_000):
        for e in step_events(step):
            recorder(e)
    recorder.file.close()
    timings = [ln for ln in path.read_text().splitlines() if '"timing"' in ln]
    # 100 steps whole, then every 2nd to 200 (50), 4th to 400 (50), 8th to 800 (50), 16th (13)
    assert len(timings) == RANKS * 263
