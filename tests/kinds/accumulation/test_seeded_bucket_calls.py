"""The accumulation stage's count line when the ranks' backward passes that synchronised agree
but their bucket all-reduces do not (pure: the real 4-rank recording with one call added on its
last rank). One count "on every rank" would then be rank 0's count said for all: the line must
count rank by rank and give no single number. Expected counts come from the raw lines."""

from __future__ import annotations

import json
from dataclasses import replace

from ddp_viz.kinds.accumulation.events import MicroStep
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording

FOUR = "accumulate-4-ranks.jsonl"  # 4 ranks, 3 micro-batches, the last one synchronises
THEME = load_theme("light")
LAST = 3


def frame(events, step: int, phase: int):  # type: ignore[no-untyped-def]
    lesson = load_lesson("accumulate-with-no-sync")
    ctx = SceneContext(1280, 720, THEME, lesson.phase_text, estimate_width)
    return stage_frame(record(events), Cursor(step, phase), 1.0, ctx, "accumulation")


def raw_micro(step: int) -> list[dict]:
    lines = [json.loads(ln) for ln in (DATA / FOUR).read_text().splitlines() if ln.strip()]
    return [d for d in lines if d["event"] == "micro_step" and d["step"] == step]


def test_ranks_alike_in_synced_passes_but_not_in_bucket_calls_get_no_single_count() -> None:
    micro = raw_micro(0)
    synced = {r: sum(1 for d in micro if d["rank"] == r and d["allreduced"]) for r in range(4)}
    calls = {r: sum(len(d["allreduced"]) for d in micro if d["rank"] == r) for r in range(4)}
    assert set(synced.values()) == {1} and set(calls.values()) == {1}
    syncing = next(d["micro"] for d in micro if d["rank"] == LAST and d["allreduced"])
    # the last rank's synchronising backward all-reduced two buckets, the others' one
    events = [
        replace(e, allreduced=[*e.allreduced, 1])
        if isinstance(e, MicroStep) and (e.step, e.rank, e.micro) == (0, LAST, syncing)
        else e
        for e in load_recording(FOUR)
    ]
    f = frame(events, 0, 2)
    line = f.text_with_key("allreduces")
    assert line.value is None, line.text  # not rank 0's count said for every rank
    text = " ".join(f.all_text().split())
    assert "on every rank" not in text
    each = " · ".join(f"rank {r}: {synced[r]}" for r in range(4))
    assert f"backward passes that all-reduced, of 3: {each}" in text
    # the recording as it is: one count, the same on every rank
    f = frame(load_recording(FOUR), 0, 2)
    assert f.text_with_key("allreduces").value == calls[0] == 1
    assert "1 of 3 backward passes all-reduced on every rank" in f.text_with_key("allreduces").text
