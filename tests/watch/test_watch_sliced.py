"""Where a watched page's work falls (issue 32, item 4): each tensor's norms are computed as
its rank's gradients arrive, one event's tensors at a time, so the frame that first draws a
step captured in full computes none. Counted, never timed: 198 tensors on 8 ranks computed in
that one frame held it for tens of milliseconds."""

from __future__ import annotations

from ddp_viz.kinds.watched.steps import gradient_norms, tensor_rows
from ddp_viz.model import protocol, step_memo
from ddp_viz.model.timeline import RunRecord
from tests.conftest import load_recording
from tests.watch.test_watch_page import MANY


def test_a_steps_norms_are_computed_per_event_not_in_the_frame_that_draws_it(
    monkeypatch,
) -> None:
    computed = [0]
    real = step_memo.tensor_norm

    def counted(v):  # type: ignore[no-untyped-def]
        computed[0] += 1
        return real(v)

    monkeypatch.setattr(step_memo, "tensor_norm", counted)
    rec = RunRecord()
    full = 0
    for e in load_recording(MANY):
        before = computed[0]
        rec.apply(e)
        grads = getattr(e, "grads", None)
        if isinstance(e, protocol.LocalGrad | protocol.AveragedGrad) and grads:
            assert computed[0] - before == len(grads)  # this event's tensors, no more
        else:
            assert computed[0] == before
        if not isinstance(e, protocol.Timing) or e.step >= rec.complete_prefix():
            continue
        st = rec.steps[e.step]
        if not all(rs.local and rs.averaged for rs in st.ranks.values()):
            continue
        drawn = computed[0]
        rows = tensor_rows(rec, st)  # what the page's frame asks for
        local, avg = gradient_norms(st)
        assert computed[0] == drawn  # nothing left for the frame to compute
        assert len(rows) == len(rec.params) == 120 and avg is not None and len(local) == 2
        full += 1
    assert full >= 2  # the recording's steps captured in full were all checked


def test_a_watched_runs_start_resizes_neither_stage_nor_plots(make_window) -> None:
    """The run's first frames repainted every plot after re-laying out the whole window: the
    plots grew as the loss surface was hidden at the run's start, and the status line grew a
    second line. The watched page hides the surface when it is shown; the status line keeps
    two lines' height; so the run's start resizes neither the stage nor the plots."""
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication

    from ddp_viz._qt.lesson_switch import show_lesson
    from ddp_viz.model.assets import asset
    from ddp_viz.model.lesson import load_lesson_folder

    window = make_window()
    show_lesson(window, load_lesson_folder(asset("watched")))
    views = [window.stage, window.plots, window.plots.loss_plot, window.plots.param_plot]
    views.append(window.status)  # (the code and ranks' boxes may trade a few pixels: cheap)
    window.status.setText("Waiting for the script.")  # one line
    QApplication.processEvents()

    class Resizes(QObject):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[str] = []

        def eventFilter(self, obj, event):  # type: ignore[no-untyped-def]
            if event.type() == QEvent.Type.Resize:
                self.seen.append(
                    f"{type(obj).__name__} {event.oldSize().toTuple()} {event.size().toTuple()}"
                )
            return False

    resizes = Resizes()
    for v in views:
        v.installEventFilter(resizes)
    window.session.expect_run(1)
    for e in load_recording(MANY)[:60]:
        window.session.on_transport_event(e)
    window.session.tick()
    window.status.setText("Run 1: 2 rank(s) training… " * 12)  # a status of two lines
    for _ in range(2):  # the status bar's layout request, then the window's
        QApplication.processEvents()
    assert window.plots.record is window.session.record  # the run's plots were built
    assert resizes.seen == []
