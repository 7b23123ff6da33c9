"""The buckets stage's words at their edges, from the raw events and by hand: a recording with no
``[ddp]`` table (no cap beside the title), a step no rank has reported (the waiting caption), a
caption cut to two lines, a failed run's reason in three, rank 0's footer while rank 1 is still
to report, a bucket launched at the very time stamp of its last gradient (a coarse clock), a
step whose ranks sent no timings yet, and a stage so small (a projector zoomed to 2.5) that
rank 0 alone is drawn, with the footer's sentence cut to one line."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import Font, estimate_width, wrap_lines
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.kinds.bucket_timeline.test_buckets_scene import TWO, frame_at

PHASE_TEXT = load_lesson("buckets").phase_text


def step_of(e) -> int | None:
    return getattr(e, "step", None)


def rank_of(e) -> int | None:
    return getattr(e, "rank", None)


def upto(events: list, kind: str, step: int, rank: int) -> list:
    """The events as they had arrived when ``rank`` sent its ``kind`` event of ``step``."""
    end = next(
        i
        for i, e in enumerate(events)
        if e.kind == kind and step_of(e) == step and rank_of(e) == rank
    )
    return events[: end + 1]


def fits(text: str, font: Font, room: float) -> bool:
    return estimate_width(text, font) <= room


def cut(text: str, font: Font, room: float) -> str:
    """The words of ``text`` that fit ``room`` with " …" after them (all of it if it fits)."""
    if fits(text, font, room):
        return text
    words = text.split()
    n = len(words)
    while n > 1 and not fits(" ".join(words[:n]) + " …", font, room):
        n -= 1
    return " ".join(words[:n]) + " …"


def test_a_run_without_a_ddp_table_has_no_cap_beside_the_title() -> None:
    events = [
        dataclasses.replace(e, scenario={k: v for k, v in e.scenario.items() if k != "ddp"})
        if isinstance(e, protocol.RunStarted)
        else e
        for e in load_recording(TWO)
    ]
    assert all("ddp" not in e.scenario for e in events if isinstance(e, protocol.RunStarted))
    frame = frame_at(record(events), 1, 0)
    title = frame.texts[0]
    assert title.text.startswith("Step 2 of 3")
    # nothing else on the title's line
    beside = [
        t.text for t in frame.texts if t.box.y < title.box.bottom and t.box.bottom > title.box.y
    ]
    assert beside == [title.text]
    assert "bucket_cap_mb =" not in frame.all_text()
    with_cap = frame_at(record(load_recording(TWO)), 1, 0)
    assert "bucket_cap_mb = 0.001" in with_cap.all_text()


def test_a_step_no_rank_has_sent_says_it_is_waiting() -> None:
    events = load_recording(TWO)
    first = next(i for i, e in enumerate(events) if step_of(e) is not None)
    rec = record(events[:first])  # the run started, no step yet
    assert rec.world_size == 2 and not rec.steps
    frame = frame_at(rec, 0, 1)
    text = " ".join(frame.all_text().split())
    assert "Waiting for the ranks to report this step…" in text
    assert PHASE_TEXT["local"].split()[0] not in text.split("Waiting")[1]


def test_the_caption_is_cut_to_two_lines_that_say_they_were_cut() -> None:
    w, h = 420, 1400  # a narrow, tall stage: the caption keeps its place, in 14 px type
    frame = frame_at(record(load_recording(TWO)), 1, 1, w=w, h=h)
    font, pad = Font(14), 14 * 0.6
    lines = wrap_lines(PHASE_TEXT["local"], font, w - 2 * pad, estimate_width)
    assert len(lines) >= 3
    texts = [t.text for t in frame.texts]
    i = texts.index(lines[0])
    second = cut(lines[1] + " " + lines[2], font, w - 2 * pad)
    assert second.endswith(" …") and second.startswith(lines[1].split()[0])
    assert texts[i + 1] == second
    assert lines[2] not in texts and " ".join(lines[2].split()[-2:]) not in " ".join(texts)


def test_a_failed_runs_reason_takes_three_lines_at_most() -> None:
    reason = "rank 1 raised at step 3: " + " ".join(f"word{i}" for i in range(60))
    events = [e for e in load_recording(TWO) if e.kind != "run_finished"]
    events.append(protocol.RunFailed(run=1, reason=reason, rank=1))
    rec = record(events)
    w = 700
    frame = frame_at(rec, 1, 0, w=w, h=720)
    bad = [t for t in frame.texts if t.color == load_theme("light").bad]
    font = bad[0].font
    lines = wrap_lines(f"run failed: {reason}", font, w - 2 * 14 * 0.6, estimate_width)
    assert len(lines) > 3
    assert [t.text for t in bad] == lines[:3]


def raw_early(events: list, step: int, rank: int) -> tuple[int, int]:
    """The first bucket launched (its index) and the gradients ready after its launch."""
    t = next(e for e in events if e.kind == "timing" and e.step == step and e.rank == rank)
    first = min(t.buckets, key=lambda b: b["launched"])
    return first["index"], sum(1 for _, at in t.ready if at > first["launched"])


def test_rank_0s_footer_while_rank_1_is_still_to_report() -> None:
    events = load_recording(TWO)
    now = upto(events, "timing", 2, 0)  # the third step: rank 0 sent first
    assert not [e for e in now if step_of(e) == 2 and rank_of(e) == 1]
    index, waiting = raw_early(events, 2, 0)
    assert waiting > 0
    frame = frame_at(record(now), 2, 2)
    text = " ".join(frame.all_text().split())
    assert (
        f"Rank 0's first all-reduce (bucket {index}) started while {waiting} gradient(s) "
        "were still to be computed." in text
    )
    assert "rank 0" in frame.all_text() and "rank 1" not in frame.all_text().split("·")[0]


def test_a_gradient_stamped_at_its_buckets_launch_is_not_still_to_come() -> None:
    """On a coarse clock the first bucket's launch and its last gradient share a time stamp:
    that gradient was ready, not still to be computed."""
    events = load_recording(TWO)
    out = []
    for e in events:
        if e.kind == "timing" and e.step == 1 and e.rank == 0:
            first = min(e.buckets, key=lambda b: b["launched"])
            at = max(a for n, a in e.ready if n in first["params"])
            assert at < first["launched"]
            buckets = [{**b, "launched": at} if b is first else b for b in e.buckets]
            e = dataclasses.replace(e, buckets=buckets)
        out.append(e)
    index, waiting = raw_early(out, 1, 0)
    ready = next(e for e in out if e.kind == "timing" and e.step == 1 and e.rank == 0).ready
    assert sum(1 for _, a in ready if a >= at) == waiting + 1  # the one stamped at the launch
    text = " ".join(frame_at(record(out), 1, 2).all_text().split())
    assert f"(bucket {index}) started while {waiting} gradient(s)" in text


def test_a_step_without_timings_yet_draws_no_timeline_or_panel() -> None:
    events = load_recording(TWO)
    now = upto(events, "local_grad", 1, 1)  # rank 1's gradients came, its timings not yet
    rec = record(now)
    assert 1 in rec.steps[1].ranks and not rec.steps[1].ranks[1].bucket_spans
    for phase in range(4):
        frame = frame_at(rec, 1, phase)
        assert not frame.shapes
        assert frame.text_with_key("grads.head") is None
        assert "rank 1" not in frame.all_text()


def raw_shares(events: list, step: int) -> dict[int, int]:
    """Each rank's share (%) of its all-reduce time spent between backward's start and its
    last gradient, from the raw timing events."""
    out = {}
    for t in (e for e in events if e.kind == "timing" and e.step == step):
        start, last = t.spans["backward"][0][0], max(at for _, at in t.ready)
        spans = [(b["launched"], b["finished"]) for b in t.buckets]
        hidden = sum(max(0.0, min(b, last) - max(a, start)) for a, b in spans)
        out[t.rank] = round(100 * hidden / sum(b - a for a, b in spans))
    return out


@pytest.mark.parametrize("w", [450, 600])  # at 450 px "backward:" fits in regular type only
def test_a_stage_with_room_for_no_rank_still_draws_rank_0(w: int) -> None:
    theme = load_theme("projector").scaled(2.5)  # the largest zoom
    h = 300  # the stage's least height
    ctx = SceneContext(w, h, theme, PHASE_TEXT, estimate_width)
    frame = stage_frame(record(load_recording(TWO)), Cursor(1, 3), 1.0, ctx, "bucket_timeline")
    text = frame.all_text()
    assert "rank 0" in text.split("\n") and "rank 1: stage too short" in text
    assert any(s.key.startswith("rank0.") for s in frame.shapes)
    # the footer's sentence cut to one line, in its own font and colour (some was hidden)
    foot = next(t for t in frame.texts if t.text.startswith("Hidden behind"))
    pad = foot.box.x
    assert foot.color == theme.ok and foot.font.bold
    shares = raw_shares(load_recording(TWO), 1)
    low, high = min(shares.values()), max(shares.values())
    assert low < high and len(shares) == 2
    most = max(shares, key=lambda r: shares[r])
    whole = f"Hidden behind backward: {low}–{high}% per rank (most: rank {most})"
    assert foot.text == cut(whole, foot.font, w - 2 * pad) != whole
    assert foot.box.right <= w - pad
