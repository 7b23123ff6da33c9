"""Changing lessons, and what the window says about the run on it (widgets fed recordings)."""

from __future__ import annotations

from tests.conftest import load_recording
from tests.qt_helpers import feed


def test_another_lesson_forgets_the_last_run_everywhere(qtbot, window):
    """The toolbar's step, the slider, the processes and the parameter plot's title all spoke of
    the previous lesson's run over an empty stage."""
    feed(window, load_recording("mlp-buckets-2-ranks.jsonl"))
    assert "step" in window.position_label.text() and window.process_view.rows()[0][0] == "0"
    assert "per tensor" in window.plots.param_plot.getPlotItem().titleLabel.text
    window.next_lesson()
    assert window.position_label.text() == "" and window.step_slider.maximum() == 0
    assert all(r[0] == "—" for r in window.process_view.rows())  # the pool, no ranks
    assert window.plots.param_plot.getPlotItem().titleLabel.text == "Parameters"


def test_the_processes_say_which_epoch_their_rows_are_from(qtbot, window):
    """A sampler gives other rows every epoch: the column is the first epoch's, and says so."""
    feed(window, load_recording("who-splits-3-ranks.jsonl"))
    assert window.process_view.table.horizontalHeaderItem(3).text() == "epoch 1"
    window.next_lesson()
    feed(window, load_recording("default-run.jsonl"))  # contiguous blocks: the same every step
    assert window.process_view.table.horizontalHeaderItem(3).text() == "rows"


def test_a_long_run_draws_the_full_batch_loss_as_a_line(qtbot, window):
    """Crosses at its 20 first reference steps buried the ranks' curves; a short run keeps
    them (a one-step run's full-batch loss is a single point)."""
    from tests.frames import linear_run

    feed(window, list(linear_run(2, steps=80).events))
    full = window.plots._curves["full"]
    assert full.opts["symbol"] is None and len(full.getData()[0]) > 20
    assert "dashed: full batch" in window.plots.loss_plot.getPlotItem().titleLabel.text
    feed(window, load_recording("default-run.jsonl"))
    assert window.plots._curves["full"].opts["symbol"] == "+"
    assert "dashed +: full batch" in window.plots.loss_plot.getPlotItem().titleLabel.text


def test_a_recording_opens_on_its_lesson_with_its_settings_in_the_form(qtbot, window):
    """An MLP recording opened on the DDP pattern lesson, nn.Linear(1, 1) in its listing and
    the lesson's one step in the form."""
    from pathlib import Path

    data = Path(__file__).parents[1] / "data"
    window.file_actions.open_run(data / "mlp-2-ranks-3-steps.jsonl")
    assert window.lesson.id == "every-parameter"
    rec = window.session.record
    s = window.form.scenario()
    assert s is not None and s.steps == rec.steps_planned == 3 and s.world_size == 2
    assert s.model.kind == "mlp" and "nn.Linear(1, 1)" not in window.code_view.code
    window.file_actions.open_run(data / "buckets-lesson-2-ranks.jsonl")
    assert window.lesson.id == "buckets" and window.form.scenario().ddp.bucket_cap_mb == 0.001


def test_a_short_run_s_step_axes_tick_whole_steps(qtbot, window):
    feed(window, load_recording("four-ranks-3-steps.jsonl"))
    for plot in (window.plots.loss_plot, window.plots.param_plot):
        lo, hi = plot.viewRange()[0]
        ticks = [
            v for _, vs in plot.getPlotItem().getAxis("bottom").tickValues(lo, hi, 300) for v in vs
        ]
        assert ticks and all(v == int(v) for v in ticks), ticks  # no 1.5, 2.5


def test_a_run_whose_steps_set_its_length_shows_no_epoch_count(qtbot, window):
    """`--steps 40` on the sampler lesson: the form said 'Epochs 1', and changing it did
    nothing."""
    window.set_lesson("who-splits-the-data")
    form = window.form
    assert form.epochs.isEnabled() and form.epochs.value() == 3 and not form.steps.isEnabled()
    form.set_scenario(window.lesson.scenario().with_changes(steps=40))
    assert form.epochs.text() == "–" and not form.epochs.isEnabled()
    assert form.steps.isEnabled() and form.steps.value() == 40
    assert "Steps sets" in form.epochs.toolTip()
    form.set_enabled_for_run(False)
    form.set_enabled_for_run(True)
    assert not form.epochs.isEnabled() and form.scenario().steps == 40


def test_a_short_run_zoomed_out_gets_pyqtgraph_s_own_ticks(qtbot, window):
    """A tick per step across a view 20,000 steps wide took pyqtgraph seconds a paint."""
    feed(window, load_recording("four-ranks-3-steps.jsonl"))
    plot = window.plots.loss_plot
    plot.setXRange(0, 20_000, padding=0)
    lo, hi = plot.viewRange()[0]
    axis = plot.getPlotItem().getAxis("bottom")
    assert sum(len(vs) for _, vs in axis.tickValues(lo, hi, 300)) < 50


def test_epochs_cannot_be_stepped_down_to_a_one_step_run(qtbot, window):
    """At 1, a Down key gave "–", which dropped the length to 1 step with Steps still off."""
    window.set_lesson("who-splits-the-data")
    form = window.form
    form.epochs.setValue(1)
    form.epochs.stepDown()
    assert form.epochs.value() == 1 and form.scenario().steps >= 1
    assert form.scenario().data.epochs == 1


def test_another_lesson_has_nothing_to_export(qtbot, window, tmp_path):
    """An export after a lesson switch drew the last lesson's run over an empty stage."""
    import pytest
    from PIL import Image

    feed(window, load_recording("ring-2-ranks.jsonl"))
    # The control: on the run's own lesson there is something to export.
    before = window.file_actions.export_gif(tmp_path / "before.gif")
    with Image.open(before) as gif:
        assert gif.n_frames > 1
    window.file_actions.export_trace(tmp_path / "before.json")
    window.file_actions.export_events(tmp_path / "before.jsonl")
    assert (tmp_path / "before.jsonl").read_text().count("\n") == 1 + len(  # the header
        load_recording("ring-2-ranks.jsonl")
    )
    window.set_lesson("ddp-pattern")
    for export in ("gif", "trace", "events"):
        with pytest.raises(ValueError, match="run something first"):
            getattr(window.file_actions, f"export_{export}")(tmp_path / f"after.{export}")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "before.gif",
        "before.json",
        "before.jsonl",
    ]


def test_a_visit_back_finds_the_learner_s_own_settings(qtbot, window):
    """Switching lessons threw the form's edits away without a word; quiz answers survived."""
    window.set_lesson("ddp-pattern")
    window.form.lr.setText("0.02")
    window.form.world_size.setValue(4)
    window.next_lesson()
    assert window.form.scenario().lr != 0.02  # the next lesson's own
    window.previous_lesson()
    s = window.form.scenario()
    assert (s.lr, s.world_size) == (0.02, 4) and "your settings" in window.status.text()
    window.form.reset.click()  # Lesson values
    assert window.form.scenario() == window.lesson.scenario()
    window.next_lesson()
    window.previous_lesson()
    assert window.form.scenario() == window.lesson.scenario()
    assert "your settings" not in window.status.text()
