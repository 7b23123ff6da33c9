"""The DDP step stage's caption (the lesson's sentence for the phase) gives way a line at a
time as the stage gets shorter: at most three lines on a narrow stage, the last one kept saying
"…" when the sentence was cut, always the sentence's beginning, never a line skipped."""

from __future__ import annotations

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import PHASES, Cursor, record
from tests.conftest import load_recording

FOUR = "four-ranks-3-steps.jsonl"
LIGHT = load_theme("light")
LESSON = load_lesson().phase_text


def caption_lines(w: int, h: int, phase: int = 3) -> list[str]:
    """The caption's lines as drawn: muted texts above the first lane that are a piece of the
    phase's sentence."""
    rec = record(load_recording(FOUR))
    ctx = SceneContext(w, h, LIGHT, LESSON, estimate_width)
    f = stage_frame(rec, Cursor(1, phase), 1.0, ctx)
    sentence = " ".join(LESSON[PHASES[phase]].split())
    table = next(t for t in f.texts if t.text == "rank 0")
    out = []
    for t in sorted(f.texts, key=lambda t: t.box.y):
        words = t.text.removesuffix(" …")
        if t.color == LIGHT.muted and t.box.y < table.box.y and words and words in sentence:
            out.append(t.text)
    return out


def assert_beginning(lines: list[str], phase: int = 3) -> None:
    sentence = " ".join(LESSON[PHASES[phase]].split())
    said = " ".join(line.removesuffix(" …") for line in lines)
    assert sentence.startswith(said), lines
    if lines and said != sentence:
        assert lines[-1].endswith(" …"), lines  # cut short, and says so
    if said == sentence:
        assert not lines[-1].endswith("…")


def test_a_narrow_stage_keeps_three_lines_and_says_the_rest_was_cut() -> None:
    sentence = " ".join(LESSON[PHASES[3]].split())
    for w in (330, 300):
        lines = caption_lines(w, 1400)
        assert len(lines) == 3, lines
        assert lines[-1].endswith(" …")
        assert " ".join(x.removesuffix(" …") for x in lines) != sentence
        assert_beginning(lines)


def test_the_caption_gives_way_one_line_at_a_time_from_its_end() -> None:
    seen = set()
    for h in range(1000, 150, -5):
        lines = caption_lines(500, h)
        assert_beginning(lines)
        seen.add(len(lines))
    assert {3, 2, 1, 0} <= seen, seen
