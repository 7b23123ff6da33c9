"""A narrow watched stage (a projector's with the side column open, or Ctrl+T at 1280×800)
keeps the columns a practitioner reads the page for: when each rank reached the all-reduce,
and how long the first rank waited for each bucket. Less telling columns go first (host and
pid, the mean step; the tensor count, the size); nothing is cut at the stage's edge."""

from __future__ import annotations

import pytest

from tests.frames import assert_inside_and_apart
from tests.watch.test_watch_page import frame


@pytest.mark.parametrize("theme", ["projector", "light"])
@pytest.mark.parametrize("width", [420, 480, 540, 600, 660, 720, 800])
def test_a_narrow_stage_keeps_who_reached_the_all_reduce_and_who_waited(width, theme) -> None:
    rec, f = frame(3, w=width, h=900, theme=theme)
    assert_inside_and_apart(f)
    keys = {t.key for t in f.texts}
    for r in range(rec.world_size):
        assert f"rank{r}.reached_all-reduce" in keys, (width, theme)
    waited = [k for k in keys if k.startswith("bucket") and k.endswith(".4")]
    own = [k for k in keys if k.startswith("bucket") and k.endswith(".3")]
    assert waited and len(waited) == len(own), (width, theme)
