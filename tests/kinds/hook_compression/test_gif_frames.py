"""comm-hooks as a GIF draws it (1280×720, the window's theme) and on a projector: P and Q
in their phase, and no subtitle cut mid-sentence (issue 47, 10: a projector's GIF had
neither the heatmaps nor the end of the bytes' sentence)."""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import record, walk
from tests.conftest import load_recording
from tests.frames import assert_inside_and_apart

PHASES = ("shards", "local", "allreduce", "step")
# the GIF's size (export.stage_frames) and the window's stages on a projector
SIZES = [
    ("light", 1280, 720),
    ("projector", 1280, 720),
    ("projector", 889, 460),
    ("projector", 1341, 673),
]
WARMUP = 10  # the recording's start_powerSGD_iter: P and Q from step 11 on


def _caption(frame, sentence: str) -> str:
    """The stage's words that are the phase's sentence, in order, joined."""
    first = sentence.split()[0]
    texts = sorted(frame.texts, key=lambda t: t.box.y)
    start = next((i for i, t in enumerate(texts) if t.text.startswith(first)), None)
    if start is None:
        return ""
    out, head = [], texts[start]
    for t in texts[start:]:  # the lines under it in its type at its left edge
        if t.text.rstrip(" …") not in sentence or (t.box.x, t.font) != (head.box.x, head.font):
            break
        out.append(t.text)
    return " ".join(out)


@pytest.mark.parametrize(("theme", "width", "height"), SIZES)
def test_p_and_q_in_their_phase_and_whole_sentences(theme: str, width: int, height: int) -> None:
    info = load_lesson("comm-hooks")
    ctx = SceneContext(width, height, load_theme(theme), info.phase_text, estimate_width)
    rec = record(load_recording("comm-hooks-14-steps.jsonl"))
    for cursor in walk(rec.complete_prefix()):
        frame = stage_frame(rec, cursor, 1.0, ctx, info.scene)
        assert_inside_and_apart(frame)
        sentence = info.phase_text[PHASES[cursor.phase]]
        said = _caption(frame, sentence)
        # whole, or cut with "…", or given way to the charts
        assert said in ("", sentence) or said.endswith(" …"), (theme, width, cursor, said)
        if cursor.phase == 2 and cursor.step >= WARMUP:
            for block in ("P", "Q", "exact", "P·Qᵀ"):
                assert frame.text_with_key(f"factors.{block}") is not None, (theme, cursor, block)
            # beside the table or under it, never over its words
            table = [t.box for t in frame.texts if t.key.startswith("error.")]
            p = frame.text_with_key("factors.P").box
            assert p.x > max(b.right for b in table) or p.y > max(b.bottom for b in table)
        # the charts stay, but in P and Q's phase where they take the charts' place
        beside = frame.text_with_key("factors.title") is None or any(
            t.key.startswith("chart.") for t in frame.texts
        )
        for which in ("loss", "bytes"):
            if cursor.phase != 2 or beside:
                assert frame.text_with_key(f"chart.{which}") is not None, (theme, cursor, which)
