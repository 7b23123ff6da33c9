"""The watched page on a long run (a synthetic feed, scaled down by smaller bounds: 1,500 steps
against a history of 50 and curves of 128 points, as a 100,000-step run against the real
ones): each curve holds at most its bound and still spans the run, and the record keeps the
newest steps and every 64th whole."""

from __future__ import annotations

from ddp_viz.kinds.watched import history as watched_history
from ddp_viz.kinds.watched.qt import plot as plot_watched
from ddp_viz.model import protocol
from ddp_viz.model.timeline import RunRecord
from tests.core.test_watched_history import NAMES, RANKS, step_events


def test_a_long_watched_run_keeps_its_curves_and_record_bounded(make_window, monkeypatch) -> None:
    monkeypatch.setattr(plot_watched, "MAX_POINTS", 128)
    monkeypatch.setattr(watched_history, "KEEP_STEPS", 50)
    monkeypatch.setattr(watched_history, "CHUNK", 25)
    window = make_window()
    rec = RunRecord()
    rec.apply(protocol.RunStarted(1, RANKS, 0, {"watched": True}, params=[
        {"name": n, "shape": [16]} for n in NAMES
    ]))  # fmt: skip
    plots = window.plots
    plots.set_record(rec)
    for step in range(1500):
        for e in step_events(step):
            rec.apply(e)
        if step % 100 == 99:  # as the page's frames take in what came
            plots.update_record(rec)
    plots.update_record(rec, final=True)
    for r in range(RANKS):
        xs, _ = plots._series[f"loss{r}"]
        assert 64 <= len(xs) <= 128 and xs[0] == 1 and xs[-1] >= 1400, len(xs)
    kept = [st.step for st in rec.steps if st.ranks]
    assert len(kept) <= 50 + 25 + 1500 // 64 and kept[-1] == 1499
    assert all(s % 64 == 0 for s in kept if s < 1425)
