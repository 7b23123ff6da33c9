"""Each rank's load line on the restart stage compares what that rank loaded with what rank 0
*saved*, rank 0's own load included: on a copy of the 4-rank recording where rank 0 read other
bytes, rank 0's line says ≠ in the bad colour and the other ranks' lines stay =. (A seeded bug
that compared every rank with rank 0's load turned this round, and passed every test: every
changed copy had changed a rank other than 0.) Expected from the raw events."""

from __future__ import annotations

import dataclasses

from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.kinds.test_conformance import lesson_of

THEME = load_theme("light")
FOUR = "resuming-4-ranks.jsonl"


def test_rank_0s_own_load_is_held_to_what_it_saved() -> None:
    events = load_recording(FOUR)
    saved = next(e for e in events if e.kind == "checkpoint_saved")
    other = "0badc0de"
    assert other != saved.weights
    changed = [
        dataclasses.replace(e, weights=other)
        if e.kind == "checkpoint_loaded" and e.rank == 0
        else e
        for e in events
    ]
    loads = {e.rank: e for e in changed if e.kind == "checkpoint_loaded"}
    assert sorted(loads) == [0, 1, 2, 3]
    lesson = lesson_of("resuming")
    ctx = SceneContext(1800, 1000, THEME, lesson.phase_text, estimate_width)
    f = stage_frame(record(changed), Cursor(0, 0), 1.0, ctx, lesson.scene)
    for r, e in loads.items():
        t = f.text_with_key(f"load.{r}")
        same = e.weights == saved.weights
        assert same is (r != 0)
        assert t.text == (
            f"waited {e.waited:.3f} s · loaded CRC-32 {e.weights} "
            f"{'= rank 0' if same else '≠ rank 0'}'s"
        ), r
        assert t.color == (THEME.ok if same else THEME.bad), r
    verdict = f.text_with_key("loads")
    assert verdict.color == THEME.bad and verdict.text.startswith("✗ every rank loaded")
