"""How the buckets stage gives way as it gets shorter, four ranks of a real run: each rank's
buckets in one lane, then each rank in one row, and only then ranks left out, which the legend
names (the last ones, one or a range). Which ranks are drawn, and what the legend says of the
picture, are asserted at each size."""

from __future__ import annotations

import re

import pytest

from ddp_viz.model.timeline import record
from tests.conftest import load_recording
from tests.frames import assert_inside_and_apart
from tests.kinds.bucket_timeline.test_buckets_scene import FOUR, frame_at


def drawn(frame) -> list[int]:
    return sorted({int(s.key[4]) for s in frame.shapes if s.key.endswith(".backward")})


def lane_labels(frame) -> list[str]:
    return [t.text for t in frame.texts if re.fullmatch(r"b\d+(–\d+)?", t.text)]


@pytest.mark.parametrize(
    ("w", "h", "theme", "hidden"),
    [
        (700, 150, "light", "rank 3"),
        (1100, 275, "projector", "ranks 2–3"),
    ],
)
def test_ranks_left_out_are_the_last_and_the_legend_names_them(w, h, theme, hidden) -> None:
    rec = record(load_recording(FOUR))
    frame = frame_at(rec, 1, 2, w=w, h=h, theme=theme)
    text = " ".join(frame.all_text().split())
    assert f"{hidden}: stage too short · " in text
    left_out = hidden.removeprefix("ranks ").removeprefix("rank ").split("–")
    assert drawn(frame) == list(range(int(left_out[0])))
    assert_inside_and_apart(frame)


def test_a_tall_stage_draws_a_lane_per_bucket() -> None:
    rec = record(load_recording(FOUR))
    buckets = len(rec.steps[1].ranks[0].bucket_spans)
    frame = frame_at(rec, 1, 2, w=700, h=575)
    assert drawn(frame) == [0, 1, 2, 3]
    assert lane_labels(frame) == [f"b{i}" for i in range(buckets)] * 4
    text = " ".join(frame.all_text().split())
    assert "grey: backward · tick: a gradient ready · b0, b1…: a bucket's all-reduce" in text
    assert "one lane" not in text and "upper half" not in text and "too short" not in text


def test_a_shorter_stage_puts_each_ranks_buckets_in_one_lane_and_says_so() -> None:
    rec = record(load_recording(FOUR))
    buckets = len(rec.steps[1].ranks[0].bucket_spans)
    frame = frame_at(rec, 1, 2, w=700, h=300)
    assert drawn(frame) == [0, 1, 2, 3]
    assert lane_labels(frame) == [f"b0–{buckets - 1}"] * 4
    text = " ".join(frame.all_text().split())
    assert "b0, b1…: a bucket's all-reduce, one thin bar each in one lane, b0 at the top" in text
    # the lane's bars top down in bucket order, each thinner than a lane's own
    bars = {s.key: s.box for s in frame.shapes if s.key.startswith("rank0.bucket")}
    ys = [bars[f"rank0.bucket{i}"].y for i in range(buckets)]
    assert ys == sorted(ys) and len(set(ys)) == buckets
    assert_inside_and_apart(frame)


def test_shorter_still_each_rank_takes_one_row_and_the_legend_says_which_half_is_what() -> None:
    rec = record(load_recording(FOUR))
    frame = frame_at(rec, 1, 3, w=700, h=175)
    assert drawn(frame) == [0, 1, 2, 3]
    assert lane_labels(frame) == []
    text = " ".join(frame.all_text().split())
    assert "upper half: backward (grey)" in text
    for r in range(4):  # backward in the row's upper half, its buckets below it
        back = next(s.box for s in frame.shapes if s.key == f"rank{r}.backward")
        bucket = next(s.box for s in frame.shapes if s.key == f"rank{r}.bucket0")
        assert bucket.y >= back.y + back.h * 0.5
    assert_inside_and_apart(frame)
