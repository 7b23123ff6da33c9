"""The buckets stage at a common classroom projector's size shows every rank (issue 33, 9):
at 1280×800 in projector mode it dropped rank 1 ("rank 1: stage too short") and the norms."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication

from ddp_viz.model.timeline import Cursor, walk
from tests.conftest import load_recording
from tests.qt_helpers import feed


@pytest.mark.parametrize("name", ["buckets-lesson-2-ranks.jsonl", "buckets-lesson-8-ranks.jsonl"])
@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)])
def test_every_rank_is_on_the_projected_buckets_stage(qtbot, make_window, settings, size, name):
    """Issue 47, 6: with 8 ranks it drew ranks 0-4 at 1920×1080 and ranks 0-1 at 1280×800."""
    window = make_window(size, settings=settings, lesson_id="buckets")
    window.presentation.set_projector(True)
    with qtbot.waitSignal(window.run_shown, timeout=30_000):
        feed(window, load_recording(name))
    QApplication.processEvents()
    assert window.theme.name == "projector"
    rec = window.session.record
    player = window.player
    for cursor in walk(rec.complete_prefix()):
        player.cursor, player.progress = cursor, 1.0
        player._emit(entered=True)
        frame = window.stage.frame()  # at the stage's real size in the window
        texts = [t.text for t in frame.texts]
        assert not any("stage too short" in t for t in texts), (cursor, texts)
        for r in range(rec.world_size):
            assert f"rank {r}" in texts, (cursor, texts)
            if cursor.phase >= 1:  # its backward bar, and from the all-reduces on its buckets
                assert any(s.key == f"rank{r}.backward" for s in frame.shapes), cursor
            if cursor.phase >= 2:
                bars = {s.key for s in frame.shapes if s.key.startswith(f"rank{r}.bucket")}
                want = {
                    f"rank{r}.bucket{b['index']}"
                    for b in rec.steps[cursor.step].ranks[r].bucket_spans
                }
                assert bars == want, cursor
        if cursor.phase == 3 and rec.world_size == 2:  # and the norms, under the timeline
            assert any(t.startswith("‖∇‖") for t in texts), texts


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)])
def test_every_tensor_s_norms_are_on_the_projected_stage(qtbot, make_window, settings, size):
    """Issue 33, items 8 and 11: on a projector the norms showed "… 8 more" (1280×800) and
    "… 5 more" (1920×1080) and their header was cut before it said what the blue bar was.
    Every tensor's local norms and its average are drawn, and the header, whole, says which
    bars are local and which averaged."""
    window = make_window(size, settings=settings, lesson_id="buckets")
    window.presentation.set_projector(True)
    with qtbot.waitSignal(window.run_shown, timeout=30_000):
        feed(window, load_recording("buckets-lesson-2-ranks.jsonl"))
    QApplication.processEvents()
    rec = window.session.record
    player = window.player
    for step in range(1, len(rec.steps)):  # step 1's buckets are one: the norms are the same
        player.cursor, player.progress = Cursor(step=step, phase=3), 1.0
        player._emit(entered=True)
        frame = window.stage.frame()
        keys = {s.key for s in frame.shapes}
        for p in rec.params:
            assert f"avgnorm.{p.name}" in keys, (size, p.name)
            for r in range(rec.world_size):
                assert f"rank{r}.localnorm.{p.name}" in keys, (size, p.name, r)
        assert not any(t.text.endswith("more") for t in frame.texts)
        head = frame.text_with_key("grads.head")
        assert head is not None and "…" not in head.text
        assert "local" in head.text and "average" in head.text
        inside = [s for s in frame.shapes if s.key.startswith(("avgnorm", "rank0.localnorm"))]
        assert all(s.box.right <= frame.width + 0.5 for s in inside)
