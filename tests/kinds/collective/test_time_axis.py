"""The ring lesson's timing chart labels its y axis with round values between 0 and the
slowest time, not only those two (issue 33, item 12)."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.collective.model import ring_steps
from ddp_viz.kinds.collective.scene_charts import round_ticks
from tests.frames import assert_inside_and_apart
from tests.kinds.collective.test_ring_scene import FOUR, frame


def test_round_ticks_are_round_and_within_the_top() -> None:
    assert round_ticks(3.7, 5) == [0, 1, 2, 3]
    assert round_ticks(0.42, 4) == pytest.approx([0, 0.2, 0.4])
    assert round_ticks(12.0, 2) == [0, 20][:1]
    assert round_ticks(0.0, 5) == [0.0]


@pytest.mark.parametrize(("w", "h", "theme"), [(1280, 720, "light"), (1341, 700, "projector")])
def test_the_time_axis_has_round_values_between_zero_and_the_slowest(w, h, theme) -> None:
    _, f = frame(FOUR, ring_steps(4) - 1, 3, w=w, h=h, theme=theme)
    labels = [t for t in f.texts if t.key == "time.axis"]
    values = sorted(float(t.text.replace("−", "-")) for t in labels)
    assert len(values) >= 3 and values[0] == 0, values
    assert_inside_and_apart(f)
