"""The window driving real gloo ranks: Run button, cancel, faults, closing mid-run."""

from __future__ import annotations

import math
import os
import signal

import psutil
import pytest
from PySide6.QtCore import Qt

from ddp_viz.kinds.accumulation.counts import allreduces
from ddp_viz.kinds.accumulation.record import micro_of
from ddp_viz.model.session import EngineState
from ddp_viz.model.timeline import Cursor, RunStatus, grads_close, record
from tests.conftest import still_running
from tests.qt.lent_engine import lend_engine

pytestmark = pytest.mark.gloo


def start_engine(qtbot, window, own: bool = False) -> None:
    """Start the window's engine: the worker's warm one, lent (see ``lent_engine``), unless
    the test is about the engine's own life (``own``)."""
    if not own:
        lend_engine(window)
    window.start()
    qtbot.waitUntil(lambda: window.session.engine_ready, timeout=60_000)
    qtbot.waitUntil(lambda: len(window.session.workers) >= 2, timeout=60_000)


def click_run(qtbot, window) -> None:
    button = window.toolbar_button(window.run_action)
    assert button.isEnabled()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def lock_guess(qtbot, window, qid: str, guess: str) -> None:
    """Type a prediction into the quiz and lock it, as a learner does, before Run."""
    quiz = window.quiz_view
    quiz.prediction_edits[qid].setText(guess)
    lock = quiz.findChild(type(window.form.add_row), f"lock_{qid}")
    qtbot.mouseClick(lock, Qt.MouseButton.LeftButton)


def guess_then_run(qtbot, window, qid: str, guess: str):  # -> RunRecord
    """Lock a guess, run again once Run is back, and return the run once it has been shown."""
    lock_guess(qtbot, window, qid, guess)
    qtbot.waitUntil(lambda: window.run_action.isEnabled(), timeout=30_000)
    with qtbot.waitSignal(window.run_shown, timeout=60_000):
        click_run(qtbot, window)
    return window.session.record


def start_long_run(qtbot, window, own: bool = False) -> None:
    """Start a 100,000-step run from the window and return once it is streaming."""
    start_engine(qtbot, window, own)
    window.form.steps.setValue(100_000)
    with qtbot.waitSignal(window.run_started, timeout=30_000):
        click_run(qtbot, window)
    qtbot.waitUntil(lambda: len(window.session.record.steps) > 3, timeout=30_000)


def run_again_and_finish(qtbot, window) -> None:
    """The window is usable again: Run comes back and a new real run finishes."""
    qtbot.waitUntil(lambda: window.run_action.isEnabled(), timeout=30_000)
    with qtbot.waitSignal(window.run_shown, timeout=60_000):
        click_run(qtbot, window)
    assert window.session.record.status is RunStatus.FINISHED


def tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def test_run_button_runs_real_ranks_and_shows_their_numbers(qtbot, window):
    start_engine(qtbot, window)
    with qtbot.waitSignal(window.run_shown, timeout=60_000):
        click_run(qtbot, window)
    rec = window.session.record
    assert rec.status is RunStatus.FINISHED
    # the rank processes were real and separate from the window and the engine
    assert len(set(rec.pids.values())) == 2 and os.getpid() not in rec.pids.values()
    assert window.session.transport.pid not in rec.pids.values()
    shown = window.stage.frame().numbers()
    assert window.player.cursor == Cursor(0, 3)
    assert (shown["rank0.local.weight"], shown["rank0.local.bias"]) == (-10.5, -6.5)
    assert (shown["rank1.local.weight"], shown["rank1.local.bias"]) == (-44.5, -12.5)
    assert shown["rank0.averaged.weight"] == shown["rank1.averaged.weight"] == -27.5
    assert shown["rank0.averaged.bias"] == shown["rank1.averaged.bias"] == -9.5
    assert shown["rank1.params.weight"] == pytest.approx(0.775, abs=1e-6)
    assert shown["rank1.params.bias"] == pytest.approx(0.095, abs=1e-6)
    # what is shown is exactly what the event stream said
    replay = record(rec.events)
    for r, rs in rec.steps[0].ranks.items():
        assert grads_close(replay.steps[0].ranks[r].averaged, rs.averaged)
        assert shown[f"rank{r}.local.weight"] == replay.steps[0].ranks[r].local["weight"][0]
    assert [row[2] for row in window.process_view.rows()] == ["done", "done"]
    assert "✓ ranks agree" in window.status.text()


def test_cancel_stops_every_rank_and_the_next_run_works(qtbot, window):
    start_long_run(qtbot, window)
    pids = list(window.session.record.pids.values())
    with qtbot.waitSignal(window.run_ended, timeout=5_000):
        qtbot.keyClick(window, Qt.Key.Key_Escape)
    assert window.session.record.status is RunStatus.CANCELLED
    qtbot.waitUntil(lambda: not any(psutil.pid_exists(p) for p in pids), timeout=1_000)
    window.form.steps.setValue(3)
    run_again_and_finish(qtbot, window)


@pytest.mark.posix_signals
def test_a_killed_rank_fails_the_run_visibly_and_the_next_run_works(qtbot, window):
    start_long_run(qtbot, window)
    victim = window.session.record.pids[1]
    with qtbot.waitSignal(window.run_ended, timeout=5_000):
        os.kill(victim, signal.SIGKILL)
    rec = window.session.record
    assert rec.status is RunStatus.FAILED and rec.failed_rank == 1 and "SIGKILL" in rec.reason
    assert [row[2] for row in window.process_view.rows()] == ["stopped", "failed"]
    assert "SIGKILL" in window.status.text()
    window.form.steps.setValue(2)
    run_again_and_finish(qtbot, window)


@pytest.mark.slow
@pytest.mark.posix_signals
def test_a_killed_engine_is_reported_and_can_be_restarted(qtbot, window):
    start_engine(qtbot, window, own=True)
    engine_pid = window.engine.pid
    family = tree(engine_pid)
    with qtbot.waitSignal(window.engine.state_changed, timeout=5_000):
        os.kill(engine_pid, signal.SIGKILL)
    assert window.engine.state is EngineState.CRASHED
    assert window.process_view.restart.isVisibleTo(window)
    assert "ended unexpectedly" in window.process_view.engine_label.text()
    # no rank outlives its engine
    alive = still_running(family, timeout=5)
    assert not alive
    window.process_view.restart.click()
    qtbot.waitUntil(lambda: window.session.engine_ready, timeout=60_000)
    run_again_and_finish(qtbot, window)


def test_closing_the_window_mid_run_leaves_no_process(qtbot, window):
    start_long_run(qtbot, window, own=True)
    family = tree(window.engine.pid)
    assert len(family) >= 3  # engine, forkserver, ranks
    window.close()
    alive = still_running(family, timeout=3)
    assert not alive, [p.pid for p in alive]


def test_stream_errors_are_counted_not_fatal(qtbot, window):
    start_engine(qtbot, window)
    window.engine.feed_stdout(b"garbage\n")
    window.engine.feed_stdout(b'{"event": "teleport"}\n{"event": "params", "run": 1')
    window.engine.feed_stdout(b"}\n")
    assert window.engine.bad_lines == 3
    assert "bad line" in window.process_view.log.toPlainText()
    # the window and its engine carry on: a real run still goes through end to end
    run_again_and_finish(qtbot, window)
    assert window.session.record.complete_prefix() == 1


def test_long_runs_stream_in_fast_mode(qtbot, window):
    start_engine(qtbot, window)
    window.form.world_size.setValue(4)
    window.form.steps.setValue(120)  # past FOLLOW_LATEST_ABOVE and EVERY_STEP_BELOW
    with qtbot.waitSignal(window.run_ended, timeout=120_000):
        click_run(qtbot, window)
    rec = window.session.record
    assert rec.status is RunStatus.FINISHED and len(rec.complete_steps()) == 120
    assert window.follow.isChecked()
    qtbot.waitUntil(lambda: window.player.cursor == Cursor(119, 3))
    xs, _ = window.plots._curves["loss3"].getData()
    assert len(xs) == 120  # every step reached the plots
    assert rec.bad_lines == 0


def test_divergence_is_reported_not_plotted_silently(qtbot, window):
    start_engine(qtbot, window)
    window.form.lr.setText("10")
    window.form.steps.setValue(500)
    with qtbot.waitSignal(window.run_ended, timeout=60_000):
        click_run(qtbot, window)
    rec = window.session.record
    assert rec.status is RunStatus.FAILED and rec.reason.startswith("diverged at step")
    assert "diverged at step" in window.status.text()
    assert {row[2] for row in window.process_view.rows()} == {"diverged"}
    # the plots keep a usable range: non-finite values are gaps, not the axis limits
    window.plots.update_record(rec, final=True)
    (x0, x1), (y0, y1) = window.plots.param_plot.viewRange()
    assert all(math.isfinite(v) for v in (x0, x1, y0, y1))


@pytest.mark.posix_signals
def test_an_engine_dying_mid_run_marks_the_run_incomplete(qtbot, window):
    start_long_run(qtbot, window, own=True)
    family = tree(window.engine.pid)
    with qtbot.waitSignal(window.run_ended, timeout=5_000):
        os.kill(window.engine.pid, signal.SIGKILL)
    rec = window.session.record
    assert rec.status is RunStatus.FAILED and "incomplete" in rec.reason
    assert window.process_view.restart.isVisibleTo(window)
    alive = still_running(family, timeout=5)
    assert not alive


@pytest.mark.slow
def test_an_mlp_lesson_runs_in_the_window_at_1_2_and_4_ranks(qtbot, window):
    """No view code names the MLP's parameters: the stage, plots and checks follow the spec."""
    window.set_lesson("every-parameter")
    start_engine(qtbot, window)
    for world_size in (1, 2, 4):
        window.form.world_size.setValue(world_size)
        window.form.steps.setValue(20)
        window.follow.setChecked(True)
        with qtbot.waitSignal(window.run_shown, timeout=60_000):
            click_run(qtbot, window)
        rec = window.session.record
        assert rec.status is RunStatus.FINISHED and len(rec.complete_steps()) == 20
        assert all(st.average_is_full_batch() and st.ranks_agree() for st in rec.steps)
        names = [p.name for p in rec.params]
        assert names == ["0.weight", "0.bias", "2.weight", "2.bias"]
        window.player.seek_step(19)
        numbers = window.stage.frame().numbers()
        for r in range(world_size):
            for n in names:
                assert f"rank{r}.averaged.{n}" in numbers and f"rank{r}.params.{n}" in numbers
        xs, _ = window.plots._curves[f"p3:{world_size - 1}"].getData()
        assert len(xs) == 21  # the start and 20 steps of the last parameter, last rank
        assert "✓ average = full batch" in window.status.text()


def test_the_buckets_lesson_grades_its_prediction_against_a_live_run(qtbot, window):
    """A learner sets bucket_cap_mb to 0.25, predicts the bucket count, runs, and is graded
    by what DDP really did; the stage and the code show the run's buckets and cap."""
    window.set_lesson("buckets")
    quiz = window.quiz_view
    qid = "predict-buckets-quarter-mib"
    start_engine(qtbot, window)
    window.form.bucket_cap.setText("0.25")
    window.form.steps.setValue(3)
    lock_guess(qtbot, window, qid, "3")
    assert "Locked in: 3" in quiz.feedback[qid].text()
    window.follow.setChecked(True)
    with qtbot.waitSignal(window.run_shown, timeout=60_000):
        click_run(qtbot, window)
    rec = window.session.record
    assert rec.status is RunStatus.FINISHED
    window.player.seek_step(1)  # step 2: the rebuilt buckets
    qtbot.waitUntil(lambda: quiz.feedback[qid].text().startswith("✓ Right"), timeout=10_000)
    assert "the ranks computed 3" in quiz.feedback[qid].text()
    assert quiz.score.first[qid] is True
    assert len(rec.steps[1].ranks[0].bucket_spans) == 3  # what the grade was read from
    window.player.seek_step(1)  # its last phase: the overlap, measured
    text = " ".join(window.stage.frame().all_text().split())
    assert "All-reduce time hidden behind backward" in text, text
    window.player.step_back()
    window.player.step_back()
    window.player.step_back()  # its first phase: the buckets DDP used
    text = " ".join(window.stage.frame().all_text().split())
    assert "b0 6.b 6.w 4.b" in text and "b2 0.b 0.w" in text, text
    assert "DDP(model, bucket_cap_mb=0.25, ...)" in window.code_view.toPlainText()


def test_the_data_lesson_grades_its_prediction_against_a_live_run(qtbot, window):
    """Four ranks on ten rows: the learner predicts rank 3's rows in step 1; a real
    DistributedSampler decides, and the stage's grid shows the padding it added."""
    window.set_lesson("who-splits-the-data")
    quiz = window.quiz_view
    qid = "predict-rows-four-ranks"
    start_engine(qtbot, window)
    window.form.world_size.setValue(4)
    assert not window.form.steps.isEnabled()  # [data] epochs decides the length
    lock_guess(qtbot, window, qid, "3")
    window.follow.setChecked(True)
    with qtbot.waitSignal(window.run_shown, timeout=60_000):
        click_run(qtbot, window)
    rec = window.session.record
    assert rec.status is RunStatus.FINISHED and rec.world_size == 4 and len(rec.steps) == 3
    window.player.seek_step(0)
    qtbot.waitUntil(lambda: quiz.feedback[qid].text().startswith("✓ Right"), timeout=10_000)
    assert len(rec.steps[0].ranks[3].rows) == 3  # what the grade was read from
    text = " ".join(window.stage.frame().all_text().split())
    assert "epoch 1" in text and "went to two ranks" in text


def test_the_no_sync_lesson_grades_its_prediction_against_a_live_run(qtbot, window):
    """The learner moves no_sync() to around backward only and predicts the all-reduces of
    step 1; the real ranks' comm hook counts them, and the listing shows the code that ran."""
    window.set_lesson("accumulate-with-no-sync")
    quiz = window.quiz_view
    qid = "predict-backward-only"
    start_engine(qtbot, window)
    acc = window.form.kind_fields["accumulation"]
    placement = acc.no_sync
    assert placement.isVisible() and acc.accumulate.value() == 3
    placement.setCurrentIndex(placement.findData("backward_only"))
    lock_guess(qtbot, window, qid, "3")
    window.follow.setChecked(True)
    with qtbot.waitSignal(window.run_shown, timeout=60_000):
        click_run(qtbot, window)
    rec = window.session.record
    assert rec.status is RunStatus.FINISHED and rec.scenario["train"]["no_sync"] == "backward_only"
    window.player.seek_step(0)
    qtbot.waitUntil(lambda: quiz.feedback[qid].text().startswith("✓ Right"), timeout=10_000)
    assert allreduces(micro_of(rec, 0, 0)) == 3  # what the grade was read from
    assert "with ddp.no_sync():  # backward only" in window.code_view.code
    text = " ".join(window.stage.frame().all_text().split())
    assert "3 of 3 backward passes all-reduced" in text


def test_the_ring_lesson_steps_through_a_real_ring_and_grades_the_bytes(qtbot, window):
    """A real four-rank ring all-reduce: stepping through it phase by phase, every chip on
    the stage names the chunk its rank really sent and sits on the link to the next rank,
    every buffer cell holds what the ranks reported; the bytes guess is graded at the end."""
    from ddp_viz.kinds.collective.model import ring_state, ring_steps
    from ddp_viz.kinds.collective.scene import cell_text

    window.set_lesson("all-reduce")
    assert not window.plots_panel.isVisible()  # nothing trains: no loss to plot
    quiz = window.quiz_view
    qid = "predict-ring-bytes"
    start_engine(qtbot, window)
    lock_guess(qtbot, window, qid, "60")
    with qtbot.waitSignal(window.run_shown, timeout=60_000):
        click_run(qtbot, window)
    rec = window.session.record
    assert rec.status is RunStatus.FINISHED and rec.complete_prefix() == ring_steps(4) == 6
    player = window.player
    player.seek_step(0)
    for _ in range(3):
        player.step_back()
    assert (player.cursor.step, player.cursor.phase) == (0, 0)
    seen = 0
    while True:
        cursor, f = player.cursor, window.stage.frame()
        moves = rec.parts["collective"].steps[cursor.step]
        if cursor.phase == 1:  # the chips: one per rank, on its link
            rings = {int(t.text): t.box for t in f.texts if t.text.isdigit() and t.font.bold}
            for r, move in moves.items():
                chip = f.text_with_key(f"move.{r}")
                assert chip.text == f"c{move.sent}", (cursor, r)
                a, b = rings[r], rings[move.to]
                between = min(a.cx, b.cx) - 40 <= chip.box.cx <= max(a.cx, b.cx) + 40
                assert between and min(a.cy, b.cy) - 40 <= chip.box.cy <= max(a.cy, b.cy) + 40
            seen += 1
        if cursor.phase == 2:  # what arrived, as reported
            state = ring_state(rec.parts["collective"], 4, cursor.step)
            for r, move in moves.items():
                cell = f.text_with_key(f"rank{r}.chunk{move.received}")
                values = state.values[r][move.received]  # as many as fit the window's stage
                assert cell_text(values).startswith(cell.text.removesuffix(" …"))
        if player.cursor.is_last(rec.complete_prefix()):
            break
        player.step_forward()
    assert seen == 6
    qtbot.waitUntil(lambda: quiz.feedback[qid].text().startswith("✓ Right"), timeout=10_000)
    assert rec.parts["collective"].results[("ring", 2)].bytes_sent == 60


def test_the_uneven_lesson_stalls_for_real_then_join_finishes_and_grades_the_guess(qtbot, window):
    """Without Join the run stalls until the lesson's 4-second timeout and ends with gloo's
    error on the stage; the next run (Join on) works, and the guess about its averaged
    gradient is graded against it."""
    window.set_lesson("uneven-inputs")
    form = window.form
    assert (
        form.kind_fields["uneven"].join.isVisible()
        and not form.kind_fields["uneven"].join.isChecked()
    )
    assert not form.steps.isEnabled()  # the last rank's batches decide the length
    start_engine(qtbot, window)
    with qtbot.waitSignal(window.run_shown, timeout=60_000):
        click_run(qtbot, window)
    rec = window.session.record
    assert rec.status is RunStatus.FINISHED and set(rec.parts["uneven"].stalled) == {0, 1}
    assert all(s.waited_s <= 4.0 + 2.0 for s in rec.parts["uneven"].stalled.values())
    text = " ".join(window.stage.frame().all_text().split())
    assert "Timed out waiting 4000ms" in text and "stuck" in text
    qid = "predict-join-average"
    form.kind_fields["uneven"].join.setChecked(True)
    rec = guess_then_run(qtbot, window, qid, "-13.28")
    assert (
        rec.status is RunStatus.FINISHED
        and not rec.parts["uneven"].stalled
        and rec.complete_prefix() == 4
    )
    window.player.seek_step(3)
    quiz = window.quiz_view
    qtbot.waitUntil(lambda: quiz.feedback[qid].text().startswith("✓ Right"), timeout=10_000)


def test_the_not_averaged_lesson_runs_then_grades_the_unused_parameter_guess(qtbot, window):
    """The lesson's own run (buffers, checkpoint, env:// start) finishes in the window; with
    the unused branch on, the run stops at the reducer's error, which the stage shows, and the
    guess of how many steps complete is graded against it."""
    window.set_lesson("not-averaged")
    form = window.form
    assert (
        form.kind_fields["not_averaged"].sync.isVisible()
        and form.kind_fields["not_averaged"].sync.isChecked()
    )
    assert (
        not form.kind_fields["not_averaged"].unused.isChecked()
        and not form.kind_fields["not_averaged"].find.isChecked()
    )
    start_engine(qtbot, window)
    with qtbot.waitSignal(window.run_shown, timeout=60_000):
        click_run(qtbot, window)
    rec = window.session.record
    assert rec.status is RunStatus.FINISHED and rec.complete_prefix() == 4
    assert rec.parts["not_averaged"].saved is not None and set(rec.launch) == {0, 1}
    text = " ".join(window.stage.frame().all_text().split())
    assert f"sha256 {rec.parts['not_averaged'].saved.sha256[:16]}" in text
    qid = "unused-fails-when"
    form.kind_fields["not_averaged"].unused.setChecked(True)
    rec = guess_then_run(qtbot, window, qid, "1")
    assert set(rec.parts["not_averaged"].reducer_errors) == {0, 1} and rec.complete_prefix() == 1
    quiz = window.quiz_view
    qtbot.waitUntil(lambda: quiz.feedback[qid].text().startswith("✓ Right"), timeout=10_000)
    text = " ".join(window.stage.frame().all_text().split())
    assert "Expected to have finished reduction in the prior iteration" in text
