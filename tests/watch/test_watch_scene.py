"""A watched run's dashboard from a recorded ``ddp-viz watch`` run (pure, and the window
opening recordings): every number is one the ranks sent, the averages are checked bit for bit,
and who the others waited for comes from when each rank reached the all-reduce."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ddp_viz.kinds.watched.agree import averages_identical
from ddp_viz.kinds.watched.run import arrivals, last_to_arrive, step_time
from ddp_viz.model.assets import asset
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.lesson import load_lesson_folder
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.tensors import tensor_norm
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording
from tests.frames import STAGE_SIZES, assert_fits

WATCHED = "watched-2-ranks.jsonl"


def frame(step, w=1280, h=720, theme="light", events=None):
    rec = record(events if events is not None else load_recording(WATCHED))
    lesson = load_lesson_folder(asset("watched"))
    ctx = SceneContext(w, h, load_theme(theme), lesson.phase_text, estimate_width)
    return rec, stage_frame(rec, Cursor(step, 3), 1.0, ctx, lesson.scene)


def test_every_gradient_norm_on_screen_is_a_recorded_one() -> None:
    for step in range(4):
        rec, f = frame(step)
        st = rec.steps[step]
        numbers = f.numbers()
        for name in rec.param_names:
            for r in (0, 1):
                assert numbers[f"rank{r}.local.{name}"] == tensor_norm(st.ranks[r].local[name])
            assert numbers[f"averaged.{name}"] == tensor_norm(st.ranks[0].averaged[name])
        assert f.text_with_key("averages.identical").text.startswith("✓")


def test_who_the_others_waited_for_is_who_reached_the_all_reduce_last() -> None:
    rec, f = frame(2)
    st = rec.steps[2]
    got = arrivals(st)
    last = max(got, key=got.get)
    assert last_to_arrive(st, rec.world_size) == (last, got[last] - min(got.values()))
    straggler = f.text_with_key("straggler")
    assert straggler.value == pytest.approx(got[last] - min(got.values()))
    assert f"for rank {last}, the last to reach the all-reduce" in straggler.text
    # a step's time runs from its forward to the next one's, on each rank
    for r in (0, 1):
        a, b = (rec.steps[s].ranks[r].spans["forward"][0][0] for s in (2, 3))
        assert step_time(rec, 2, r) == pytest.approx(b - a)
    assert step_time(rec, 3, 0) is None  # the last step has no next forward


def test_averages_that_differ_on_one_rank_are_caught() -> None:
    events = load_recording(WATCHED)
    changed = False
    out = []
    for e in events:
        if e.kind == "averaged_grad" and e.rank == 1 and e.step == 0 and not changed:
            name = next(iter(e.grads))
            value = e.grads[name]
            bad = (
                {**value, "digest": "00000000"}
                if isinstance(value, dict)
                else [value[0] + 1e-7, *value[1:]]
            )
            e, changed = replace(e, grads={**e.grads, name: bad}), True
        out.append(e)
    rec, f = frame(0, events=out)
    assert averages_identical(rec.steps[0]) is False
    assert f.text_with_key("averages.identical").text.startswith("✗")


@pytest.mark.parametrize(("w", "h", "theme"), STAGE_SIZES)
def test_nothing_overlaps_or_leaves_the_stage(w, h, theme) -> None:
    for step in range(4):
        _, f = frame(step, w, h, theme)
        assert_fits(f, theme)


def test_the_window_opens_a_watched_recording_and_one_of_its_own(make_window, tmp_path) -> None:
    from ddp_viz._qt.recording import RecordingError

    window = make_window()
    shown = []  # what a screenshot taken as the run is shown to its end would see
    window.run_shown.connect(
        lambda rec: shown.append((window.status.text(), window.process_view.rows()))
    )
    window.file_actions.open_run(DATA / WATCHED)
    status, procs = shown[0]
    assert status.startswith("Run 1 finished") and [p[2] for p in procs] == ["done", "done"]
    assert window.lesson.id == "watched" and window.stage.lesson.scene == "watch"
    assert window.status.text().startswith(f"Opened {WATCHED}: 2 rank(s), 4 complete step(s)")
    assert not window.form.parentWidget().isVisible()
    assert not window.run_action.isEnabled()  # the page runs nothing of its own
    from ddp_viz.model.session import status_text

    # timings-only steps have no parameters: judged on the steps that have them
    assert "✓ ranks agree" in status_text(window.session.record)
    text = window.stage.frame().all_text()
    assert "Your run · step" in text
    # the process view lists each rank's host and pid, as the ranks reported them
    hosts = [(row[0], row[1], row[3]) for row in window.process_view.rows()]
    assert [(r, h) for r, _, h in hosts] == [("0", "vm"), ("1", "vm")]
    assert window.process_view.table.horizontalHeaderItem(3).text() == "host"
    bad = tmp_path / "not-a-run.jsonl"
    bad.write_text('{"event": "engine_ready", "pid": 1, "version": "x"}\nnot json\n')
    with pytest.raises(RecordingError, match="holds no run"):
        window.file_actions.open_run(bad)
    assert window.lesson.id == "watched"  # nothing changed
    window.file_actions.open_run(DATA / "default-run.jsonl")
    assert window.lesson.id == "ddp-pattern" and window.form.parentWidget().isVisible()
    assert window.run_action.isEnabled()
    assert window.process_view.table.horizontalHeaderItem(3).text() == "rows"
    rec = window.session.record
    assert rec.status == "finished" and rec.steps[0].ranks[1].local == {
        "weight": [-44.5],
        "bias": [-12.5],
    }


def test_places_follow_a_growing_record_and_reading_it_is_incremental() -> None:
    from ddp_viz.kinds.watched.run import places
    from ddp_viz.model.timeline import RunRecord

    events = load_recording(WATCHED)
    joined = [i for i, e in enumerate(events) if e.kind == "watched_rank"]
    assert len(joined) == 2
    rec = RunRecord()
    seen = []
    for i, e in enumerate(events):
        rec.apply(e)
        if i in joined:
            seen.append(sorted(places(rec)))
    assert seen == [[events[joined[0]].rank], [0, 1]]  # each rank as it joins, asked as it grows
    hosts = {e.host for e in events if e.kind == "watched_rank"}
    assert {p.host for p in places(rec).values()} == hosts
    # asked again, only events added since are read: what was read before is never looked at
    rec.events[0] = object()  # a full rescan trips over this (it has no kind)
    assert {p.host for p in places(rec).values()} == hosts
    assert places(record(load_recording("default-run.jsonl"))) == {}  # our runs have no hosts


def test_a_watched_run_plots_each_ranks_step_times_and_its_full_captures(make_window) -> None:
    import numpy as np

    window = make_window()
    window.file_actions.open_run(DATA / WATCHED)
    rec, plots = window.session.record, window.plots
    assert not window.plots_panel.isHidden()  # the dashboard's history, beside the stage
    assert "Arrival at the all-reduce" in plots.loss_plot.getPlotItem().titleLabel.text
    for r in (0, 1):
        xs, ys = plots._curves[f"loss{r}"].getData()
        # step k's arrival at the all-reduce (its first bucket reaching the comm hook) after
        # the first rank's, at x = k + 1, the last step too: what the others waited for it
        assert list(xs) == [1, 2, 3, 4]
        want = [(arrivals(st)[r] - min(arrivals(st).values())) * 1e3 for st in rec.steps]
        assert list(ys) == pytest.approx(want)
        # one gradient norm per rank (the whole model's local gradient) at each step
        # captured in full, however many tensors: no gap per timings-only step
        px, ws = plots._curves[f"p0:{r}"].getData()
        full = [st for st in rec.steps if st.ranks[r].local]
        assert list(px) == [st.step + 1 for st in full] and np.isfinite(ws).all()
        want = [sum(tensor_norm(v) ** 2 for v in st.ranks[r].local.values()) for st in full]
        assert list(ws) == pytest.approx([w**0.5 for w in want])
    # the loss surface is for the lessons' one-weight model: no surface, and no excuse for it
    assert plots.surface_plot.isHidden() and plots.surface_note.text() == ""
    window.file_actions.open_run(DATA / "default-run.jsonl")
    assert "Loss per rank" in window.plots.loss_plot.getPlotItem().titleLabel.text


@pytest.mark.source  # reads the module's globals, which mutmut's trampolines add to
def test_the_pure_layer_keeps_no_cache_of_its_own() -> None:
    """What was read of a growing record is held by the record (its caller's object), not in
    a module's dict keyed by ids (issue 26, 7)."""
    from ddp_viz.kinds.watched import run as watched

    mutable = dict | list | set
    held = [n for n, v in vars(watched).items() if isinstance(v, mutable) and n[:2] != "__"]
    assert held == []
    rec = record(load_recording(WATCHED))
    assert sorted(watched.places(rec)) == [0, 1]
    assert watched.PLACES in rec.parts  # the record folds the rest as it grows
