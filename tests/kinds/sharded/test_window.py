"""The sharded lesson in the window: a learner predicts rank 1's bytes of Adam state under
ZeRO at 4 ranks, runs real ranks, and is graded live by what the rank's tensors held."""

from __future__ import annotations

import pytest

from ddp_viz.model.timeline import RunStatus

pytestmark = pytest.mark.gloo


@pytest.mark.timeout(240)
def test_the_zero_state_guess_is_graded_by_a_live_run(qtbot, window) -> None:
    from tests.qt.test_window_e2e import click_run, lock_guess, start_engine

    window.set_lesson("sharded")
    assert not window.plots_panel.isVisible()  # the stage draws the run's own numbers
    fields = window.form.kind_fields["sharded"]
    assert fields.width.value() == 64 and fields.steps.value() == 4
    assert not window.form.table.isVisibleTo(window.form)  # its own model and rows
    fields.steps.setValue(2)
    quiz = window.quiz_view
    qid = "predict-zero-state"
    start_engine(qtbot, window)
    lock_guess(qtbot, window, qid, "8196")
    assert not window.form.errors, window.form.errors
    with qtbot.waitSignal(window.run_shown, timeout=180_000):
        click_run(qtbot, window)
    rec = window.session.record
    assert rec.status is RunStatus.FINISHED, rec.reason
    assert rec.world_size == 4 and rec.complete_prefix() == 2
    window.player.seek_step(0)  # past step 1's first phase, which shows what each rank holds
    qtbot.waitUntil(lambda: quiz.feedback[qid].text().startswith("✓ Right"), timeout=10_000)
    assert quiz.score.first[qid] is True
    assert rec.parts["sharded"].held("zero", 0, 1, "state") == 8196  # what the grade read
