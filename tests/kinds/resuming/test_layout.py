"""The stage at 2, 4 and 8 ranks, on a laptop and on projectors: every phase stays on the
stage without overlapping text, and every rank has its lane or its column (pure: the real
2-rank run widened, see ``widened``)."""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.frames import assert_inside_and_apart
from tests.kinds.resuming.widened import widened
from tests.kinds.test_conformance import STAGES

LESSON = load_lesson("when-a-rank-dies")


def frames(world: int, stage: str, failed: bool = False):
    theme, width, height = STAGES[stage]
    ctx = SceneContext(width, height, load_theme(theme), LESSON.phase_text, estimate_width)
    rec = record(widened(world, failed))
    return [stage_frame(rec, Cursor(0, phase), 1.0, ctx, LESSON.scene) for phase in range(4)]


@pytest.mark.parametrize("failed", [False, True])
@pytest.mark.parametrize("stage", list(STAGES))
@pytest.mark.parametrize("world", [2, 4, 8])
def test_every_rank_is_on_the_stage_in_every_phase(world: int, stage: str, failed: bool) -> None:
    save, resume, dies, restart = frames(world, stage, failed)
    for f in (save, resume, dies, restart):
        assert_inside_and_apart(f)
    last = world - 1
    assert all(save.text_with_key(f"load.{r}") is not None for r in range(world))
    for variant in ("everything", "no_epoch", "no_rng", "no_optimizer"):
        cells = [resume.text_with_key(f"cell.{variant}.{r}") for r in range(world)]
        assert all(c is not None for c in cells), (variant, cells)
        for r, c in enumerate(cells):  # under its rank's number, not another's
            head = resume.text_with_key(f"head.{r}")
            assert head is not None and abs(c.box.x - head.box.x) < head.box.w, (variant, r)
    ends = [dies.text_with_key(f"end.0.{r}") for r in range(world)]
    for r, e in enumerate(ends):  # on its rank's lane: the line of the label "rank r"
        label = next(t for t in dies.texts if t.text == f"rank {r}")
        assert e is not None and abs(e.box.y - label.box.y) < 1, r
    assert all(e is not None for e in ends)
    assert ends[last].text.startswith("killed after 5")
    assert all(not e.text.startswith("killed") for e in ends[:last])
    final = 2 if failed else 1
    assert all(restart.text_with_key(f"end.{final}.{r}") is not None for r in range(world))
    for key in ("restarts", "lost", "final"):
        assert restart.text_with_key(key) is not None, (key, world, stage)
    if failed:
        said = restart.text_with_key("attempt.1")
        assert said is not None and "connectFullMesh" in said.text
