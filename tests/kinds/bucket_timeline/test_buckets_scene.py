"""The buckets scene as a pure function of recorded runs: what it reveals when, and that every
time, count and number on it is the recorded one."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.kinds.bucket_timeline.overlap import layouts, overlap, ready_order
from ddp_viz.kinds.bucket_timeline.scene_parts import axis_ticks, size_label
from ddp_viz.model import protocol
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import StageFrame, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.scenes.base import short_name
from ddp_viz.model.tensors import tensor_norm
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, RunRecord, record
from tests.conftest import load_recording
from tests.frames import assert_inside_and_apart

TWO = "buckets-lesson-2-ranks.jsonl"
FOUR = "buckets-lesson-4-ranks.jsonl"


def rec_of(name: str) -> RunRecord:
    return record(load_recording(name))


def ctx(w: float = 1280, h: float = 720, theme: str = "light") -> SceneContext:
    return SceneContext(w, h, load_theme(theme), load_lesson("buckets").phase_text, estimate_width)


def frame_at(rec: RunRecord, step: int, phase: int, progress: float = 1.0, **kw) -> StageFrame:
    return stage_frame(rec, Cursor(step, phase), progress, ctx(**kw), "bucket_timeline")


def keys(frame: StageFrame, part: str) -> set[str]:
    return {s.key for s in frame.shapes if part in s.key}


def test_the_recording_is_the_lesson_run_it_claims_to_be() -> None:
    rec = rec_of(TWO)
    steps = layouts(rec)
    assert len(steps[0]) == 1 and len(steps[1]) == 4  # one bucket, then DDP's rebuild
    assert steps[1][0][:2] == ["6.bias", "6.weight"]  # bucket 0 now holds the last layer


def test_phases_reveal_ticks_then_bars_then_the_overlap() -> None:
    rec = rec_of(TWO)
    ready = {f"rank{r}.ready.{n}" for r in (0, 1) for n, _ in rec.steps[1].ranks[r].ready}
    f0, f1, f2, f3 = (frame_at(rec, 1, p) for p in range(4))
    assert not keys(f0, ".ready.") and not keys(f0, ".bucket")
    assert keys(f1, ".ready.") == ready and not keys(f1, ".bucket")
    assert keys(f2, ".bucket") == {f"rank{r}.bucket{i}" for r in (0, 1) for i in range(4)}
    assert not keys(f2, ".hidden") and keys(f3, ".hidden")
    assert "avgnorm" not in " ".join(t.key for t in f2.texts)


def test_the_sweep_shows_each_tick_only_once_its_recorded_time_has_passed() -> None:
    rec = rec_of(TWO)
    rs = rec.steps[1].ranks[0]
    counts = []
    for progress in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0):
        shown = keys(frame_at(rec, 1, 1, progress), "rank0.ready.")
        counts.append(len(shown))
        # what shows is always the earliest ticks, in the order they were recorded
        assert shown == {f"rank0.ready.{n}" for n in ready_order(rs)[: len(shown)]}
    assert counts == sorted(counts) and counts[-1] == len(rs.ready) and counts[0] < counts[-1]


def test_the_measured_overlap_and_norms_are_the_recorded_ones() -> None:
    rec = rec_of(TWO)
    st = rec.steps[1]
    frame = frame_at(rec, 1, 3)
    text = frame.all_text()
    for r in (0, 1):
        o = overlap(st.ranks[r])
        assert o is not None
        assert f"rank {r}: {round(o.fraction * 100)}%" in text
    shown = frame.numbers()
    for name, value in st.ranks[0].averaged.items():
        assert shown[f"avgnorm.{name}"] == tensor_norm(value)


def test_step_one_explains_the_single_bucket_and_both_layouts_are_listed() -> None:
    rec = rec_of(TWO)
    text = " ".join(frame_at(rec, 0, 0).all_text().split())
    assert "in one bucket." in text and "rebuilds the buckets" in text
    assert "in step 1 b0 0.w 0.b 2.w" in text and "all-reduce order b0 6.b 6.w 4.b 2 KiB" in text
    assert "0%" in frame_at(rec, 0, 3).all_text()  # one bucket after the last gradient


@pytest.mark.parametrize("name", [TWO, FOUR])
@pytest.mark.parametrize(
    ("size", "theme"),
    [
        ((1280, 720), "light"),
        ((760, 430), "light"),
        ((1100, 650), "projector"),
        ((1341, 724), "projector"),
        ((1800, 960), "dark"),
    ],
)
def test_nothing_overlaps_or_leaves_the_stage(name: str, size, theme: str) -> None:
    rec = rec_of(name)
    for step in (0, 1):
        for phase in range(4):
            for progress in (0.5, 1.0):
                frame = frame_at(rec, step, phase, progress, w=size[0], h=size[1], theme=theme)
                assert_inside_and_apart(frame)
                if theme == "projector":
                    assert frame.smallest_px() >= 24


def test_a_short_stage_leaves_ranks_out_and_says_so() -> None:
    rec = rec_of(FOUR)
    # (at 1100×650 all four ranks now fit: each rank's buckets share one lane first; at
    # 1100×400 too, each rank in one row)
    frame = frame_at(rec, 1, 3, w=1100, h=250, theme="projector")
    assert "ranks 1–3: stage too short" in frame.all_text()
    assert "rank 0" in frame.all_text()


def test_axis_ticks_are_round_and_cover_the_span() -> None:
    ticks = axis_ticks(4.6, 6)
    assert [v for v, _ in ticks] == [0, 1, 2, 3, 4] and ticks[1][1] == "1 ms"
    assert len(axis_ticks(4.6, 20)) <= 20 and axis_ticks(0.0, 5) == [(0.0, "0")]


def test_names_and_sizes() -> None:
    assert short_name("4.weight") == "4.w" and short_name("bias") == "b"
    assert size_label(8) == "8 B" and size_label(262144) == "256 KiB"


@pytest.mark.parametrize(("w", "h"), [(560, 480), (1280, 720), (1100, 650)])
def test_every_bucket_of_both_layouts_is_listed(w: int, h: int) -> None:
    """The window's stage at 1280×800 is about 560×480: no bucket may go missing there."""
    rec = rec_of(TWO)
    theme = "projector" if w == 1100 else "light"
    text = frame_at(rec, 1, 0, w=w, h=h, theme=theme).all_text()
    for i, names in enumerate(layouts(rec)[1]):
        assert f"b{i} {short_name(names[0])}" in text, (i, text)
    assert "b0 0.w" in text  # step 1's single bucket


def test_the_bucket_count_question_reads_the_run_and_only_a_run_with_its_cap() -> None:
    q = next(q for q in load_lesson("buckets").questions if q.kind == "predict").quantity
    rec = rec_of(TWO)  # the lesson's own cap, 0.001: four buckets from step 2
    assert q.read(rec) == 4.0 and q.phase == "shards"
    assert not q.matches(rec) and "Bucket (MiB) = 0.001" in q.mismatch(rec)
    rec.scenario = {**rec.scenario, "ddp": {"bucket_cap_mb": 0.25}}
    assert q.matches(rec) and q.conditions() == " with Bucket (MiB) = 0.25"


def light_step(events: list, step: int) -> list:
    """The recording as a long run's step without values would have sent ``step``: its loss,
    buckets and timings, no gradients or parameters (tests/engine/test_engine.py checks the
    engine)."""
    out = []
    for e in events:
        if getattr(e, "step", None) == step:
            if isinstance(e, protocol.AveragedGrad | protocol.Params | protocol.Reference):
                continue
            if isinstance(e, protocol.LocalGrad):
                e = dataclasses.replace(e, grads={}, values=False)
        out.append(e)
    return out


@pytest.mark.parametrize(
    ("size", "theme"), [((1280, 720), "light"), ((760, 430), "light"), ((1341, 724), "projector")]
)
def test_a_step_without_values_keeps_its_timeline_and_says_why_the_norms_are_missing(
    size, theme
) -> None:
    rec = record(light_step(load_recording(TWO), 2))
    assert not rec.steps[2].has_values and rec.complete_prefix() == 3
    frame = frame_at(rec, 2, 3, w=size[0], h=size[1], theme=theme)
    assert keys(frame, ".bucket") and keys(frame, ".hidden")  # the timings are all there
    assert not keys(frame, "norm")
    assert not [t for t in frame.texts if "norm" in t.key]
    if size[1] >= 720:
        assert "10th step" in frame.all_text()
    assert_inside_and_apart(frame)
    if theme == "projector":
        assert frame.smallest_px() >= 24


def test_the_last_step_sets_what_overlap_hid_against_what_backward_lost() -> None:
    from ddp_viz.kinds.bucket_timeline.overlap import overlap_lines

    rec = rec_of(TWO)
    last = rec.steps_total() - 1
    wanted = overlap_lines(rec)
    assert len(wanted) == 2  # computed from the raw events in test_overlap
    text = " ".join(frame_at(rec, last, 3).all_text().split())
    for line in wanted:
        assert line in text
    assert "what backward lost" not in " ".join(frame_at(rec, last - 1, 3).all_text().split())
