"""The stage's frame as data: boxes, their edges and overlaps, the font-free width estimate,
what a frame says it shows, word wrap, the stage's number format and a long word cut to fit.
Every expected value is worked out by hand from the boxes and strings here."""

from __future__ import annotations

import math

import pytest

from ddp_viz.model.frame import (
    Font,
    Link,
    Rect,
    StageFrame,
    Text,
    cut_to_fit,
    estimate_width,
    fmt,
    wrap_lines,
)

BOX = Rect(10, 20, 100, 50)


def test_a_box_knows_its_edges_and_centre() -> None:
    assert (BOX.right, BOX.bottom, BOX.cx, BOX.cy) == (110, 70, 60, 45)


@pytest.mark.parametrize(
    ("other", "slack", "expected"),
    [
        (Rect(109.4, 20, 10, 50), 0.5, True),  # 0.6 px shared across, all of it down
        (Rect(109.5, 20, 10, 50), 0.5, False),  # exactly the slack: touching, not overlapping
        (Rect(0, 69.4, 200, 10), 0.5, True),
        (Rect(0, 69.5, 200, 10), 0.5, False),  # across it all, but only the slack down
        (Rect(0.6, 20, 10, 50), 0.5, True),  # from the left edge
        (Rect(0.5, 20, 10, 50), 0.5, False),
        (Rect(10, 10.6, 100, 10), 0.5, True),  # from above
        (Rect(10, 10.5, 100, 10), 0.5, False),
        (Rect(109, 20, 10, 50), 0.5, True),  # 1 px shared
        (Rect(109, 20, 10, 50), 1.0, False),  # not more than a slack of 1
        (Rect(109, 20, 10, 50), 0.9, True),
        (Rect(200, 200, 10, 10), 0.5, False),
    ],
)
def test_two_boxes_overlap_only_by_more_than_the_slack_both_ways(other, slack, expected) -> None:
    assert BOX.overlaps(other, slack) is expected
    assert other.overlaps(BOX, slack) is expected


def test_the_default_slack_of_an_overlap_is_half_a_pixel() -> None:
    assert BOX.overlaps(Rect(109.4, 20, 10, 50))
    assert not BOX.overlaps(Rect(109.5, 20, 10, 50))
    assert not BOX.overlaps(Rect(0, 69.5, 200, 10))


@pytest.mark.parametrize(
    ("inner", "slack", "expected"),
    [
        (Rect(10, 20, 100, 50), 0.5, True),
        (Rect(9.5, 19.5, 101, 51), 0.5, True),  # half a pixel out on every side
        (Rect(9.4, 20, 10, 10), 0.5, False),  # out on the left
        (Rect(10, 19.4, 10, 10), 0.5, False),  # above
        (Rect(100, 20, 10.6, 10), 0.5, False),  # right edge 110.6
        (Rect(10, 60, 10, 10.6), 0.5, False),  # bottom edge 70.6
        (Rect(100, 60, 10.5, 10.5), 0.5, True),
        (Rect(9.5, 20, 10, 10), 0.0, False),  # no slack given: half a pixel out is out
        (Rect(100, 60, 10.5, 10), 0.0, False),
        (Rect(9, 19, 102, 52), 1.0, True),
    ],
)
def test_a_box_contains_another_within_the_slack_on_each_side(inner, slack, expected) -> None:
    assert BOX.contains(inner, slack) is expected


def test_the_default_slack_of_containing_is_half_a_pixel() -> None:
    assert BOX.contains(Rect(9.5, 19.5, 101, 51))
    assert not BOX.contains(Rect(9.4, 20, 10, 10))


def test_an_inset_moves_each_edge_in_and_never_goes_below_nothing() -> None:
    assert BOX.inset(5) == Rect(15, 25, 90, 40)
    assert BOX.inset(5, 10) == Rect(15, 30, 90, 30)
    assert BOX.inset(5, 0) == Rect(15, 20, 90, 50)  # a dy of 0 is 0, not dx
    assert BOX.inset(60) == Rect(70, 80, 0.0, 0.0)
    assert BOX.inset(50, 25) == Rect(60, 45, 0.0, 0.0)


def test_the_width_estimate_is_0_62_em_a_character_0_6_mono_and_5_percent_more_bold() -> None:
    assert estimate_width("abcd", Font(10)) == pytest.approx(4 * 10 * 0.62)
    assert estimate_width("abcd", Font(10, mono=True)) == pytest.approx(4 * 10 * 0.6)
    assert estimate_width("abcd", Font(10, bold=True)) == pytest.approx(4 * 10 * 0.62 * 1.05)
    assert estimate_width("abcd", Font(20, bold=True, mono=True)) == pytest.approx(50.4)
    assert estimate_width("", Font(10)) == 0


def _text(text: str, box: Rect, key: str = "", value: float | None = None, **kw) -> Text:
    return Text(box, text, kw.pop("font", Font(12)), "#000", key=key, value=value, **kw)


def test_a_frame_lists_the_numbers_that_stand_for_recorded_values_by_key() -> None:
    frame = StageFrame(
        400,
        300,
        "#fff",
        texts=[
            _text("1.5", Rect(0, 0, 10, 10), "rank0.loss", 1.5),
            _text("0", Rect(0, 20, 10, 10), "rank1.loss", 0.0),  # a zero is a number too
            _text("title", Rect(0, 40, 10, 10), "title"),  # a key without a value
            _text("2", Rect(0, 60, 10, 10), "", 2.0),  # a value without a key
        ],
    )
    assert frame.numbers() == {"rank0.loss": 1.5, "rank1.loss": 0.0}
    assert frame.text_with_key("rank1.loss") is frame.texts[1]
    assert frame.text_with_key("title") is frame.texts[2]
    assert frame.text_with_key("rank2.loss") is None
    assert frame.all_text() == "1.5\n0\ntitle\n2"


def test_the_first_text_with_a_key_is_the_one_found() -> None:
    a = _text("a", Rect(0, 0, 10, 10), "k", 1.0)
    b = _text("b", Rect(0, 20, 10, 10), "k", 2.0)
    assert StageFrame(10, 10, "#fff", texts=[a, b]).text_with_key("k") is a


def test_a_click_finds_the_link_whose_box_holds_it_edges_included() -> None:
    first = Link(Rect(10, 10, 20, 20), "first", "go to the first")
    second = Link(Rect(20, 20, 20, 20), "second", "go to the second")
    frame = StageFrame(100, 100, "#fff", links=[first, second])
    assert frame.link_at(10, 10) is first
    assert frame.link_at(30, 30) is first  # shared by both: the first in Tab's order
    assert frame.link_at(35, 35) is second
    assert frame.link_at(40, 40) is second
    assert frame.link_at(9.9, 15) is None
    assert frame.link_at(40.2, 40) is None  # no slack around a link
    assert frame.link_at(15, 40.3) is None
    assert StageFrame(10, 10, "#fff").link_at(0, 0) is None


def test_the_smallest_size_counts_only_texts_that_say_something() -> None:
    frame = StageFrame(
        100,
        100,
        "#fff",
        texts=[
            _text("big", Rect(0, 0, 10, 10), font=Font(20)),
            _text("", Rect(0, 20, 10, 10), font=Font(6)),  # empty: not read
            _text("small", Rect(0, 40, 10, 10), font=Font(11)),
        ],
    )
    assert frame.smallest_px() == 11
    assert StageFrame(100, 100, "#fff").smallest_px() == math.inf


def test_overlapping_texts_are_pairs_on_one_layer_with_something_to_say() -> None:
    a = _text("a", Rect(0, 0, 20, 20))
    b = _text("b", Rect(10, 10, 20, 20))  # overlaps a
    above = _text("chip", Rect(5, 5, 20, 20), layer=1)  # over a and b, on a ground of its own
    empty = _text("", Rect(0, 0, 20, 20))
    flat = _text("flat", Rect(0, 0, 20, 0))  # no height: nothing drawn
    thin = _text("thin", Rect(0, 0, 0, 20))
    far = _text("far", Rect(100, 100, 20, 20))
    c = _text("c", Rect(15, 15, 20, 20))  # overlaps a and b
    frame = StageFrame(200, 200, "#fff", texts=[a, b, above, empty, flat, thin, far, c])
    pairs = [(x.text, y.text) for x, y in frame.overlapping_texts()]
    assert pairs == [("a", "b"), ("a", "c"), ("b", "c")]
    chips = StageFrame(200, 200, "#fff", texts=[above, _text("d", Rect(6, 6, 20, 20), layer=1)])
    assert [(x.text, y.text) for x, y in chips.overlapping_texts()] == [("chip", "d")]


def _chars(text: str, font: Font) -> float:
    """A measure in which a character is a tenth of the font's size wide."""
    return len(text) * font.px / 10


def test_wrapping_fills_each_line_up_to_the_width_and_gives_a_long_word_its_own() -> None:
    font = Font(10)  # a character: 1 px
    words = "aaa bbb ccc dddddddddddd e"
    assert wrap_lines(words, font, 10, _chars) == ["aaa bbb", "ccc", "dddddddddddd", "e"]
    assert wrap_lines("aaaa bbbbb c", font, 10, _chars) == ["aaaa bbbbb", "c"]  # 10 px fits
    assert wrap_lines("aaaa bbbbbb", font, 10, _chars) == ["aaaa", "bbbbbb"]  # 11 does not
    assert wrap_lines("  one   two  ", font, 100, _chars) == ["one two"]
    assert wrap_lines("", font, 10, _chars) == []
    assert wrap_lines("aaaa bbbbb", Font(20), 10, _chars) == ["aaaa", "bbbbb"]  # its font's size


@pytest.mark.parametrize(
    ("value", "digits", "shown"),
    [
        (None, 4, "—"),
        (math.nan, 4, "—"),
        (-1.23456, 4, "−1.235"),
        (1234567.0, 4, "1.235e+06"),
        (-0.0000123456, 4, "−1.235e−05"),  # every minus a real one
        (3.14159, 2, "3.1"),
        (0.0, 4, "0"),
        (math.inf, 4, "inf"),
        (12.5, 4, "12.5"),
    ],
)
def test_a_recorded_number_is_shown_with_four_significant_digits(value, digits, shown) -> None:
    assert fmt(value, digits) == shown


def test_four_significant_digits_is_the_default() -> None:
    assert fmt(3.14159265) == "3.142"
    assert fmt(-2.718281) == "−2.718"


def test_a_word_too_long_is_cut_as_many_characters_as_fit_at_a_time() -> None:
    def fits(s: str) -> bool:
        return len(s) <= 4

    assert cut_to_fit("abcdefghij", fits) == ["abcd", "efgh", "ij"]
    assert cut_to_fit("abcdefgh", fits) == ["abcd", "efgh"]
    assert cut_to_fit("abcd", fits) == ["abcd"]
    assert cut_to_fit("abc", fits) == ["abc"]
    assert cut_to_fit("", fits) == []
    assert cut_to_fit("abc", lambda s: len(s) <= 1) == ["a", "b", "c"]
    assert cut_to_fit("abcde", lambda s: len(s) <= 2) == ["ab", "cd", "e"]


def test_a_text_one_pixel_wide_or_tall_still_clashes() -> None:
    wide = _text("wide", Rect(0, 0, 20, 20))
    thin = _text("|", Rect(5, 5, 1, 10))  # 1 px shared across: more than the slack
    flat = _text("_", Rect(5, 15, 10, 1))
    frame = StageFrame(100, 100, "#fff", texts=[wide, thin, flat])
    assert [(a.text, b.text) for a, b in frame.overlapping_texts()] == [
        ("wide", "|"),
        ("wide", "_"),
    ]
