"""The practitioner's watched page read as a practitioner reads it (issue 33, 14–17), from a
recorded run of 120 tensors in 7 buckets whose rank 1 sleeps 20 ms before every step: each
bucket labelled with its own duration on a time axis, who was last with the mean wait, every
tensor reachable and sortable, one norm per rank in the plot, and a watched step that is one
position, with words that fit a watched run."""

from __future__ import annotations

import json
import math

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.assets import asset
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.lesson import load_lesson_folder
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording
from tests.frames import STAGE_SIZES, assert_fits

MANY = "watched-120-tensors.jsonl"


def raw(name: str = MANY) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines()]


def timings(step: int) -> dict[int, list[dict]]:
    """rank -> the recorded buckets of ``step``, straight from the file's lines."""
    return {e["rank"]: e["buckets"] for e in raw() if e["event"] == "timing" and e["step"] == step}


def frame(step: int, w: float = 1280, h: float = 900, theme: str = "light", events=None):  # type: ignore[no-untyped-def]
    rec = record(events if events is not None else load_recording(MANY))
    lesson = load_lesson_folder(asset("watched"))
    ctx = SceneContext(w, h, load_theme(theme), lesson.phase_text, estimate_width)
    return rec, stage_frame(rec, Cursor(step, 3), 1.0, ctx, lesson.scene)


# --- 14: buckets ------------------------------------------------------------------------------
def test_each_bucket_is_labelled_with_its_own_duration_on_a_time_axis() -> None:
    step = 2
    _, f = frame(step)
    got = timings(step)
    indices = sorted({b["index"] for bs in got.values() for b in bs})
    assert len(indices) == 7
    for i in indices:
        per_rank = {r: next(b for b in bs if b["index"] == i) for r, bs in got.items()}
        last = max(per_rank, key=lambda r: per_rank[r]["launched"])
        own = per_rank[last]["finished"] - per_rank[last]["launched"]
        waited = max(b["launched"] for b in per_rank.values()) - min(
            b["launched"] for b in per_rank.values()
        )
        cells = [f.text_with_key(f"bucket{i}.{c}").text for c in range(5)]
        assert cells[0] == f"#{i}"
        assert cells[1] == f"{per_rank[0]['bytes']} B"  # its size
        assert cells[2] == str(len(per_rank[0]["params"]))  # how many tensors
        assert cells[3] == f"{own * 1e3:.1f} ms"  # the all-reduce itself, waiting left out
        assert cells[4] == f"{waited * 1e3:.1f} ms"  # how long the first rank waited
        for r in got:  # every rank's bar of it
            assert any(s.key == f"bucket.{r}.{i}" for s in f.shapes)
    # a time axis under the bars: ticks from 0, the last one with its unit
    ticks = [t for t in f.texts if t.key.startswith("buckets.tick.")]
    assert ticks[0].text == "0" and ticks[-1].text.endswith(" ms") and len(ticks) >= 3
    assert any(s.key == "buckets.axis" for s in f.shapes)
    # no span "from the first to the last" that mixes the all-reduce with the waiting
    assert "from the first to the last" not in f.all_text()


@pytest.mark.parametrize(("w", "h", "theme"), STAGE_SIZES)
def test_the_page_of_120_tensors_fits_every_stage(w, h, theme) -> None:
    for step in range(4):
        _, f = frame(step, w, h, theme)
        assert_fits(f, theme)


# --- 15: the mean wait beside the count ---------------------------------------------------------
def test_who_was_last_comes_with_how_long_the_others_waited_on_average() -> None:
    _, f = frame(3)
    waits = []
    for step in range(1, 4):  # from step 2, as the terminal's verdict counts (issue 47, 15)
        first = {r: min(b["launched"] for b in bs) for r, bs in timings(step).items()}
        assert max(first, key=first.get) == 1  # the sleeping rank, every step
        waits.append(max(first.values()) - min(first.values()))
    mean = sum(waits) / len(waits)
    line = f.text_with_key("stragglers")
    assert line.value == pytest.approx(mean)
    assert f"rank 1 × 3, mean wait {mean * 1e3:.1f} ms" in f.all_text()
    assert "last to the all-reduce in steps 2–4 (3)" in f.all_text()


def test_noise_reads_as_noise() -> None:
    """The 4-tensor run has no straggler: whoever was last, the mean wait says how little."""
    _, f = frame(3, events=load_recording("watched-2-ranks.jsonl"))
    text = f.all_text()
    assert "mean wait" in text and f.text_with_key("stragglers").value < 0.005


# --- 16: every tensor, the few that matter on the stage -----------------------------------------
def test_the_stage_shows_the_tensors_whose_ranks_spread_most_and_says_where_the_rest_are() -> None:
    _, f = frame(3)
    local = {e["rank"]: e["grads"] for e in raw() if e["event"] == "local_grad" and e["step"] == 3}
    norms = {n: [math.sqrt(sum(x * x for x in local[r][n])) for r in (0, 1)] for n in local[0]}
    spread = sorted(norms, key=lambda n: -(max(norms[n]) - min(norms[n])))
    shown = [t.key.removeprefix("spread.") for t in f.texts if t.key.startswith("spread.")]
    assert shown == spread[: len(shown)] and len(shown) >= 3
    assert "of 120 tensors" in f.text_with_key("tensors.more").text


# --- 17: a watched step is one position; words that fit a watched run -------------------------
def test_before_the_first_step_the_page_says_it_is_waiting() -> None:
    events = [e for e in load_recording(MANY) if e.kind in ("run_started", "watched_rank")]
    _, f = frame(0, events=events)
    assert "Waiting for your script's first step" in f.text_with_key("before_first_step").text
    assert "Press Run" not in f.all_text()
    assert f.texts[0].text == "Your run · no step reported"
    # the same run once it ended (its ranks failed before their first forward): nothing waits
    ended = [*events, protocol.RunFinished(1, 0, 30.0)]
    _, f = frame(0, events=ended)
    said = f.text_with_key("before_first_step").text
    assert (
        said
        == "No step of your script reached ddp-viz: its ranks ended before their first forward."
    )
    assert "Waiting" not in f.all_text() and f.texts[0].text == "Your run · no step reported"


def test_step_times_are_shown_at_the_latest_step_too() -> None:
    _, f = frame(3)
    fwd = {
        (e["step"], e["rank"]): e["spans"]["forward"][0][0] for e in raw() if e["event"] == "timing"
    }
    for r in (0, 1):
        # the newest step has no next forward: its row shows the step before it, and the mean
        assert (
            f.text_with_key(f"rank{r}.step_time").text == f"{(fwd[3, r] - fwd[2, r]) * 1e3:.1f} ms"
        )
        mean = (fwd[3, r] - fwd[0, r]) / 3
        assert f.text_with_key(f"rank{r}.mean_step").text == f"{mean * 1e3:.1f} ms"


def test_the_status_line_says_the_training_time_apart_from_the_launchers() -> None:
    from ddp_viz.model.session import status_text

    rec = record(load_recording(MANY))
    first = min(e["spans"]["forward"][0][0] for e in raw() if e["event"] == "timing")
    last = max(b["finished"] for e in raw() if e["event"] == "timing" for b in e["buckets"])
    text = status_text(rec)
    assert f"in {last - first:.3f} s of training" in text
    assert f"{rec.elapsed_s:.2f} s with the launcher's start-up" in text


@pytest.mark.parametrize("step", [0, 3])
def test_a_projectors_short_stage_keeps_the_averages_verdict(step) -> None:
    """1280x800 in projector type leaves the stage about 880x500: the buckets give way (the
    Run tab has them) before the check that every rank holds the same average does."""
    _, f = frame(step, 880, 500, "projector")
    assert_fits(f, "projector")
    assert f.text_with_key("averages.identical").text.startswith("✓")
