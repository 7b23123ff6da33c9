"""What every scene shares, on a stage of chosen size with a measure whose widths are worked
out by hand (a character is half the font's size wide): the context's type sizes, text boxes
by alignment, the title and its companion, captions cut short, the empty stage, and which
scene, phase words and player steps a kind gives."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ddp_viz.model import registry
from ddp_viz.model.frame import Align, Font, Rect
from ddp_viz.model.scenes import (
    DDP_WORDS,
    phase_words,
    phases_of,
    scenes,
    stage_frame,
    whole_steps,
)
from ddp_viz.model.scenes.base import (
    FrameBuilder,
    Line,
    StepFrameBuilder,
    ease,
    empty_frame,
    short_name,
)
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import PHASES, Cursor, RunRecord, StepRecord

THEME = replace(load_theme("light"), font_px=10)


def half(text: str, font: Font) -> float:
    return len(text) * font.px / 2


def ctx(width: float = 760, height: float = 520, **kw) -> SceneContext:
    return SceneContext(width, height, kw.pop("theme", THEME), measure=half, **kw)


def test_parameter_names_are_shortened_for_labels() -> None:
    assert short_name("4.weight") == "4.w" and short_name("bias") == "b"
    assert short_name("layer.0.bias") == "layer.0.b" and short_name("aux.scale") == "aux.scale"
    assert short_name("weight") == "w" and short_name("running_mean") == "running_mean"


def test_easing_is_smoothstep_clamped_to_the_phase() -> None:
    assert [ease(t) for t in (-1, 0, 0.25, 0.5, 1, 2)] == [0, 0, 0.15625, 0.5, 1, 1]


def test_the_context_sizes_type_for_the_stage_and_the_projector() -> None:
    assert ctx().min_px == 11.0
    assert ctx(theme=replace(THEME, name="projector")).min_px == 24
    assert ctx(760, 520).base_px == 10
    assert ctx(380, 260).base_px == 10  # never shrunk
    assert ctx(912, 1000).base_px == pytest.approx(12)  # 912 / 760 = 1.2, the smaller ratio
    assert ctx(2000, 624).base_px == pytest.approx(12)  # 624 / 520 = 1.2
    assert ctx(4000, 4000).base_px == pytest.approx(14)  # at most 1.4 times
    assert SceneContext(1, 1, THEME).message == "Press Run to start real DDP ranks on this machine."


def test_a_builder_takes_the_larger_of_the_stages_type_and_its_floor() -> None:
    b = FrameBuilder(ctx(912, 1000))
    assert b.base == pytest.approx(12) and b.pad == pytest.approx(7.2)
    small = FrameBuilder(ctx())  # 10 px is under the 11 px floor
    assert small.base == 11 and small.pad == pytest.approx(6.6)
    assert small.frame.background == THEME.panel
    assert (small.frame.width, small.frame.height) == (760, 520)
    assert Line("x", Font(20), "#000").height == pytest.approx(26)


def test_a_texts_box_is_its_measured_size_placed_by_its_alignment() -> None:
    b = FrameBuilder(ctx())
    font = Font(10)
    left = b.text(100, 50, "abcd", font, "#111", key="k", value=1.5, alpha=9, layer=2)
    centre = b.text(100, 50, "abcd", font, "#111", Align.CENTER)
    right = b.text(100, 50, "abcd", font, "#111", Align.RIGHT)
    assert left.box == Rect(100, 50, 20, 12)  # 4 characters at 5 px, 1.2 ems tall
    assert centre.box == Rect(90, 50, 20, 12) and right.box == Rect(80, 50, 20, 12)
    assert (left.key, left.value, left.alpha, left.layer, left.color) == ("k", 1.5, 9, 2, "#111")
    assert centre.align is Align.CENTER and b.frame.texts == [left, centre, right]


def test_the_title_takes_the_first_companion_that_fits_beside_it() -> None:
    b = FrameBuilder(ctx(200, 520))  # base 11, pad 6.6: room 186.8
    # the title at 13.2 px bold: 6.6 px a character; a companion at 11 px: 5.5
    lines = b.title("Title", ["a companion thirty characters!", "short"], "#abc")
    assert len(lines) == 1
    assert lines[0].text == "Title" and lines[0].font == Font(11 * 1.2, bold=True)
    assert lines[0].right == ("short", Font(11), "#abc") and lines[0].color == THEME.text
    # 33 + 5.5 * n + 11 <= 186.8: 25 characters fit, 26 do not
    assert b.title("Title", ["x" * 26], "#abc")[0].right is None
    assert b.title("Title", ["x" * 25], "#abc")[0].right == ("x" * 25, Font(11), "#abc")


def test_a_title_too_wide_shrinks_to_the_whole_pixel_that_fits() -> None:
    b = FrameBuilder(ctx(200, 520))  # room 186.8
    lines = b.title("x" * 30, ["no room"], "#abc")  # 30 * 6.6 = 198 px at 13.2
    # 13.2 * 186.8 / 198 = 12.45: 12 px, 30 * 6 = 180 fits
    assert [(line.text, line.font) for line in lines] == [("x" * 30, Font(12, bold=True))]
    assert lines[0].right is None


def test_a_title_that_would_go_under_the_floor_wraps_onto_two_lines() -> None:
    b = FrameBuilder(ctx(200, 520))
    words = "abcdefghij klmnopqrst uvwxyzabcd efghijklmn"  # 43 characters: 9 px would fit
    lines = b.title(words, [], "#abc")
    assert [line.font for line in lines] == [Font(11, bold=True)] * 2
    # 5.5 px a character at 11 px: 33 characters in 186.8
    assert [line.text for line in lines] == [
        "abcdefghij klmnopqrst uvwxyzabcd",
        "efghijklmn",
    ]


def test_a_caption_is_the_phases_sentence_or_the_wait_cut_to_its_lines() -> None:
    sentence = "one two three four five six seven eight nine ten eleven twelve"
    b = FrameBuilder(ctx(100, 520, phase_text={"local": sentence}))  # room 86.8: 15 characters
    assert [x.text for x in b.caption("local", False, 9)] == [
        "one two three",
        "four five six",
        "seven eight",
        "nine ten eleven",
        "twelve",
    ]
    assert all(x.color == THEME.muted and x.font == Font(11) for x in b.caption("local", False, 9))
    cut = [x.text for x in b.caption("local", False, 2)]
    assert cut == ["one two three", "four five six …"]  # 15 characters: it fits
    tight = FrameBuilder(ctx(100, 520, phase_text={"local": "aaaaaaaaaaa bbb ccc"}))
    # "aaaaaaaaaaa bbb …" is 17 characters: a word goes
    assert [x.text for x in tight.caption("local", False, 1)] == ["aaaaaaaaaaa …"]
    assert [x.text for x in b.caption("local", False, 5)][-1] == "twelve"  # all of it: no "…"
    assert b.caption("local", False, 0) == []
    assert b.caption("step", False, 3) == []
    wide = FrameBuilder(ctx(1000, 520, phase_text={"local": sentence}))
    waiting = [x.text for x in wide.caption("local", True, 3)]
    assert waiting == ["Waiting for the ranks to report this step…"]


def test_a_caption_cut_short_keeps_one_word_however_narrow() -> None:
    b = FrameBuilder(ctx(20, 520))
    assert b.cut_short(Line("abcdef ghi", Font(11), "#1")).text == "abcdef …"
    assert b.cut_short(Line("abcdef ghi", Font(11), "#1")).color == "#1"


def test_a_line_is_emitted_with_its_second_text_and_its_right_companion() -> None:
    b = FrameBuilder(ctx(200, 520))  # pad 6.6
    b.emit(Line("ab", Font(10), "#1", right=("xyz", Font(6), "#2"), then=("cd", "#3")), 40)
    first, then, right = b.frame.texts
    assert first.box == Rect(6.6, 40, 10, 12) and first.color == "#1"
    assert then.box == Rect(6.6 + 10 + 15, 40, 10, 12) and then.color == "#3"
    assert then.text == "cd" and then.font == Font(10)
    assert right.box == Rect(200 - 6.6 - 9, 42, 9, pytest.approx(7.2))
    assert right.align is Align.RIGHT and right.color == "#2"
    plain = FrameBuilder(ctx(200, 520))
    plain.emit(Line("ab", Font(10), "#1"), 40)
    assert len(plain.frame.texts) == 1


def test_a_step_builder_holds_its_step_clamped_progress_and_small_type() -> None:
    rec = RunRecord(world_size=2, steps=[StepRecord(0), StepRecord(1)])
    b = StepFrameBuilder(rec, Cursor(1, 2), 1.5, ctx(4000, 4000))
    assert b.step is rec.steps[1] and b.phase == 2 and b.progress == 1.0
    assert b.small == Font(pytest.approx(14 * 0.9))
    later = StepFrameBuilder(rec, Cursor(2, 0), -0.5, ctx())
    assert later.step is None and later.progress == 0.0
    assert later.small == Font(11)  # 9.9 is under the floor
    assert StepFrameBuilder(rec, Cursor(0, 1), 0.25, ctx()).progress == 0.25


def test_the_empty_stage_centres_its_message_wrapped_to_four_fifths() -> None:
    c = ctx(100, 200, message="aaaa bbbb cccc")  # 13 px type: 6.5 px a character; room 80
    frame = empty_frame(c)
    assert frame.background == THEME.panel and frame.shapes == []
    font = Font(13)
    assert [t.text for t in frame.texts] == ["aaaa bbbb", "cccc"]
    top = (200 - 2 * 13 * 1.3) / 2
    assert frame.texts[0].box == Rect((100 - 58.5) / 2, top, 58.5, pytest.approx(16.9))
    assert frame.texts[1].box.y == pytest.approx(top + 16.9)
    assert frame.texts[1].box.x == (100 - 26) / 2
    assert all(t.font == font and t.align is Align.CENTER for t in frame.texts)
    assert all(t.color == THEME.muted for t in frame.texts)
    projector = empty_frame(ctx(1000, 200, theme=replace(THEME, name="projector")))
    assert {t.font.px for t in projector.texts} == {24}


def test_each_kinds_scenes_phase_words_and_steps_are_found_by_the_scene() -> None:
    every = scenes()
    assert set(every) == {name for k in registry.kinds() for name in k.scenes}
    assert every["ring"] is registry.get("collective").scenes["ring"]
    assert phases_of("ring") == PHASES == phases_of("anything")
    assert phase_words("ring") == ("picks", "travel", "arrive", "holds")
    assert phase_words("ddp_step") == DDP_WORDS == ("shards", "local", "all-reduce", "step")
    assert phase_words("no such scene") == DDP_WORDS
    assert whole_steps("watch") and not whole_steps("ring") and not whole_steps("nothing")


def test_the_stage_before_a_run_is_the_empty_frame_in_every_scene() -> None:
    c = ctx()
    assert stage_frame(None, Cursor(0, 0), 0.0, c, "ring").all_text() == empty_frame(c).all_text()
    none_yet = stage_frame(RunRecord(), Cursor(0, 0), 0.0, c)
    assert none_yet.all_text() == "Press Run to start real DDP ranks on this machine."
