"""On a short stage the restart scene's caption gives way whole, first, so that the phase's body
keeps a line for everything it lists: save, a line a rank and eight more (the save, the bytes,
the verdict, the reshard and ZeRO lines with their sizes); resume, nine (four resumes, a
heading, four notes); dies, a lane a rank and two; restart, a lane a rank, a line an attempt
and three. Heights on either side of each phase's edge, at 2 and 4 ranks and with a failed
rendezvous (one more attempt); the lines counted here by hand (pure, no Qt)."""

from __future__ import annotations

import pytest

from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import PHASES, Cursor, record
from tests.conftest import load_recording
from tests.kinds.resuming.widened import widened
from tests.kinds.test_conformance import lesson_of

THEME = load_theme("projector")  # its 24 px type: every edge between 240 and 900 px tall
W = 700  # under 760 px wide the type does not grow with the stage's height


def runs():
    yield "2 ranks", load_recording("resuming-2-ranks.jsonl")
    yield "4 ranks", load_recording("resuming-4-ranks.jsonl")
    yield "4 ranks, a failed rendezvous", widened(4, failed_attempt=True)


def needed(phase: int, world: int, attempts: int) -> int:
    return (world + 8, 4 + 1 + 4, world + 2, world + attempts + 3)[phase]


@pytest.mark.parametrize("phase", [0, 1, 2, 3])
@pytest.mark.parametrize("run", ["2 ranks", "4 ranks", "4 ranks, a failed rendezvous"])
def test_the_caption_gives_way_whole_when_the_body_needs_its_room(phase, run) -> None:
    events = dict(runs())[run]
    world = next(e for e in events if e.kind == "run_started").world_size
    attempts = len({e.attempt for e in events if e.kind == "restart_attempt"})
    lesson = lesson_of("resuming")
    sentence = lesson.phase_text[PHASES[phase]]
    kept = cut = 0
    for h in range(240, 1000, 6):
        ctx = SceneContext(W, h, THEME, lesson.phase_text, estimate_width)
        base = max(ctx.base_px, ctx.min_px)
        pad, small = base * 0.6, max(ctx.min_px, base * 0.9)
        f = stage_frame(record(events), Cursor(0, phase), 1.0, ctx, lesson.scene)
        title = f.texts[0]
        assert title.font.px == pytest.approx(base * 1.2)  # one line, not shrunk
        lines = [t for t in f.texts if t.color == THEME.muted and t.font.px == base]
        caption = [t for t in lines if t.text.rstrip(" …") in sentence]
        # the caption's lines on this stage's width: two at most
        words = len(caption_lines(sentence, base))
        room = h - pad * 1.5 - base * 1.2 * 1.3
        fits = room - words * base * 1.3 >= needed(phase, world, attempts) * small * 1.3
        assert bool(caption) is fits, (h, [t.text for t in caption])
        if caption:
            assert len(caption) == words
        kept += fits
        cut += not fits
    assert kept and cut  # heights on either side of the edge


def caption_lines(sentence: str, base: float) -> list[str]:
    """The caption on a tall stage of the same width (its lines do not depend on height)."""
    from ddp_viz.model.frame import Font, wrap_lines

    pad = base * 0.6
    lines = wrap_lines(sentence, Font(base), W - 2 * pad, estimate_width)
    return lines[:2]
