"""Widgets fed recorded events of real runs (tests/data): no engine, no torch."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from ddp_viz._qt.engine_process import EngineProcess
from ddp_viz.model import protocol
from ddp_viz.model.timeline import Cursor, RunStatus
from tests.conftest import load_recording
from tests.qt_helpers import feed

pytestmark = pytest.mark.usefixtures("qapp")


def test_stage_passes_through_all_four_phases_with_the_recorded_numbers(qtbot, window):
    entered: list[str] = []
    window.player.phase_entered.connect(entered.append)
    with qtbot.waitSignal(window.run_shown, timeout=30_000):
        feed(window, load_recording("default-run.jsonl"))
    assert entered[:4] == ["shards", "local", "allreduce", "step"]
    assert window.player.cursor == Cursor(0, 3) and window.player.progress == 1.0
    shown = window.stage.frame().numbers()
    assert shown["rank0.local.weight"] == -10.5 and shown["rank0.local.bias"] == -6.5
    assert shown["rank1.local.weight"] == -44.5 and shown["rank1.local.bias"] == -12.5
    for r in (0, 1):
        assert shown[f"rank{r}.averaged.weight"] == -27.5
        assert shown[f"rank{r}.averaged.bias"] == -9.5
        assert shown[f"rank{r}.params.weight"] == pytest.approx(0.775, abs=1e-6)
        assert shown[f"rank{r}.params.bias"] == pytest.approx(0.095, abs=1e-6)
    assert "ranks agree" in window.status.text() and "average = full batch" in window.status.text()


def test_code_view_highlights_backward_during_the_all_reduce(qtbot, window):
    feed(window, load_recording("default-run.jsonl"))
    qtbot.waitUntil(lambda: window.player.cursor == Cursor(0, 3))
    window.player.cursor, window.player.progress = Cursor(0, 1), 1.0
    window.player.step_forward()  # into the all-reduce
    assert window.player.cursor.phase_name == "allreduce"
    assert window.code_view.highlighted_text() == ["loss.backward()  # + all-reduce (DDP)"]
    window.player.step_forward()
    assert window.code_view.highlighted_text()[0].startswith("optimizer.step()")


def test_keyboard_steps_back_and_forth(qtbot, window):
    window.lesson_view.setFocus()  # a read-only text must not swallow the presenter's keys
    with qtbot.waitSignal(window.run_shown, timeout=30_000):
        feed(window, load_recording("four-ranks-3-steps.jsonl"))
    qtbot.waitUntil(lambda: not window.player.playing)
    assert window.player.cursor == Cursor(2, 3)
    qtbot.keyClick(window, Qt.Key.Key_Left)
    assert window.player.cursor == Cursor(2, 2)
    qtbot.keyClick(window, Qt.Key.Key_PageUp)
    assert window.player.cursor == Cursor(2, 1)
    qtbot.keyClick(window, Qt.Key.Key_Right)
    assert window.player.cursor == Cursor(2, 2)
    qtbot.keyClick(window, Qt.Key.Key_Home)
    assert window.player.cursor == Cursor(0, 0)
    qtbot.keyClick(window, Qt.Key.Key_Space)
    assert window.player.playing
    qtbot.waitUntil(lambda: not window.player.playing)
    assert window.player.cursor == Cursor(2, 3)
    # typing into a field keeps its keys: R is a letter there, not Run
    window.form.lr.setFocus()
    window.form.lr.selectAll()
    qtbot.keyClicks(window.form.lr, "R")
    assert window.form.lr.text() == "R" and not window.session.busy


def test_process_view_and_plots_show_the_recorded_run(qtbot, window):
    events = load_recording("four-ranks-3-steps.jsonl")
    feed(window, events)
    qtbot.waitUntil(lambda: not window.player.playing)  # the plots wait for the stage
    rec = window.session.record
    rows = window.process_view.rows()
    assert [r[0] for r in rows] == ["0", "1", "2", "3"]
    assert [r[1] for r in rows] == [str(rec.pids[r]) for r in range(4)]
    assert {r[2] for r in rows} == {"done"}
    assert [r[3] for r in rows] == ["1", "2", "3", "4"]
    xs, ys = window.plots._curves["loss2"].getData()
    assert list(xs) == [1, 2, 3]  # steps count from 1 in every view
    assert list(ys) == [rec.steps[s].ranks[2].loss for s in range(3)]
    px, ws = window.plots._curves["p0:3"].getData()  # the first parameter, rank 3
    assert list(px) == [0, 1, 2, 3] and ws[0] == 0.5
    assert ws[-1] == rec.steps[2].ranks[3].params["weight"][0]


def test_a_long_run_plots_every_loss_and_the_parameters_where_they_were_recorded(qtbot, window):
    feed(window, load_recording("long-run-32-steps.jsonl"))
    rec = window.session.record
    xs, ys = window.plots._curves["loss1"].getData()
    assert list(xs) == list(range(1, 33))  # the loss comes at every step
    assert list(ys) == [st.ranks[1].loss for st in rec.steps]
    px, ws = window.plots._curves["p0:1"].getData()
    # the start, steps 1-20, 30 and the last: no point, and no gap, for a step without values
    assert list(px) == [0, *range(1, 21), 30, 32] and np.isfinite(ws).all()
    assert ws[-1] == rec.steps[31].ranks[1].params["weight"][0]
    assert "every 10th step" in window.plots.param_plot.toolTip()
    assert "every 10th step" in window.form.steps.toolTip()  # said before a run too
    window.player.seek_step(24)
    text = window.stage.frame().all_text()
    assert "Step 25 of 32" in text and "not recorded at this step" in text


def test_uneven_run_is_flagged_not_hidden(qtbot, window):
    with qtbot.waitSignal(window.run_shown, timeout=30_000):  # flagged once the stage shows it
        feed(window, load_recording("uneven-3-ranks.jsonl"))
    assert "average ≠ full batch" in window.status.text()


def test_a_failed_run_is_shown_and_the_window_stays_usable(qtbot, window):
    events = load_recording("default-run.jsonl")
    cut = [e for e in events if not isinstance(e, protocol.RunFinished)][:9]
    feed(window, [*cut, protocol.RunFailed(run=1, reason="rank 1 was killed by SIGKILL", rank=1)])
    assert window.session.record.status is RunStatus.FAILED
    assert "SIGKILL" in window.status.text()
    assert [r[2] for r in window.process_view.rows()] == ["stopped", "failed"]
    assert window.form.isEnabled() and not window.session.busy


def test_a_fields_help_comes_back_once_its_error_is_fixed(qtbot, window):
    form = window.form
    assert "bucket_cap_mb" in form.bucket_cap.toolTip()  # validated at start: still there
    assert "every 10th step" in form.steps.toolTip()
    form.bucket_cap.setText("-1")
    assert "bucket_cap_mb" not in form.bucket_cap.toolTip() and form.bucket_cap.toolTip()
    form.bucket_cap.setText("25")
    assert form.valid and "bucket_cap_mb" in form.bucket_cap.toolTip()


def test_invalid_fields_are_marked_and_run_is_disabled(qtbot, window):
    window.form.lr.setText("-0.5")
    assert not window.form.valid
    assert not window.run_action.isEnabled()
    assert "Learning rate: must be greater than 0" in window.form.error_label.text()
    assert "greater than 0" in window.form.lr.toolTip()
    window.form.lr.setText("0.02")
    window.form.table.item(2, 1).setText("seven")
    assert "y in row 3: must be a number" in window.form.error_label.text()
    assert not window.run_action.isEnabled()
    window.form.table.item(2, 1).setText("7")
    window.form.world_size.setValue(5)
    assert "World size" in window.form.error_label.text()
    window.form.world_size.setValue(4)
    assert window.form.valid and window.run_action.isEnabled()
    assert window.form.scenario().world_size == 4 and window.form.scenario().lr == 0.02


def test_data_rows_can_be_added_and_removed(qtbot, window):
    form = window.form
    form.add_row.click()  # valid at once: y on the line through the last two rows
    assert form.table.rowCount() == 5 and form.valid
    assert form.scenario().x == (1, 2, 3, 4, 5) and form.scenario().y[-1] == 11
    form.table.item(4, 1).setText("12")
    assert form.valid and form.scenario().y[-1] == 12
    form.table.setCurrentCell(0, 0)
    form.remove_row.click()
    assert form.scenario().x == (2, 3, 4, 5)
    form.reset.click()
    assert form.scenario().x == (1, 2, 3, 4)


def test_quiz_grades_first_answers_and_renders_markdown(qtbot, window):
    quiz = window.quiz_view
    quiz.answer("when-averaged", 3)
    assert "Not quite" in quiz.feedback["when-averaged"].text()
    quiz.answer("when-averaged", 2)
    assert quiz.feedback["when-averaged"].text().startswith("✓ Right")
    quiz.answer("sum-or-average", 2)
    # the corrected first question still scores as wrong: only first answers count
    assert quiz.score.correct == 1 and quiz.score.answered == 2
    assert quiz.score_label.text().startswith(f"Score: 1 / {len(quiz.questions)} first answers")
    labels = [w.text() for w in quiz.findChildren(type(quiz.score_label))]
    assert not any("`" in t for t in labels)  # inline code is rendered, never raw Markdown
    assert any("<code>" in t for t in labels)


def lock(qtbot, window, text: str) -> None:
    quiz = window.quiz_view
    quiz.prediction_edits["predict-three-ranks"].setText(text)
    button = quiz.findChild(type(window.form.add_row), "lock_predict-three-ranks")
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_prediction_is_graded_when_the_stage_reveals_the_average(qtbot, window):
    quiz = window.quiz_view
    lock(qtbot, window, "−33.2")
    assert "Locked in: -33.2" in quiz.feedback["predict-three-ranks"].text()
    window.player.phase_ms = 10_000  # slow enough to look at each phase
    feed(window, load_recording("uneven-3-ranks.jsonl"))
    assert window.player.cursor.phase == 0
    assert "Locked in" in quiz.feedback["predict-three-ranks"].text()  # not graded yet
    window.player.step_forward()  # finish the shards phase
    window.player.step_forward()  # local gradients: still not the averaged value
    assert window.player.cursor.phase_name == "local"
    assert "Locked in" in quiz.feedback["predict-three-ranks"].text()
    window.player.step_forward()  # the all-reduce reveals the average
    fb = quiz.feedback["predict-three-ranks"].text()
    assert fb.startswith("✓ Right") and "the ranks computed -33.1667" in fb
    assert quiz.score.first["predict-three-ranks"] is True


def test_a_prediction_cannot_be_locked_during_a_run_and_grades_once(qtbot, window):
    quiz = window.quiz_view
    window.player.phase_ms = 10_000
    events = load_recording("uneven-3-ranks.jsonl")
    run_started = next(i for i, e in enumerate(events) if isinstance(e, protocol.RunStarted))
    feed(window, events[: run_started + 3])  # streaming
    lock(qtbot, window, "-20")
    assert "before the next Run" in quiz.feedback["predict-three-ranks"].text()
    assert window.session.predictions == {}
    feed(window, events[run_started + 3 :])
    window.player.seek_step(1)
    assert quiz.score.answered == 0  # nothing was locked for this run: nothing graded


def test_a_wrong_guess_below_the_answer_is_wrong(qtbot, window):
    quiz = window.quiz_view
    lock(qtbot, window, "-40")
    with qtbot.waitSignal(window.run_shown, timeout=30_000):
        feed(window, load_recording("uneven-3-ranks.jsonl"))
    assert quiz.feedback["predict-three-ranks"].text().startswith("✗ Not quite")
    assert quiz.score.first["predict-three-ranks"] is False


def test_bad_engine_lines_are_counted_and_never_crash(qtbot):
    engine = EngineProcess()
    got, bad = [], []
    engine.event_received.connect(got.append)
    engine.bad_line.connect(bad.append)
    engine.feed_stdout(b'{"event":"engine_ready","pid":1,"version":"x"}\nnot json\n')
    engine.feed_stdout(b'{"event":"teleport"}\n{"event":"params","run":1}\n\xff\xfe\n')
    engine.feed_stdout(b"x" * (5 * 1024 * 1024))
    engine.feed_stdout(b'\n{"event":"run_cancelled","run":3}\n')
    assert [type(e).__name__ for e in got] == ["EngineReady", "RunCancelled"]
    assert engine.bad_lines == len(bad) == 5


def test_process_view_shows_the_pool_warming_while_a_run_waits(qtbot, window):
    feed(window, load_recording("default-run.jsonl"))  # a finished run is on show
    view = window.process_view
    view.set_pending(4)
    states = [
        protocol.WorkerState(slot=s, pid=100 + s, state=st)
        for s, st in enumerate(["ready", "ready", "starting", "starting"])
    ]
    view.set_workers({w.slot: w for w in states})
    assert [r[2] for r in view.rows()] == ["warm", "warm", "starting", "starting"]
    assert view.engine_label.text() == "starting 4 rank(s)… 2 warm"
    view.set_record(window.session.record)
    assert [r[2] for r in view.rows()] == ["done", "done"]
    assert view.engine_label.text() == "engine: running"


def test_the_course_switches_lessons_and_remembers_what_is_done(qtbot, make_window, settings):
    window = make_window(settings=settings)
    assert window.lesson.id == "ddp-pattern"
    course = window.course_view
    assert course.list.count() == len(window.course) >= 2
    # the window opens on the first lesson: launching and the DDP pattern
    assert not course.previous.isEnabled() and course.next.isEnabled()
    assert course.list.item(0).text().split()[1:3] == ["1.", "Launching"]
    window.lesson_view.setFocus()  # a text browser would take Alt+Right as "forward"
    qtbot.keyClick(window.lesson_view, Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)
    assert window.lesson.id == "every-parameter"
    assert window.form.scenario().model.kind == "mlp"
    assert "MLP 1 → 8 → 1" in window.form.model_label.text()
    assert not window.form.init_weight.isEnabled()  # the MLP starts from its seed
    assert window.code_view.toPlainText().count("nn.Sequential") == 1
    assert window.quiz_view.questions == list(window.lesson.questions)
    # pass the quiz: every choice question right, and the prediction graded right
    quiz = window.quiz_view
    for q in quiz.questions:
        if q.kind == "choice":
            quiz.answer(q.id, q.answer)
        else:
            from ddp_viz.model.quiz import Feedback

            quiz.show_feedback(q, Feedback(True, "Right"))
    assert "every-parameter" in window.course.done
    assert course.list.item(1).text().startswith("✓")
    qtbot.keyClick(window, Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier)
    assert window.lesson.id == "ddp-pattern"
    window.close()
    again = make_window(settings=settings)
    assert "every-parameter" in again.course.done
    assert again.lesson.id == "ddp-pattern"  # the lesson last shown
    assert again.course_view.list.item(1).text().startswith("✓")


def test_lessons_do_not_change_during_a_run(qtbot, window):
    window.player.phase_ms = 10_000
    events = load_recording("default-run.jsonl")
    feed(window, events[:-1])
    window.next_lesson()
    assert window.lesson.id == "ddp-pattern" and "Finish or cancel" in window.status.text()


def test_plots_keep_their_scale_after_a_theme_switch_and_a_new_run(qtbot, window):
    feed(window, load_recording("four-ranks-3-steps.jsonl"))
    window.theme_actions["dark"].trigger()
    window.theme_actions["light"].trigger()
    feed(window, load_recording("four-ranks-3-steps.jsonl"))
    axis = window.plots.param_plot.getPlotItem().getAxis("left")
    assert not axis.autoSIPrefix and axis.autoSIPrefixScale == 1.0
    # tick labels unscaled: an SI prefix left behind would label 0.5 as "500" (milli-units)
    assert axis.tickStrings([0.5, 1.0], axis.autoSIPrefixScale, 0.5) == ["0.5", "1.0"]
    # a theme applied while an axis spans less than 1 (a loss of 0.1-0.5): pyqtgraph worked out
    # "milli" then, and every tick read 1000x its value from then on
    for w in (window.plots.loss_plot, window.plots.param_plot):
        w.setYRange(0.1, 0.5, padding=0)
        w.setXRange(0.1, 0.9, padding=0)
    window.theme_actions["dark"].trigger()
    for w in (window.plots.loss_plot, window.plots.param_plot):
        for side in ("left", "bottom"):
            assert w.getPlotItem().getAxis(side).autoSIPrefixScale == 1.0, side


def test_a_one_step_run_shows_its_full_batch_loss(qtbot, window):
    feed(window, load_recording("default-run.jsonl"))
    qtbot.waitUntil(lambda: not window.player.playing)  # the plots wait for the stage
    xs, ys = window.plots._curves["full"].getData()
    assert list(xs) == [1] and ys[0] == window.session.record.steps[0].reference.full_batch_loss
    assert window.plots._curves["full"].opts["symbol"] == "+"  # a single point is drawn


def test_a_diverging_run_is_drawn_on_a_symmetric_log_scale(qtbot, window):
    feed(window, load_recording("diverging-lr10.jsonl"))
    rec = window.session.record
    assert rec.status is RunStatus.FAILED and rec.reason.startswith("diverged at step 18")
    window.plots.update_record(rec, final=True)
    _, ys = window.plots._curves["loss0"].getData()
    finite = ys[np.isfinite(ys)]
    assert finite.max() > 10  # log10 of the blown-up loss: the growth is visible, not flat at 0
    losses = [st.ranks[0].loss for st in rec.steps]
    assert finite[-1] == pytest.approx(np.log10(1 + max(v for v in losses if np.isfinite(v))))
    axis = window.plots.loss_plot.getPlotItem().getAxis("left")
    assert "(symmetric log)" in axis.labelText or "(symlog)" in axis.labelText
    # the label runs up the axis: it fits its height (issue 47, 4: "loss (symmetric lo")
    from PySide6.QtGui import QFont, QFontMetrics

    font = QFont(axis.label.font())
    font.setPixelSize(window.plots.text_px)
    assert QFontMetrics(font).horizontalAdvance(axis.labelText) <= axis.height(), (
        axis.labelText,
        axis.height(),
    )
    (y0, y1) = window.plots.param_plot.viewRange()[1]
    assert np.isfinite(y0) and np.isfinite(y1) and y1 < 400


def test_a_cancelled_long_run_plots_the_steps_it_made(qtbot, window):
    events = [e for e in load_recording("four-ranks-3-steps.jsonl") if e.kind != "run_finished"]
    started = next(i for i, e in enumerate(events) if isinstance(e, protocol.RunStarted))
    events[started] = protocol.RunStarted(**{**events[started].__dict__, "steps": 100_000})
    feed(window, events)
    window.session.tick()
    (_, x1), _ = window.plots.loss_plot.viewRange()
    assert x1 < 60  # while it streams, the axis spans the steps so far, not 100,000
    feed(window, [protocol.RunCancelled(run=1)])
    (_, x1), _ = window.plots.loss_plot.viewRange()
    assert x1 < 10  # three steps fill the plot, not 3 of 100,000
    assert "cancelled after 3 complete step(s)" in window.status.text()
    assert window.step_slider.maximum() == 2
    window.player.seek_step(2)
    assert "Step 3 of 3" in window.stage.frame().all_text()
    assert window.position_label.text().startswith(" step 3/3 ")  # not 3/100000


def test_the_window_is_the_session_view_it_claims_to_be(window):
    import inspect

    from ddp_viz.model.session import SessionView

    for name, member in inspect.getmembers(SessionView, inspect.isfunction):
        if name.startswith("show_"):
            mine = getattr(window, name)
            wanted = list(inspect.signature(member).parameters)[1:]
            assert list(inspect.signature(mine).parameters) == wanted, name


def test_a_visit_to_another_lesson_keeps_the_quiz_and_clears_the_stage(qtbot, window):
    feed(window, load_recording("default-run.jsonl"))
    quiz = window.quiz_view
    quiz.answer("when-averaged", 2)
    window.next_lesson()
    assert window.stage.record is None and "Press Run" in window.stage.frame().all_text()
    assert window.plots.record is None
    assert window.quiz_view is not quiz and window.quiz_view.score.answered == 0
    window.previous_lesson()
    assert window.quiz_view is quiz and quiz.score.first == {"when-averaged": True}
    assert window.tabs.widget(window.tabs.indexOf(quiz)) is quiz


def test_a_practice_prediction_still_passes_the_lesson(qtbot, window):
    from ddp_viz.model.quiz import Feedback

    quiz = window.quiz_view
    for q in quiz.questions:
        if q.kind == "choice":
            quiz.answer(q.id, q.answer)
        else:
            quiz.show_feedback(q, Feedback(True, "Right"), scored=False)  # seen before locking
    assert window.lesson.id in window.course.done
    assert quiz.score.correct == len(quiz.questions) - 1  # the practice answer does not score


def test_a_many_parameter_plot_names_its_line_styles(qtbot, window):
    window.set_lesson("every-parameter")
    feed(window, load_recording("mlp-2-ranks-3-steps.jsonl"))
    item = window.plots.param_plot.getPlotItem()
    legend = item.legend
    labels = [label.text for _, label in legend.items]
    assert labels == ["‖0.weight‖", "‖0.bias‖", "‖2.weight‖", "2.bias"]
    # below the plot, never over its lines (inside, it hid the biggest norms)
    window.plots.param_plot.resize(400, 400)
    item.layout.activate()  # as the event loop would before painting
    shown = legend.sceneBoundingRect()
    assert shown.top() >= item.vb.sceneBoundingRect().bottom()
    assert shown.intersected(item.vb.sceneBoundingRect()).isEmpty()
    window.plots.clear_run()  # no run: no legend row under the placeholder
    assert item.legend is None and legend.scene() is None
    window.set_lesson("ddp-pattern")
    feed(window, load_recording("default-run.jsonl"))
    assert item.legend is None  # the title names two


def test_a_legend_for_many_parameters_would_squeeze_the_plot_so_there_is_none(qtbot, window):
    from types import SimpleNamespace

    from ddp_viz._qt.plot_legend import LEGEND_UP_TO

    plots = window.plots

    def run_of(n: int) -> SimpleNamespace:
        params = [SimpleNamespace(name=f"{i}.weight", numel=4) for i in range(n)]
        return SimpleNamespace(params=params, scenario={}, foreign_model=False)

    assert plots._param_legend(run_of(LEGEND_UP_TO)) is not None
    assert plots._param_legend(run_of(LEGEND_UP_TO + 1)) is None
    # A real run of 8 parameters: a legend names each of their lines
    window.set_lesson("buckets")
    feed(window, load_recording("buckets-lesson-2-ranks.jsonl"))
    item = plots.param_plot.getPlotItem()
    assert len(item.listDataItems()) >= 2 * 8  # 2 ranks' lines for each
    labels = [label.text for _, label in item.legend.items]
    norms = [f"‖{layer}.{kind}‖" for layer in (0, 2, 4, 6) for kind in ("weight", "bias")]
    assert labels == [*norms[:-1], "6.bias"]  # the last bias is one number: its value


def _pen_colour(item) -> str:
    return item.opts["pen"].color().name()


@pytest.mark.parametrize(
    ("size", "projector"), [((1280, 800), False), ((1280, 800), True), ((1920, 1080), True)]
)
def test_each_tensor_s_curve_has_its_own_colour_and_the_legend_names_it(
    qtbot, make_window, settings, size, projector
):
    """Issue 33, items 8 and 11: the buckets lesson's parameter plot drew its 8 tensors in the
    ranks' colours with 4 dashes, and its legend showed 8 identical markers; on a projector it
    had no legend at all. Each tensor now has a colour of its own, on every rank's curve, and
    the legend (also on a projector, at 1280×800 too) shows that colour beside its name,
    inside the plot's width."""
    window = make_window(size, settings=settings, lesson_id="buckets")
    window.presentation.set_projector(projector)
    feed(window, load_recording("buckets-lesson-2-ranks.jsonl"))
    QApplication.processEvents()
    plots = window.plots
    rec = plots.record
    item = plots.param_plot.getPlotItem()
    legend = item.legend
    assert legend is not None and len(legend.items) == len(rec.params) == 8
    swatches = [_pen_colour(sample.item) for sample, _ in legend.items]
    assert len(set(swatches)) == 8, swatches  # eight colours, not eight of one marker
    for i in range(len(rec.params)):
        for r in range(rec.world_size):
            assert _pen_colour(plots._curves[f"p{i}:{r}"]) == swatches[i], (i, r)
    names = [label.text for _, label in legend.items]
    assert names[0] in ("‖0.weight‖", "0.w") and len(set(names)) == 8
    # the whole plot, legend and title included, fits its panel: nothing is cut at the edge
    need = item.layout.effectiveSizeHint(Qt.SizeHint.MinimumSize).width()
    assert need <= plots.param_plot.width(), (need, plots.param_plot.width())


def test_the_form_keeps_a_scenario_s_sampler_and_lets_epochs_set_the_length(qtbot, window):
    from ddp_viz.model.scenario import Scenario

    s = Scenario.from_mapping(
        {
            "x": [1.0, 2.0, 3.0, 4.0, 5.0],
            "y": [1.0, 2.0, 3.0, 4.0, 5.0],
            "data": {"sampler": "distributed", "batch_size": 2, "epochs": 2},
            "train": {"loss_reduction": "sum"},
        }
    )
    window.form.set_scenario(s)
    assert not window.form.steps.isEnabled()
    window.form.world_size.setValue(3)  # 2 rows a rank: one batch an epoch
    got = window.form.scenario()
    assert got is not None and got.data == s.data and got.train == s.train
    assert got.world_size == 3 and got.steps == 2


def test_the_sampler_knobs_show_for_a_data_lesson_and_change_the_run(qtbot, window):
    form = window.form
    assert not form.shuffle.isVisible()  # the first lesson has no sampler
    window.set_lesson("who-splits-the-data")
    assert form.shuffle.isVisible() and not form.bucket_cap.isVisible()
    form.drop_last.setChecked(True)
    form.set_epoch.setChecked(False)
    form.train.reduction.setCurrentText("sum")
    form.batch_size.setValue(2)
    s = form.scenario()
    assert s is not None
    assert (s.data.drop_last, s.data.set_epoch, s.data.batch_size) == (True, False, 2)
    assert s.train.loss_reduction == "sum"
    # ten rows, three ranks, drop_last: three rows each, batches of two: 2 steps, 3 epochs
    assert s.steps == 6 and form.steps.value() == 6
    window.set_lesson("ddp-pattern")
    assert not form.shuffle.isVisible() and form.bucket_cap.isVisible()


def test_the_accumulation_knobs_show_for_the_no_sync_lesson_and_change_the_run(qtbot, window):
    form = window.form
    acc = form.kind_fields["accumulation"]  # the kind's fields for the core's [train] knobs
    window.set_lesson("who-splits-the-data")
    assert not acc.no_sync.isVisible()  # a sampler lesson without accumulation
    window.set_lesson("accumulate-with-no-sync")
    assert acc.no_sync.isVisible() and acc.scale_loss.isChecked()
    assert form.steps.value() == 3  # 3 epochs of 3 batches, 3 batches a step
    acc.no_sync.setCurrentIndex(acc.no_sync.findData("none"))
    acc.scale_loss.setChecked(False)
    form.batch_size.setValue(1)  # 6 batches an epoch: 2 optimizer steps each
    s = form.scenario()
    assert s is not None and (s.train.no_sync, s.train.scale_loss) == ("none", False)
    assert s.steps == 6 and form.steps.value() == 6
    acc.accumulate.setValue(4)  # 18 batches: 4 steps of 4, the last 2 never stepped
    assert form.scenario().steps == 4 and form.steps.value() == 4
    acc.accumulate.setValue(19)  # more than the run's 18 batches: said, not run
    assert form.scenario() is None and "Micro-batches" in form.error_label.text()
    assert window.run_action.isEnabled() is False
    acc.accumulate.setValue(3)
    assert form.scenario() is not None
    window.set_lesson("ddp-pattern")
    assert not acc.no_sync.isVisible()


def test_the_plots_are_current_when_the_run_is_shown_to_its_end(qtbot, window):
    """Whoever waits for run_shown (a screenshot, --quit, a lecturer's GIF) sees every step in
    the plots: showing the last step comes after the plots took in the record."""
    from tests.frames import linear_run

    rec = linear_run(2, steps=40)  # a long run: fast mode follows the latest step
    seen = []
    window.run_shown.connect(lambda _r: seen.append(window.plots._curves["loss0"].getData()[0]))
    feed(window, list(rec.events))
    assert window.player.follow_latest
    assert len(seen) == 1 and list(seen[0]) == list(range(1, 41))
