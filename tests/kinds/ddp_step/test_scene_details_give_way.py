"""When the stage is short, the ✗ "average ≠ full batch" check's details give way in order of
how much they matter: the full batch's numbers first, then DDP's average beside the hand-made
one, and only then do the headings shrink; the reason why (the unequal shards) goes last."""

from __future__ import annotations

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording

UNEVEN = "uneven-3-ranks.jsonl"
LIGHT = load_theme("light")


def test_the_details_give_way_in_order_before_the_headings_shrink() -> None:
    events = load_recording(UNEVEN)
    ref = next(e for e in events if e.kind == "reference" and e.step == 0)
    assert len(set(ref.shard_sizes)) > 1  # unequal shards: the ✗ side
    rec = record(events)
    seen = []
    for h in range(600, 150, -5):
        ctx = SceneContext(1200, h, LIGHT, load_lesson().phase_text, estimate_width)
        f = stage_frame(rec, Cursor(0, 3), 1.0, ctx)
        texts = [t.text for t in f.texts]
        verdict = next(t for t in f.texts if t.text == "✗ average ≠ full batch")
        floor = verdict.font.px == ctx.min_px  # the headings shrunk to the floor
        avg = any(t.startswith("DDP's average: ") for t in texts)
        full = any(t.startswith("full batch over all rows (reference): ") for t in texts)
        why = any(t.startswith("why: ") for t in texts)
        if full:
            assert avg, h  # the full batch's numbers go first
        if avg:
            assert why and not floor, h  # the headings shrink after it went
        seen.append((full, avg, why, floor))
    assert (True, True, True, False) in seen
    assert (False, True, True, False) in seen
    assert (False, False, True, False) in seen
    assert (False, False, True, True) in seen
