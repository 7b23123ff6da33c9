"""The evaluation lesson in the window: a learner predicts how many places the sampler adds,
runs real ranks, and is graded live once the stage shows the shares; the stage then says where
each rank waited while rank 0 evaluated alone through the wrapper."""

from __future__ import annotations

import pytest

from ddp_viz.model.cursor import reached
from ddp_viz.model.timeline import RunStatus

pytestmark = pytest.mark.gloo


@pytest.mark.timeout(180)
def test_the_padding_guess_is_graded_when_the_shares_appear(qtbot, window) -> None:
    from tests.qt.test_window_e2e import click_run, lock_guess, start_engine

    window.set_lesson("evaluation")
    assert not window.plots_panel.isVisible()  # the stage draws the run's own numbers
    fields = window.form.kind_fields["evaluation"]
    assert fields.rows_held.value() == 25 and fields.hang.isChecked()
    assert not window.form.table.isVisibleTo(window.form)  # its own model and rows
    fields.timeout.setValue(2.0)  # a shorter wait, the same hang
    quiz, qid = window.quiz_view, "predict-extra-rows"
    graded: list[tuple] = []  # where the stage was when the grade appeared
    window.player.position_changed.connect(
        lambda *_: (
            graded.append((window.player.cursor, window.player.progress))
            if quiz.feedback[qid].text().startswith("✓") and not graded
            else None
        )
    )
    start_engine(qtbot, window)
    lock_guess(qtbot, window, qid, "3")
    assert not window.form.errors, window.form.errors
    with qtbot.waitSignal(window.run_shown, timeout=120_000):
        click_run(qtbot, window)
    rec = window.session.record
    assert rec.status is RunStatus.FINISHED, rec.reason
    qtbot.waitUntil(lambda: quiz.feedback[qid].text().startswith("✓ Right"), timeout=10_000)
    assert quiz.score.first[qid] is True
    # graded as the phase that puts the shares on the stage begins (they are drawn from its
    # first frame), not a phase later
    assert graded and reached(graded[0][0], 0, "shards")
    window.player.seek_step(0)  # the last phase; back to the shares, then to rank 0 alone
    for _ in range(3):
        window.player.step_back()
    frame = window.stage.frame()
    assert frame.text_with_key("extra_rows").value == 3.0
    for _ in range(2):
        window.player.step_forward()
    frame = window.stage.frame()
    assert "_distributed_broadcast_coalesced" in frame.text_with_key("wait.0").text
    assert frame.text_with_key("wait.1").text.endswith(" in barrier")
    text = frame.all_text()
    assert any(w in text for w in ("Timed out", "closed by peer", "pair closure")), text
