"""gloo's error on the uneven stage in a 1280×800 projector (issue 33, item 11): its source
path ('[/__w/pytorch/…/unbound_buffer.cc:78]') was one word too long for a line, so it broke
mid-word, and the second rank's error was cut at the stage's bottom."""

from __future__ import annotations

from ddp_viz.kinds.uneven.scene import fit_lines, short_sources
from tests.frames import assert_inside_and_apart
from tests.kinds.uneven.test_uneven_scene import STALL, frame

PROJECTOR_STAGE = (893, 495)  # the stage in a 1280×800 window in projector mode


def test_a_source_path_keeps_its_file_name() -> None:
    error = "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed"
    assert short_sources(error) == "[…/unbound_buffer.cc:78] Timed"
    assert short_sources("no path [here]") == "no path [here]"


def test_long_entries_shorten_before_any_is_left_out() -> None:
    wrapped = [["a1"], ["b1 x", "b2 x", "b3 x", "b4 x"], ["c1 x", "c2 x"]]
    fit_lines(wrapped, [10, 10, 10], 50)
    assert wrapped == [["a1"], ["b1 x", "b2 …"], ["c1 x", "c2 x"]]
    fit_lines(wrapped, [10, 10, 10], 20)
    assert wrapped == [["a1"], ["b1 …"], []]


def test_every_rank_s_error_is_on_a_projector_s_stage_in_whole_words() -> None:
    rec, f = frame(STALL, 2, w=PROJECTOR_STAGE[0], h=PROJECTOR_STAGE[1], theme="projector")
    assert_inside_and_apart(f)
    text = f.all_text()
    assert "/__w/" not in text and "[…/unbound_buffer.cc:78]" in text
    for r in rec.parts["uneven"].stalled:
        assert f.text_with_key(f"stalled.{r}") is not None, r
