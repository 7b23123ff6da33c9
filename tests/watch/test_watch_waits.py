"""Who the others waited for on a watched run, computed here from the raw ``timing`` events
(pure: a recorded ``ddp-viz watch`` run, no Qt, no torch): a rank reached the all-reduce when
its first bucket was *launched* into the comm hook, not when one finished. Every step, and a
copy where one rank is made late, so the straggler must change."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.kinds.watched.run import after_first_ms
from ddp_viz.model.assets import asset
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.lesson import load_lesson_folder
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording

WATCHED = "watched-2-ranks.jsonl"


def reached(events) -> dict[int, dict[int, float]]:
    """step -> rank -> the earliest bucket launch, from the events themselves."""
    out: dict[int, dict[int, float]] = {}
    for e in events:
        if e.kind == "timing" and e.buckets:
            out.setdefault(e.step, {})[e.rank] = min(b["launched"] for b in e.buckets)
    return out


def late(events, step: int, rank: int, by: float):
    """A copy where ``rank`` launched every bucket of ``step`` ``by`` seconds later, and every
    rank's all-reduces of that step finished ``by`` later (they waited for it): the finishes
    keep their order, the launches do not."""
    out = []
    for e in events:
        if e.kind == "timing" and e.step == step:
            moved = by if e.rank == rank else 0.0
            buckets = [
                {**b, "launched": b["launched"] + moved, "finished": b["finished"] + by}
                for b in e.buckets
            ]
            e = dataclasses.replace(e, buckets=buckets)
        out.append(e)
    return out


def check(events) -> None:
    rec = record(events)
    lesson = load_lesson_folder(asset("watched"))
    ctx = SceneContext(1280, 720, load_theme("light"), lesson.phase_text, estimate_width)
    for step, got in sorted(reached(events).items()):
        last = max(got, key=lambda r: (got[r], r))
        wait = got[last] - min(got.values())
        f = stage_frame(rec, Cursor(step, 3), 1.0, ctx, lesson.scene)
        line = f.text_with_key("straggler")
        assert line is not None and line.value == pytest.approx(wait, abs=1e-12), step
        assert f"waited {wait * 1e3:.1f} ms for rank {last}," in line.text, (step, line.text)
        for r, t in got.items():
            cell = f.text_with_key(f"rank{r}.reached_all-reduce")
            assert cell is not None and cell.text == f"+{(t - min(got.values())) * 1e3:.1f} ms"
        # the plot's line: each rank's arrival after the first rank's, from the raw launches
        mine = after_first_ms(rec.steps[step])
        for r, t in got.items():
            assert mine[r] == pytest.approx((t - min(got.values())) * 1e3, abs=1e-9)


def test_the_straggler_is_the_last_to_launch_a_bucket_at_every_step() -> None:
    check(load_recording(WATCHED))


@pytest.mark.parametrize("rank", [0, 1])
def test_a_rank_made_late_becomes_the_one_the_others_waited_for(rank) -> None:
    events = load_recording(WATCHED)
    got = reached(events)[2]
    by = max(got.values()) - got[rank] + 0.004  # 4 ms after the other one
    changed = late(events, 2, rank, by)
    assert max(reached(changed)[2].items(), key=lambda kv: kv[1])[0] == rank
    check(changed)
