"""The buckets timeline's pictures at their edges, from the raw events and by hand: each rank's
row when eight ranks take one row each (backward in its upper half, the buckets in its lower,
the black line where its last gradient was ready, only once the overlap is measured), the time
axis ending at the last thing that happened (a bucket that finished after backward returned
keeps inside the stage), a bar just launched keeps 2 px, the legend cut to two lines (the rest
in one, with an ellipsis) and the layouts' heading before step 2 has run."""

from __future__ import annotations

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import Font, estimate_width, wrap_lines
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import PHASES, record
from tests.conftest import load_recording
from tests.kinds.bucket_timeline.test_buckets_scene import TWO, frame_at
from tests.kinds.bucket_timeline.test_scene_edges import cut

EIGHT = "buckets-lesson-8-ranks.jsonl"


def timings(events: list, step: int) -> dict[int, object]:
    return {e.rank: e for e in events if e.kind == "timing" and e.step == step}


def shapes(frame, key: str):
    return next(s for s in frame.shapes if s.key == key)


@pytest.mark.parametrize("phase", [2, 3])
def test_eight_ranks_in_one_row_each_with_the_last_gradient_marked(phase: int) -> None:
    events = load_recording(EIGHT)
    theme = load_theme("projector")
    frame = frame_at(record(events), 1, phase, w=1280, h=800, theme="projector")
    assert "upper half: backward (grey)" in frame.all_text()  # one row a rank
    marks = [s for s in frame.shapes if s.kind == "line" and s.stroke == theme.text]
    if phase < 3:
        assert not marks
        return
    assert len(marks) == 8
    for r, t in timings(events, 1).items():
        bwd = shapes(frame, f"rank{r}.backward").box
        h = bwd.h / 0.2  # backward: 0.3–0.7 of the row's upper half
        y = bwd.y - 0.15 * h
        last = max(t.ready, key=lambda x: x[1])[0]
        x = shapes(frame, f"rank{r}.ready.{last}").points[0][0]
        mark = [m for m in marks if m.points[0][0] == pytest.approx(x)]
        assert len(mark) == 1, r
        (x0, y0), (x1, y1) = mark[0].points
        assert (x0, x1) == pytest.approx((x, x)) and (y0, y1) == pytest.approx((y, y + h))
        assert mark[0].width == 2
        # the buckets stacked in the row's lower half, 0.5–0.95 of it, b0 at the top
        n = len(t.buckets)
        assert n > 1
        for i in range(n):
            bar = shapes(frame, f"rank{r}.bucket{i}").box
            assert bar.y == pytest.approx(y + h * (0.5 + 0.45 * i / n))
            assert bar.h == pytest.approx(h * 0.45 * 0.9 / n)


@pytest.mark.parametrize(
    ("name", "theme"),
    [("accumulate-mlp-buckets.jsonl", "light"), ("accumulate-4-ranks.jsonl", "projector")],
)
def test_the_axis_ends_at_the_last_thing_that_happened(name: str, theme: str) -> None:
    """Accumulating micro-batches, the buckets all-reduce in the last one's backward, after
    the first one's (the backward span drawn) returned."""
    events = load_recording(name)
    w = 1280
    frame = frame_at(record(events), 1, 3, w=w, h=800, theme=theme)
    pad = 0.6 * load_theme(theme).font_px * min(1.4, max(1.0, min(w / 760, 800 / 520)))
    ts = timings(events, 1)
    b_end = max(t.spans["backward"][0][1] for t in ts.values())
    finished = max(b["finished"] for t in ts.values() for b in t.buckets)
    assert finished > b_end  # a bucket's all-reduce ran on after backward returned
    rights = {
        s.key: s.box.right
        for s in frame.shapes
        if ".bucket" in s.key or s.key.endswith(".backward")
    }
    assert max(rights.values()) == pytest.approx(w - pad)
    last = next(
        f"rank{r}.bucket{b['index']}"
        for r, t in ts.items()
        for b in t.buckets
        if b["finished"] == finished
    )
    assert rights[last] == pytest.approx(w - pad)


def test_a_bucket_just_launched_shows_as_a_2_px_bar() -> None:
    events = load_recording(TWO)
    ts = timings(events, 1)
    t0 = min(t.spans["backward"][0][0] for t in ts.values())
    t1 = max(
        [t.spans["backward"][0][1] for t in ts.values()]
        + [b["finished"] for t in ts.values() for b in t.buckets]
    )
    b = max(ts[0].buckets, key=lambda b: b["launched"])
    progress = (b["launched"] - t0) / (t1 - t0) + 1e-7
    frame = frame_at(record(events), 1, 2, progress, w=1280, h=720)
    bar = shapes(frame, f"rank0.bucket{b['index']}").box
    assert bar.w == 2.0


def test_the_legend_takes_two_lines_and_cuts_the_rest_with_an_ellipsis() -> None:
    w = 420
    frame = frame_at(record(load_recording(TWO)), 1, 3, w=w, h=1400)
    small, pad = Font(14 * 0.85), 14 * 0.6
    legend = (
        "black line: backward's last gradient · dark: hidden · grey: backward · "
        "tick: a gradient ready · b0, b1…: a bucket's all-reduce"
    )
    lines = wrap_lines(legend, small, w - 2 * pad, estimate_width)
    assert len(lines) >= 3
    texts = [t.text for t in frame.texts]
    i = texts.index(lines[0])
    rest = cut(" ".join(lines[1:]), small, w - 2 * pad)
    assert rest.endswith(" …") and texts[i + 1] == rest
    assert texts[i + 2] == "rank 0"


def test_eight_ranks_legend_says_what_each_half_of_a_row_holds() -> None:
    frame = frame_at(record(load_recording(EIGHT)), 1, 2, w=1280, h=800, theme="projector")
    legend = (
        "upper half: backward (grey), a tick as each gradient is ready · lower: "
        "each bucket's all-reduce, b0 at the top"
    )
    texts = [t.text for t in frame.texts]
    i = next(i for i, x in enumerate(texts) if x.startswith("upper half"))
    assert " ".join(texts[i : i + 2]) == legend


@pytest.mark.parametrize("w", [420, 560])  # at 560 "step 2 on: not …" fits
def test_before_step_2_has_run_its_layout_heading_says_not_yet(w: int) -> None:
    events = load_recording(TWO)
    end = max(i for i, e in enumerate(events) if getattr(e, "step", None) == 0)
    rec = record(events[: end + 1])
    assert len(rec.steps) == 1
    frame = frame_at(rec, 0, 0, w=w, h=900, theme="projector")
    pad = 24 * 0.6
    col_w = (w - 2 * pad - pad) / 2
    font = Font(24)  # step 2 is not the one shown: regular type
    said = [
        "from step 2 on, in all-reduce order: not run yet",
        "step 2 on, in all-reduce order: not run yet",
        "step 2 on: all-reduce order: not run yet",
        "step 2 on: not run yet",
    ]
    assert not [x for x in said if estimate_width(x, font) <= col_w]  # none fits whole
    head = cut(said[-1], font, col_w)
    assert head.startswith("step 2 on") and head.endswith(" …")
    right = [t for t in frame.texts if t.box.x > w / 2 and t.box.x < w - pad]
    assert [t.text for t in right] == [head]
    assert right[0].color == load_theme("projector").muted


def kib(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.3g} KiB"


def short(name: str) -> str:
    head, _, tail = name.rpartition(".")
    return f"{head}.{ {'weight': 'w', 'bias': 'b'}.get(tail, tail) }"


def test_while_rank_1_is_late_the_rebuilt_layout_keeps_rank_0s_sizes() -> None:
    events = load_recording(TWO)
    late = [
        e
        for e in events
        if not (getattr(e, "rank", None) == 1 and getattr(e, "step", None) == 1)
        and (getattr(e, "step", None) or 0) <= 1
    ]
    rec = record(late)
    assert sorted(rec.steps[1].ranks) == [0]
    frame = frame_at(rec, 1, 0, w=1280, h=720)
    texts = [" ".join(t.text.split()) for t in frame.texts]
    mine = timings(events, 1)[0]
    for b in sorted(mine.buckets, key=lambda b: b["index"]):
        names = " ".join(short(n) for n in b["params"])
        assert f"b{b['index']} {names} {kib(b['bytes'])}" in texts


def test_while_rank_0_is_late_step_2s_heading_is_cut_in_its_own_bold_type() -> None:
    events = load_recording(TWO)
    end = next(
        i
        for i, e in enumerate(events)
        if e.kind == "timing" and e.step == 1 and getattr(e, "rank", None) == 1
    )
    rec = record(events[: end + 1])
    assert sorted(rec.steps[1].ranks) == [1]
    w = 530  # "step 2 on: not" fits before " …" in regular type, not in bold
    frame = frame_at(rec, 1, 0, w=w, h=900, theme="projector")
    pad = 24 * 0.6
    col_w = (w - 2 * pad - pad) / 2
    bold = Font(24, bold=True)  # the step shown: its heading in bold
    head = cut("step 2 on: not run yet", bold, col_w)
    assert head != cut("step 2 on: not run yet", Font(24), col_w)
    right = [t for t in frame.texts if w / 2 < t.box.x < w - pad and t.font.bold]
    assert [t.text for t in right] == [head]


def test_two_buckets_in_one_lane_stack_as_thin_bars() -> None:
    events = load_recording("accumulate-mlp-buckets.jsonl")
    frame = frame_at(record(events), 1, 3, w=420, h=300, theme="projector")
    for r, t in timings(events, 1).items():
        assert len(t.buckets) == 2
        b0, b1 = (shapes(frame, f"rank{r}.bucket{i}").box for i in (0, 1))
        assert b0.h == pytest.approx(b1.h) and b0.bottom <= b1.y  # b0 above b1, apart


def test_a_run_of_two_buckets_lets_the_norms_go_down_to_two_rows() -> None:
    """The rows under the timeline give way down to what the layouts need: a heading and a
    line per bucket, at least a heading and two; here 2 buckets, so 6 tensors in 2 rows."""
    events = load_recording("accumulate-mlp-buckets.jsonl")
    frame = frame_at(record(events), 1, 3, w=560, h=300)
    names = list(next(e for e in events if e.kind == "local_grad").grads)
    rows = {t.box.y for t in frame.texts if t.text in {short(n) for n in names}}
    assert len(names) == 6 and len(rows) == 2


@pytest.mark.parametrize(("w", "h", "phase"), [(420, 360, 1), (420, 360, 0)])
def test_a_step_without_timings_keeps_its_caption(w: int, h: int, phase: int) -> None:
    events = load_recording(TWO)
    end = next(
        i
        for i, e in enumerate(events)
        if e.kind == "local_grad" and e.step == 1 and getattr(e, "rank", None) == 1
    )
    frame = frame_at(record(events[: end + 1]), 1, phase, w=w, h=h, theme="projector")
    text = load_lesson("buckets").phase_text[PHASES[phase]]
    lines = wrap_lines(text, Font(24), w - 2 * 24 * 0.6, estimate_width)
    assert lines[0] in [t.text for t in frame.texts]


def test_a_step_not_yet_sent_keeps_its_waiting_caption() -> None:
    events = load_recording(TWO)
    first = next(i for i, e in enumerate(events) if getattr(e, "step", None) is not None)
    frame = frame_at(record(events[:first]), 0, 1, w=560, h=320, theme="projector")
    assert "Waiting for the ranks to report" in frame.all_text()


@pytest.mark.parametrize(("w", "step"), [(420, 2), (600, 0)])
def test_the_axis_last_label_stays_inside_the_stage(w: int, step: int) -> None:
    frame = frame_at(record(load_recording(TWO)), step, 3, w=w, h=900)
    pad = 14 * 0.6
    labels = [t for t in frame.texts if t.text == "0" or t.text.endswith(" ms")]
    assert len(labels) >= 2 and len({t.box.y for t in labels}) == 1
    assert max(t.box.right for t in labels) == pytest.approx(w - pad)
    xs = [t.box.x for t in labels]
    assert xs == sorted(xs)


def test_step_1s_layout_cut_short_leaves_the_rebuilt_one_beside_it() -> None:
    """At 420 px on a projector step 1's single bucket wraps past the rows there are: its
    column is cut, and the rebuilt layout still stands beside it."""
    events = load_recording(TWO)
    w = 420
    frame = frame_at(record(events), 1, 0, w=w, h=500, theme="projector")
    pad = 24 * 0.6
    col_w = (w - 2 * pad - pad) / 2
    first = timings(events, 0)[0].buckets[0]
    names = " ".join(short(n) for n in first["params"])
    wrapped = wrap_lines(f"b0  {names}  {kib(first['bytes'])}", Font(24), col_w, estimate_width)
    left = [t.text for t in frame.texts if t.box.x == pad and t.box.y > frame.texts[0].box.y]
    shown = [x for x in wrapped if x in left]
    assert shown == wrapped[: len(shown)] and 0 < len(shown) < len(wrapped)  # cut
    right = [t for t in frame.texts if t.box.x == pytest.approx(pad + col_w + pad)]
    assert right and right[0].text.startswith("step 2 on") and right[0].font.bold
    assert any(t.text.startswith("b0 ") for t in right[1:])
