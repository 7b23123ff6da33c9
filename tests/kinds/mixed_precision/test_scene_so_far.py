"""The loss-scaling panel says nothing of a step the cursor has not reached (pure, no Qt).

The lesson asks the learner to predict which step the float16 arm skips; a learner who scrubs
back to step 1 after the run must not read "step 5 skipped" on the stage. Each step's summary
is worked out here from the raw events of the 3-rank recording (the odd rank last), steps 1 to
the cursor's only.
"""

from __future__ import annotations

import re

import pytest

from ddp_viz.model.timeline import record
from tests.conftest import load_recording
from tests.kinds.test_quiz_at_its_step import frame_at

SCALER_PHASE = 2


def skipped_by_every_rank(events, world: int) -> list[int]:
    """Steps (from 0) the scaler arm skipped on every rank, read from the raw events."""
    ranks: dict[int, set[int]] = {}
    for e in events:
        if e.kind == "precision_step" and e.arm == "fp16" and not e.stepped:
            ranks.setdefault(e.step, set()).add(e.rank)
    return sorted(s for s, r in ranks.items() if len(r) == world)


@pytest.mark.parametrize("name", ["mixed-precision-3-ranks.jsonl"])
def test_the_scaler_summary_covers_steps_up_to_the_cursor_only(name: str) -> None:
    events = load_recording(name)
    rec = record(events)
    world, steps = rec.world_size, 1 + max(e.step for e in events if e.kind == "precision_step")
    skipped = skipped_by_every_rank(events, world)
    assert skipped and 0 < skipped[0] < steps - 1  # a skip with steps on both sides of it
    for step in range(steps):
        texts = [t.text for t in frame_at("mixed_precision", rec, step, SCALER_PHASE).texts]
        summary = [t for t in texts if "skipped a step" in t or "together" in t]
        assert len(summary) == 1, (step, texts)
        so_far = [s for s in skipped if s <= step]
        if so_far:
            words = ", ".join(str(s + 1) for s in so_far)
            assert summary[0] == f"step {words} skipped on every one of the {world} ranks together"
        else:
            n = step + 1
            assert summary[0] == f"over {n} step{'' if n == 1 else 's'}: no rank skipped a step"
        named = {int(m) for t in texts for m in re.findall(r"\bstep (\d+) skipped", t)}
        assert all(s <= step + 1 for s in named), (step, named)
