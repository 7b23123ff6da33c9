"""The DDP step's footer when DDP's average is not the full batch's: "DDP's average: … = the
shard average by hand: …" reads its second half from rank 0's hand-made average (the
reference's ``manual_average``), not from DDP's average again (pure: the 3-rank uneven
recording, and a copy with the hand-made average moved so the two halves can tell)."""

from __future__ import annotations

from dataclasses import replace

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width, fmt
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording

RUN = "uneven-3-ranks.jsonl"  # unequal shards: the average is not the full batch's
THEME = load_theme("light")


def footer(events, step: int) -> str:
    ctx = SceneContext(1800, 1000, THEME, load_lesson().phase_text, estimate_width)
    frame = stage_frame(record(events), Cursor(step, 3), 1.0, ctx)
    return " ".join(frame.all_text().split())


def listing(grads) -> str:
    return f"∇w {fmt(grads['weight'][0])}, ∇b {fmt(grads['bias'][0])}"


def test_the_shard_average_by_hand_is_the_references_own() -> None:
    events = load_recording(RUN)
    ref = next(e for e in events if e.kind == "reference" and e.step == 0)
    avg = next(e for e in events if e.kind == "averaged_grad" and e.step == 0 and e.rank == 0)
    by_hand = {
        "weight": [ref.manual_average["weight"][0] + 1.0],
        "bias": [ref.manual_average["bias"][0] - 0.5],
    }
    assert listing(by_hand) != listing(avg.grads)
    moved = [
        replace(e, manual_average=by_hand) if e.kind == "reference" and e.step == 0 else e
        for e in events
    ]
    text = footer(moved, 0)
    assert f"DDP's average: {listing(avg.grads)} = the shard average by hand: " in text
    assert f"the shard average by hand: {listing(by_hand)}" in text
    assert f"the shard average by hand: {listing(avg.grads)}" not in text
