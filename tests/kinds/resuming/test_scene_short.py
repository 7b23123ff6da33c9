"""The restart stage when the room runs out: the short forms of each line keep their numbers,
worked out here from the events (the 4-rank recording on a small laptop stage; the 2-rank run
widened to 8 ranks, with a failed rendezvous, on a projector), and what gives way first (the
store's line, then the restarts and the steps lost share a line, then the last attempt's
heading) gives way while a lane for every rank stays (pure, no Qt)."""

from __future__ import annotations

import pytest

from ddp_viz.model.frame import StageFrame, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.frames import assert_inside_and_apart
from tests.kinds.resuming.widened import widened
from tests.kinds.test_conformance import lesson_of


def frame(events, phase: int, w: int, h: int, theme: str = "light") -> StageFrame:
    lesson = lesson_of("resuming")
    ctx = SceneContext(w, h, load_theme(theme), lesson.phase_text, estimate_width)
    f = stage_frame(record(events), Cursor(0, phase), 1.0, ctx, lesson.scene)
    assert_inside_and_apart(f)
    return f


def key(f: StageFrame, k: str):
    t = f.text_with_key(k)
    assert t is not None, (k, f.all_text())
    return t


def of(events, kind: str) -> list:
    return [e for e in events if e.kind == kind]


@pytest.fixture(scope="module")
def four():
    return load_recording("resuming-4-ranks.jsonl")


def test_a_small_stage_keeps_every_number_in_the_short_forms(four) -> None:
    zeros = {e.rank: e for e in of(four, "zero_consolidated")}
    compared = {(e.variant, e.rank): e for e in of(four, "resume_compared")}
    o = of(four, "restart_outcome")[0]
    save = frame(four, 0, 560, 480)
    assert "rank 0 saves → barrier → every rank loads" in save.all_text()
    assert key(save, "reshard").text == "✓ DCP: parameters loaded at 3 ranks = saved at 4"
    assert key(save, "zero").text == "✓ ZeRO: consolidated on rank 0 = plain Adam's"
    held = ", ".join(f"{zeros[r].state_bytes:,}" for r in range(4))
    assert key(save, "zero.bytes").text == f"state: {held} B"
    resume = frame(four, 1, 560, 480)
    e = compared[("no_epoch", 3)]
    rows = ", ".join(map(str, e.rows))
    assert key(resume, "rows").text == f"no epoch: rank 3 rows {rows} (step 1's again)"
    n = sum(compared[("no_rng", r)].mask_diff for r in range(4))
    size = sum(compared[("no_rng", r)].mask_size for r in range(4))
    assert key(resume, "masks").text == f"no RNG: {n} of {size} mask places differ"
    e = compared[("no_optimizer", 3)]
    adam = f"no optimizer: Adam's step {e.adam_step:g}, not {e.adam_step_want:g}"
    assert key(resume, "adam").text == adam
    assert key(resume, "why.everything").text == "everything: first step alike; DDP's bucket order"
    assert "final weights vs never stopped" in resume.all_text()
    dies = frame(four, 2, 560, 480)
    head = f"attempt 0 · checkpoint every 3 · rank {o.killed_rank} killed after {o.killed_after}"
    assert head in dies.all_text()
    assert key(dies, "others").text == f"torchrun sent SIGTERM {o.sigterms}×"
    restart = frame(four, 3, 560, 480)
    assert f"attempt 1: resumed from step {o.resumed_from}" in restart.all_text()
    assert key(restart, "ports").text == "the same store port in every attempt; keys of its own"
    lost = o.killed_after - o.resumed_from
    assert key(restart, "lost").text == f"steps lost: {lost} (5 mod 3 = 2)"
    assert key(restart, "final").text == (
        f"✗ final weights ≠ the run never stopped (largest |Δ| {o.max_diff:.1e})"
    )


def test_eight_ranks_on_a_projector_keep_a_lane_each_and_their_numbers() -> None:
    events = widened(8, failed_attempt=True)
    saved = of(events, "checkpoint_saved")[0]
    reshards = {e.rank: e for e in of(events, "reshard_compared")}
    o = of(events, "restart_outcome")[0]
    save = frame(events, 0, 889, 495, "projector")
    line = key(save, "saved.bytes")
    assert (line.text, line.value) == (f"step {saved.step}: {saved.bytes:,} bytes", saved.bytes)
    assert key(save, "loads").text == "✓ every rank loaded rank 0's weights"
    files = key(save, "reshard.bytes")
    assert files.text.startswith(f"files: {reshards[0].bytes:,}, {reshards[1].bytes:,}, ")
    assert files.text.endswith("…") and files.value == reshards[7].bytes
    assert save.text_with_key("zero") is None  # the last line gives way
    assert all(save.text_with_key(f"load.{r}") is not None for r in range(8))
    resume = frame(events, 1, 889, 495, "projector")
    assert "vs never stopped" in resume.all_text().split("\n")
    assert key(resume, "variant.everything").text == "✓ bit for bit"
    dies = frame(events, 2, 889, 495, "projector")
    assert "attempt 0 · checkpoint every 3 · rank 7 killed after 5" in dies.all_text()
    assert [key(dies, f"end.0.{r}").text for r in range(8)] == ["failed after 5"] + [
        "stopped after 5"
    ] * 6 + ["killed after 5"]
    restart = frame(events, 3, 889, 495, "projector")
    assert key(restart, "attempt.1").text == "attempt 1: connectFullMesh … Connection refused"
    assert "attempt 2: resumed from step 3" in restart.all_text()
    assert restart.text_with_key("ports") is None  # the store's line goes first
    restarts = key(restart, "restarts")
    assert (restarts.text, restarts.value) == (f"restarts: {o.restarts} of --max-restarts 3", 2)
    lost = key(restart, "lost")
    assert (lost.text, lost.value) == ("steps lost: 2 (5 mod 3 = 2)", 2)
    assert abs(lost.box.y - restarts.box.y) > 1  # a line each
    assert key(restart, "final").text == "✓ final weights = never stopped, bit for bit"


@pytest.mark.parametrize("height", [470, 430])
def test_on_a_shorter_stage_the_restarts_and_the_steps_lost_share_a_line(height: int) -> None:
    events = widened(8, failed_attempt=True)
    f = frame(events, 3, 889, height, "projector")
    restarts, lost = key(f, "restarts"), key(f, "lost")
    assert (restarts.text, restarts.value) == ("restarts: 2 of 3", 2)
    assert (lost.text, lost.value) == ("steps lost: 2 (5 mod 3 = 2)", 2)
    assert abs(lost.box.y - restarts.box.y) < 1 and lost.box.x > restarts.box.right
    assert all(f.text_with_key(f"end.2.{r}") is not None for r in range(8))
    heading = "attempt 2: resumed from step 3" in f.all_text()
    assert heading is (height == 470)  # the heading goes last
