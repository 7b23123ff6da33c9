"""The comm-hooks lesson in the window: a learner predicts rank-1 PowerSGD's bytes for step 20,
runs real ranks, and is graded live by what the hook handed to all-reduce."""

from __future__ import annotations

import pytest

from ddp_viz.model.timeline import RunStatus

pytestmark = pytest.mark.gloo


@pytest.mark.timeout(240)
def test_the_powersgd_bytes_guess_is_graded_by_a_live_run(qtbot, window) -> None:
    from tests.qt.test_window_e2e import click_run, lock_guess, start_engine

    window.set_lesson("comm-hooks")
    assert not window.plots_panel.isVisible()  # the stage draws the run's own curves
    fields = window.form.kind_fields["hook_compression"]
    assert fields.width.value() == 256 and fields.ranks.text() == "1, 4"
    assert not window.form.table.isVisibleTo(window.form)  # its own model and rows
    fields.steps.setValue(22)  # a short run that still reaches step 20
    quiz = window.quiz_view
    qid = "predict-powersgd-bytes"
    start_engine(qtbot, window)
    lock_guess(qtbot, window, qid, "6212")
    assert not window.form.errors, window.form.errors
    with qtbot.waitSignal(window.run_shown, timeout=180_000):
        click_run(qtbot, window)
    rec = window.session.record
    assert rec.status is RunStatus.FINISHED, rec.reason
    assert rec.complete_prefix() == 22
    window.player.seek_step(19)  # step 20: after the warm-up of 10
    for _ in range(3):
        window.player.step_forward()
    qtbot.waitUntil(lambda: quiz.feedback[qid].text().startswith("✓ Right"), timeout=10_000)
    assert quiz.score.first[qid] is True
    part = rec.parts["hook_compression"]
    assert sum(part.at("powersgd-r1", 19)[0].sent) == 6212  # what the grade was read from
    frame = window.stage.frame()
    assert frame.text_with_key("bytes.powersgd-r1").text == "6,212 B"
    assert frame.text_with_key("bytes.allreduce").text == "281.6 kB"
    text = " ".join(frame.all_text().split())
    assert "P" in text and "sends 512 values, not 65,536" in text, text
