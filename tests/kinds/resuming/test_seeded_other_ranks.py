"""The resuming verdicts and numbers that read every rank, on the 4-rank recording where the
ranks besides rank 0 are three (pure: recorded events, no Qt, no torch).

On the 2-rank recording rank 1 is the only other rank and every rank's difference is the same,
so a check that asks some other rank instead of every one, or a largest difference read from
rank 0 alone, reads right there. Here one value of the last rank is moved and the line must
follow it; the expected words come from the events."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.model.frame import StageFrame, estimate_width
from ddp_viz.model.report import run_report
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.kinds.test_conformance import lesson_of

FOUR = "resuming-4-ranks.jsonl"
LAST = 3
THEME = load_theme("light")


@pytest.fixture(scope="module")
def events():
    return load_recording(FOUR)


def frame(events, phase: int) -> StageFrame:
    lesson = lesson_of("resuming")
    ctx = SceneContext(1800, 1000, THEME, lesson.phase_text, estimate_width)
    return stage_frame(record(events), Cursor(0, phase), 1.0, ctx, lesson.scene)


def moved(events, kind: str, rank: int, variant: str | None = None, **change) -> list:
    return [
        dataclasses.replace(e, **change)
        if e.kind == kind
        and e.rank == rank
        and (variant is None or getattr(e, "variant", None) == variant)
        else e
        for e in events
    ]


def consolidate_line(events) -> str:
    lines = run_report(record(events)).splitlines()
    return next(x for x in lines if "consolidate_state_dict(to=0): rank 0 saved" in x)


def test_every_other_rank_must_refuse_state_dict_for_zero_to_pass(events) -> None:
    zeros = [e for e in events if e.kind == "zero_consolidated"]
    others = sorted(e.rank for e in zeros if e.rank != 0)
    assert others == [1, 2, 3] and all(e.refused for e in zeros if e.rank != 0)
    assert consolidate_line(events).startswith("✓ ")
    assert frame(events, 0).text_with_key("zero").text.startswith("✓ ")
    # the last of three other ranks returned a state: ranks 1 and 2 refusing is not enough
    one_gave = moved(events, "zero_consolidated", LAST, refused="")
    line = consolidate_line(one_gave)
    assert line.startswith("✗ "), line
    assert "(nothing: it returned a state)" in line
    assert frame(one_gave, 0).text_with_key("zero").text.startswith("✗ ")


@pytest.mark.parametrize("rank", [1, 2, LAST])
@pytest.mark.parametrize("variant", ["no_epoch", "no_rng", "no_optimizer"])
def test_a_resume_s_largest_difference_is_the_largest_over_the_ranks(events, variant, rank) -> None:
    """One rank's difference grown tenfold (rank 0's and the others' unchanged, whichever
    of them arrived first): the ✗ line names the grown one."""
    before = [e for e in events if e.kind == "resume_compared" and e.variant == variant]
    bigger = 10 * max(e.max_diff for e in before)
    changed = moved(events, "resume_compared", rank, variant, max_diff=bigger)
    want = f"largest |Δ| {bigger:.1e}"
    words = {
        "no_epoch": "✗ sampler's epoch left out ",
        "no_rng": "✗ RNG state left out ",
        "no_optimizer": "✗ optimizer state left out ",
    }
    line = next(x for x in run_report(record(changed)).splitlines() if x.startswith(words[variant]))
    assert want in line, line
    first = min(before, key=lambda e: e.rank)
    assert f"largest |Δ| {first.max_diff:.1e}" not in line
    said = frame(changed, 1).text_with_key(f"variant.{variant}").text
    assert said.startswith("✗") and f"{bigger:.1e}" in said, said


@pytest.mark.parametrize("rank", [0, 1, LAST])
def test_every_rank_s_load_counts_rank_0_s_own_too(events, rank) -> None:
    """Rank 0 saved the checkpoint and loads it back like the others: its load read another
    file (another CRC-32) turns the check ✗ as any rank's does."""
    saved = next(e for e in events if e.kind == "checkpoint_saved")
    loads = [e for e in events if e.kind == "checkpoint_loaded"]
    assert sorted(e.rank for e in loads) == [0, 1, 2, 3]
    assert all(e.weights == saved.weights for e in loads)
    other = moved(events, "checkpoint_loaded", rank, weights="00000000")
    line = next(x for x in run_report(record(other)).splitlines() if "every rank loaded" in x)
    assert line.startswith("✗ every rank loaded rank 0's weights"), line
    assert f"rank {rank} 00000000" in line
    said = frame(other, 0).text_with_key("loads").text
    assert said.startswith("✗ every rank loaded"), said
