"""The DDP step's numbers on a laptop's stage (issue 33, item 2): at 1280×800 the stage is about
560×480 px and its numbers were the smallest text in the window (11 px, labels 9 px) with
~200 px of blank stage around two short lanes; their size changed from step to step with the
step's own values; the new parameters touched the lane's edge; and the update was drawn as a
line under the digits' baseline ("→ ____1.29"), which read as a blank to fill in."""

from __future__ import annotations

import pytest

from ddp_viz.model.frame import StageFrame
from ddp_viz.model.scenes import stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, RunRecord, record
from tests.conftest import load_recording
from tests.core.test_stage_frame import ctx

LAPTOP_STAGE = (560, 480)  # the stage in a 1280×800 window
NUMBER_KINDS = (".local.", ".averaged.", ".params.")


def numbers(frame: StageFrame) -> list:
    return [t for t in frame.texts if any(k in t.key for k in NUMBER_KINDS)]


def every_frame(rec: RunRecord, size=LAPTOP_STAGE, theme="light"):
    for step in range(len(rec.steps)):
        for phase in (1, 2, 3):
            yield stage_frame(rec, Cursor(step, phase), 1.0, ctx(*size, theme))


@pytest.mark.parametrize(
    "name", ["mlp-2-ranks-3-steps.jsonl", "default-run.jsonl", "four-ranks-3-steps.jsonl"]
)
def test_the_numbers_are_larger_than_the_stage_text_and_the_same_on_every_step(name) -> None:
    rec = record(load_recording(name))
    font_px = load_theme("light").font_px
    sizes = set()
    for frame in every_frame(rec):
        nums = numbers(frame)
        assert nums
        sizes |= {round(t.font.px) for t in nums}
        others = [t.font.px for t in frame.texts if t not in nums]
        assert min(t.font.px for t in nums) >= font_px, name
        assert min(t.font.px for t in nums) > max(others[1:]), name  # all but the title
    assert len(sizes) == 1, sizes


def test_the_lanes_use_the_stage_height() -> None:
    rec = record(load_recording("mlp-2-ranks-3-steps.jsonl"))
    frame = stage_frame(rec, Cursor(2, 3), 1.0, ctx(*LAPTOP_STAGE))
    lanes = [s.box for s in frame.shapes if s.kind == "rrect" and s.box.w > LAPTOP_STAGE[0] * 0.8]
    lanes = [b for b in lanes if b.h > 40]  # not the data strip
    assert len(lanes) == 2
    assert sum(b.h for b in lanes) >= LAPTOP_STAGE[1] * 0.4


@pytest.mark.parametrize(("size", "theme"), [(LAPTOP_STAGE, "light"), ((893, 495), "projector")])
def test_new_values_keep_off_the_lane_edge_and_the_arrow_points_at_them(size, theme) -> None:
    rec = record(load_recording("mlp-2-ranks-3-steps.jsonl"))
    frame = stage_frame(rec, Cursor(1, 3), 1.0, ctx(*size, theme))
    lanes = [s.box for s in frame.shapes if s.kind == "rrect" and s.box.w > size[0] * 0.6]
    right = max(b.right for b in lanes)
    after = [t for t in frame.texts if ".params." in t.key]
    arrows = [s for s in frame.shapes if s.key == "arrow"]
    assert after and arrows
    for t in after:
        assert right - t.box.right >= max(4.0, t.font.px * 0.3) - 0.01, (t.text, right, t.box)
        shafts = [
            s for s in arrows if s.points[1][0] <= t.box.x + 1 and s.points[0][1] == s.points[1][1]
        ]
        mine = [s for s in shafts if t.box.y < s.points[0][1] < t.box.bottom]
        assert mine, t.text
        for s in mine:  # in the middle third of the digits' box, not under their baseline
            y = s.points[0][1]
            assert t.box.y + t.box.h / 3 <= y <= t.box.y + t.box.h * 2 / 3, (t.text, y, t.box)
    befores = [t for t in frame.texts if ".before." in t.key]
    # tensors taking turns (a projector at 1280×800) have no old value: the arrow is the change
    assert befores or any(t.key == "turns" for t in frame.texts)
    assert not any("→" in t.text for t in befores)
