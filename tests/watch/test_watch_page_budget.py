"""What one frame of the watched page may pay for, counted rather than timed (issue 32, item
4): the stage builds the few tensor rows it shows, not one per tensor; and the straggler counts
a frame reads extend what earlier frames counted instead of going over the whole run again."""

from __future__ import annotations

import dataclasses
import random

from ddp_viz.kinds.watched import history as watched_history
from ddp_viz.kinds.watched import steps as watched_steps
from ddp_viz.kinds.watched.run import latest_full
from ddp_viz.kinds.watched.scene import MAX_PARAMS
from ddp_viz.model import protocol
from ddp_viz.model.timeline import RunRecord, record
from tests.conftest import DATA
from tests.watch.test_watch_page import MANY, frame

RANKS = 8
NAMES = [f"layer{i}.weight" for i in range(198)]


def _start() -> RunRecord:
    rec = RunRecord()
    params = [{"name": n, "shape": [4]} for n in NAMES]
    rec.apply(protocol.RunStarted(1, RANKS, 0, {"watched": True}, params=params))
    return rec


def _timings(rec: RunRecord, step: int, last: int | None = None) -> None:
    t = float(step)
    for r in range(RANKS):
        at = t + 0.01 + (0.2 if r == last else 0.001 * r)
        bucket = {"index": 0, "params": NAMES, "bytes": 16, "launched": at, "finished": t + 0.3}
        spans = {"forward": [[t, t + 0.005]], "allreduce": [[at, t + 0.3]]}
        rec.apply(protocol.Timing(1, step, r, spans, buckets=[bucket]))


def test_the_stage_builds_only_the_tensor_rows_it_shows(monkeypatch) -> None:
    built: list[str] = []
    row = watched_steps.TensorRow
    monkeypatch.setattr(
        watched_steps, "TensorRow", lambda name, *a: built.append(name) or row(name, *a)
    )
    rec, f = frame(3)
    shown = [t.key.removeprefix("spread.") for t in f.texts if t.key.startswith("spread.")]
    assert len(rec.params) == 120 and 3 <= len(shown) <= MAX_PARAMS
    assert sorted(built) == sorted(shown), len(built)
    # the very rows the whole table's ranking picks, in its order
    st = latest_full(rec, 3)
    every = watched_steps.tensor_rows(rec, st)
    picked = watched_steps.most_telling(every, len(shown))
    assert [r.name for r in picked] == shown
    assert watched_steps.telling_rows(rec, st, len(shown)) == picked


def test_the_straggler_counts_extend_as_steps_come(monkeypatch) -> None:
    counted: list[int] = []
    count = watched_history.History._count

    def spy(self, base, lo, hi):  # type: ignore[no-untyped-def]
        counted.append(max(0, hi - lo + 1))
        return count(self, base, lo, hi)

    monkeypatch.setattr(watched_history.History, "_count", spy)
    pick = random.Random(3)
    rec = _start()
    for step in range(600):
        _timings(rec, step, last=pick.choice([None, 2, 5]))
        counted.clear()
        got = watched_steps.stragglers_with_waits(rec, step, first=1)  # as a frame asks
        assert sum(counted) <= 2, (step, counted)  # the new step(s), not the run
    # the same counts as going over every step, and asked about an earlier step too
    history = watched_history.history(rec)
    for upto in (599, 300):
        want: dict[int, list[float]] = {}
        for r, w in zip(history.last[1 : upto + 1], history.wait[1 : upto + 1], strict=True):
            if r >= 0:
                want.setdefault(r, [0, 0.0])
                want[r][0] += 1
                want[r][1] += w
        got = watched_steps.stragglers_with_waits(rec, upto, first=1)
        assert {s.rank: s.count for s in got} == {r: n for r, (n, _) in want.items()}
        for s in got:
            assert abs(s.mean_wait_s - want[s.rank][1] / want[s.rank][0]) < 1e-12


def test_a_recorded_run_reads_the_same_rows_as_before() -> None:
    lines = (DATA / MANY).read_text().splitlines()
    rec = record(protocol.decode(line) for line in lines)
    for st in rec.steps:
        if st.complete(rec.world_size):
            every = watched_steps.tensor_rows(rec, st)
            for n in (1, 5, 8, 200):
                assert watched_steps.telling_rows(rec, st, n) == watched_steps.most_telling(
                    every, n
                )


def test_a_streaming_watched_stage_is_rebuilt_per_new_step_not_per_event(
    make_window, monkeypatch
) -> None:
    from PySide6.QtWidgets import QApplication

    from ddp_viz._qt import stage
    from ddp_viz.model import registry

    built: list[int] = []
    build = stage.stage_frame
    monkeypatch.setattr(stage, "stage_frame", lambda *a: built.append(1) or build(*a))
    kind = registry.get("watched")  # no catching up here
    monkeypatch.setitem(registry._KINDS, kind.id, dataclasses.replace(kind, stage_every_ms=6e4))
    window = make_window()
    lines = (DATA / MANY).read_text().splitlines()
    events = [protocol.decode(line) for line in lines]
    end = next(i for i, e in enumerate(events) if e.kind in ("run_finished", "watch_summary"))
    window.session.expect_run(1)
    window.session.set_follow_latest(True)
    steps = set()
    for e in events[:end]:  # each event in a refresh of its own, as a slow run's come
        window.session.on_transport_event(e)
        window.session.tick()
        QApplication.processEvents()  # the paints the refresh asked for
        steps.add(window.session.record.complete_prefix())
    # one build per new step, and the page's first few (before its run, as it starts): 9 of
    # 40 refreshes here, where every refresh rebuilt it (42)
    assert end > 30 and len(built) <= len(steps) + 4, (len(built), len(steps), end)


def test_a_streaming_watched_stage_is_rebuilt_on_a_turn_apart_from_the_plots(
    make_window, qtbot
) -> None:
    """A refresh that redraws the plots leaves the costly stage to a turn of its own a moment
    later (each is a short slice of the window's thread, with a sleep between), and that turn
    comes: the stage ends up on the newest step."""
    from ddp_viz._qt.refresh_turns import APART_MS

    window = make_window()
    events = [protocol.decode(line) for line in (DATA / MANY).read_text().splitlines()]
    end = next(i for i, e in enumerate(events) if e.kind in ("run_finished", "watch_summary"))
    window.session.expect_run(1)
    window.session.set_follow_latest(True)
    calls: list[str] = []
    plots, player = window.plots.update_record, window.player.on_record_updated
    window.plots.update_record = lambda *a, **k: (calls.append("plots"), plots(*a, **k))
    window.player.on_record_updated = lambda: (calls.append("stage"), player())
    steps = 0
    for e in events[:end]:
        window.session.on_transport_event(e)
        if window.session.record.complete_prefix() > steps:  # a new step: its refresh
            steps = window.session.record.complete_prefix()
            calls.clear()
            window.session.tick()
            assert calls == ["plots"]  # not the stage in the same slice
            qtbot.waitUntil(lambda: "stage" in calls, timeout=5_000)
            assert window.player.cursor.step == steps - 1  # the newest complete step
    assert steps >= 4 and APART_MS >= 16  # at least a frame: the plots' repaint comes first
