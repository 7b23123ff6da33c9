"""The buckets stage's gradient norms at their edges, from the raw events and by hand: a step
whose values were not recorded (which step, in as many lines as fit), rank 0 still to report
(no average yet, the one rank's bars as tall as the room for them), an average as wide as
"1.235e+04" (its value stays inside the stage) or cancelled to 0 (a 1-pixel bar, as is a local
norm 100,000 times smaller than the largest), and the widths where the average's values, and
then the columns, give way (a pixel either side), with the list cut under one tensor and the
count of the rest right under it."""

from __future__ import annotations

import dataclasses
from itertools import pairwise

import pytest

from ddp_viz.model import protocol
from ddp_viz.model.frame import Font, estimate_width, fmt
from ddp_viz.model.reference import values_policy
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import record
from tests.conftest import load_recording
from tests.frames import assert_inside_and_apart
from tests.kinds.bucket_timeline.test_buckets_scene import TWO, frame_at, light_step
from tests.kinds.bucket_timeline.test_norms_panel import raw_norms

PROJECTOR = load_theme("projector")
LIGHT = load_theme("light")


def short(name: str) -> str:
    head, _, tail = name.rpartition(".")
    return f"{head}.{ {'weight': 'w', 'bias': 'b'}.get(tail, tail) }"


def names_of(events: list) -> list[str]:
    return list(next(e for e in events if e.kind == "local_grad").grads)


def bars(frame) -> dict:
    return {s.key: s.box for s in frame.shapes if "norm." in s.key}


# --- a step without values ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("size", "theme", "shown"),
    [
        # the rows under the timeline at their floor, a heading and two: 2 of 7 lines
        ((420, 500), "projector", 2),
        # three lines, two rows: the second ends exactly at the panel's bottom
        ((420, 300), "light", 2),
        # four rows and four lines: the last one ends exactly at the bottom and is drawn
        ((760, 900), "projector", 4),
        ((1280, 720), "light", 2),
    ],
)
def test_a_step_without_values_says_which_in_the_lines_that_fit(size, theme, shown) -> None:
    rec = record(light_step(load_recording(TWO), 2))
    frame = frame_at(rec, 2, 3, w=size[0], h=size[1], theme=theme)
    t = load_theme(theme)
    lines = [x for x in frame.texts if x.key == "values.policy"]
    assert len(lines) == shown
    why = f"Not recorded at step 3. {values_policy()}"  # the third step, 0-based 2
    said = " ".join(x.text for x in lines)
    assert why.startswith(said) and said.startswith("Not recorded at step 3. ")
    if shown == 4 or size == (1280, 720):
        assert said == why  # all of it
    for x in lines:
        assert x.color == t.muted
    # one line under another, under the heading, left-aligned with it
    head = frame.text_with_key("grads.head")
    ys = [head.box.y] + [x.box.y for x in lines]
    lh = head.font.px * 1.3
    assert [b - a for a, b in pairwise(ys)] == pytest.approx([lh] * shown)
    assert {x.box.x for x in lines} == {head.box.x}
    assert_inside_and_apart(frame)


# --- rank 0 not reported yet ----------------------------------------------------------------
def rank_one_first(events: list, step: int) -> list:
    """The events as a live window had them when rank 1 had sent ``step`` (its timing last)
    and rank 0 not yet: the recording's own order."""
    end = next(
        i
        for i, e in enumerate(events)
        if e.kind == "timing" and getattr(e, "step", None) == step and getattr(e, "rank", None) == 1
    )
    early = events[:end]
    mine = [(getattr(e, "rank", None), getattr(e, "step", None)) for e in early]
    assert (0, step) not in mine
    return events[: end + 1]


@pytest.mark.parametrize(("w", "h"), [(1280, 720), (560, 480)])
def test_while_rank_0_is_late_its_ranks_bars_show_and_no_average(w: int, h: int) -> None:
    events = load_recording(TWO)
    names = names_of(events)
    local, _ = raw_norms(TWO, 1)
    frame = frame_at(record(rank_one_first(events, 1)), 1, 3, w=w, h=h)
    b = bars(frame)
    assert set(b) == {f"rank1.localnorm.{n}" for n in names}  # no rank 0, no average
    assert not [t for t in frame.texts if t.key.startswith("avgnorm.")]
    full = max(b.values(), key=lambda r: r.w).w
    ys = [b[f"rank1.localnorm.{n}"].y for n in names]
    lh = min(abs(a - c) for a, c in pairwise(ys) if abs(a - c) > 1)  # one row to the next
    for n in names:
        box = b[f"rank1.localnorm.{n}"]
        # each row to its own largest: the one bar is as long as every other
        assert local[1][n] > 0 and box.w == pytest.approx(full)
        # the one rank's bar takes all the room the thin bars have: 0.45 of a row, 70% of it
        assert box.h == pytest.approx(lh * 0.45 * 0.7)
    assert_inside_and_apart(frame)


# --- an average wide in digits, or cancelled to 0 -------------------------------------------
def moved_average(events: list, step: int, scale: dict[str, float], ranks=(0,)) -> list:
    """The recording with ``ranks``' averaged norm of each tensor in ``scale`` multiplied."""
    out = []
    for e in events:
        if isinstance(e, protocol.AveragedGrad) and e.step == step and e.rank in ranks:
            grads = dict(e.grads)
            for n, k in scale.items():
                grads[n] = {**grads[n], "norm": grads[n]["norm"] * k}
            e = dataclasses.replace(e, grads=grads)
        out.append(e)
    return out


@pytest.mark.parametrize(("w", "h"), [(1280, 720), (700, 900)])
def test_a_wide_average_stays_inside_and_a_tiny_bar_keeps_one_pixel(w: int, h: int) -> None:
    events = load_recording(TWO)
    names = names_of(events)
    big, gone = names[0], names[3]
    local, avg = raw_norms(TWO, 1)
    # rank 0's average of one tensor 100,000 times the others' ("1.318e+04"-wide), and the
    # ranks' gradients of another cancelling to an average of 0 on every rank
    events = moved_average(events, 1, {big: 1e5})
    events = moved_average(events, 1, {gone: 0.0}, ranks=(0, 1))
    frame = frame_at(record(events), 1, 3, w=w, h=h)
    pad = frame.text_with_key("grads.head").box.x
    wide = frame.text_with_key(f"avgnorm.{big}")
    assert wide.text == fmt(avg[big] * 1e5) and len(wide.text) > len("0.00000")
    assert frame.text_with_key(f"avgnorm.{gone}").text == "0"
    b = bars(frame)
    for n in names:
        value = frame.text_with_key(f"avgnorm.{n}")
        assert value.box.right <= w - pad + 1e-6, n  # inside the stage's margin
        assert b[f"avgnorm.{n}"].right < value.box.x  # after its bar
    # the largest bar on the row is the average; the locals, 1e-5 of it, keep one pixel
    assert b[f"avgnorm.{big}"].w > 100
    assert b[f"rank0.localnorm.{big}"].w == b[f"rank1.localnorm.{big}"].w == 1.0
    # an average of 0 keeps a one-pixel bar too, under its ranks' full-length ones
    assert b[f"avgnorm.{gone}"].w == 1.0
    assert max(b[f"rank{r}.localnorm.{gone}"].w for r in (0, 1)) > 100
    for r in (0, 1):
        want = b[f"rank{1 - r}.localnorm.{gone}"].w * local[r][gone] / local[1 - r][gone]
        assert b[f"rank{r}.localnorm.{gone}"].w == pytest.approx(want, rel=1e-9)
    assert_inside_and_apart(frame)


# --- the widths where the values, then the columns, give way --------------------------------
PX = 24.0  # a projector's small type at its floor (every stage under 760 px wide)
PAD = 24 * 0.6  # the stage's margin: 0.6 of the theme's 24 px


def name_w(names: list[str]) -> float:
    return max(estimate_width(short(n), Font(PX)) for n in names) + PAD * 0.5


def value_w(avg: dict[str, float]) -> float:
    texts = ["0.00000", *(fmt(v) for v in avg.values())]
    return max(estimate_width(x, Font(PX)) for x in texts) + PAD * 0.5


def values_edge() -> float:
    """The stage width from which step 2's averages are written, in 2 columns of 4 tensors
    (620 px tall): each column a name, the widest value and 2.5 em of bar, 0.5 pad between."""
    _, avg = raw_norms(TWO, 1)
    col = name_w(list(avg)) + value_w(avg) + 2.5 * PX
    return 2 * col + PAD * 0.5 + 2 * PAD


def columns_edge() -> float:
    """The width from which step 3's tensors all stand in 4 columns of 2 (620 px tall): each
    a name and 2.5 em of bar, 0.5 pad between them."""
    _, avg = raw_norms(TWO, 2)
    return 4 * (name_w(list(avg)) + 2.5 * PX) + 3 * PAD * 0.5 + 2 * PAD


def test_the_edges_are_inside_the_stage_sizes_the_window_allows() -> None:
    assert 420 < values_edge() < 760 and 420 < columns_edge() < 760


@pytest.mark.parametrize("side", [-0.5, 0.0, 0.5])
def test_the_averages_values_are_written_from_the_width_that_holds_them(side: float) -> None:
    rec = record(load_recording(TWO))
    names = [p.name for p in rec.params]
    w = values_edge() + side
    frame = frame_at(rec, 1, 3, w=w, h=620, theme="projector")
    b = bars(frame)
    assert {k for k in b if k.startswith("avgnorm.")} == {f"avgnorm.{n}" for n in names}
    xs = sorted({round(b[f"avgnorm.{n}"].x, 6) for n in names})
    assert len(xs) == 2  # two columns
    values = [t for t in frame.texts if t.key.startswith("avgnorm.")]
    assert len(values) == (len(names) if side >= 0 else 0)
    assert not [t for t in frame.texts if t.text.startswith("… ")]
    # without values each row's longest bar ends a quarter pad inside its column
    col_w = (w - 2 * PAD - PAD * 0.5) / 2
    for n in names:
        row = [box for k, box in b.items() if k.endswith(f"norm.{n}")]
        end = max(box.right for box in row)
        column = min(box.x for box in row) - name_w(names)  # the name's left
        if side < 0:
            assert end == pytest.approx(column + col_w - PAD * 0.25)
        else:
            value = frame.text_with_key(f"avgnorm.{n}")
            assert value.box.x == pytest.approx(end + PAD * 0.5)
            assert value.box.right <= column + col_w + 1e-6
    assert_inside_and_apart(frame)


@pytest.mark.parametrize("side", [-0.5, 0.0, 0.5])
def test_below_the_columns_width_one_tensor_shows_and_the_rest_are_counted(side: float) -> None:
    rec = record(load_recording(TWO))
    names = [p.name for p in rec.params]
    _, avg = raw_norms(TWO, 2)
    w = columns_edge() + side
    frame = frame_at(rec, 2, 3, w=w, h=620, theme="projector")
    b = bars(frame)
    more = [t for t in frame.texts if t.text.startswith("… ")]
    head = frame.text_with_key("grads.head")
    if side >= 0:  # every tensor, 4 columns, no values
        assert {k for k in b if k.startswith("avgnorm.")} == {f"avgnorm.{n}" for n in names}
        assert len({round(b[f"avgnorm.{n}"].x, 6) for n in names}) == 4
        assert not more and not [t for t in frame.texts if t.key.startswith("avgnorm.")]
    else:  # the first tensor across the stage with its value, and the count of the other 7
        first = names[0]
        assert {k for k in b if k.startswith("avgnorm.")} == {f"avgnorm.{first}"}
        value = frame.text_with_key(f"avgnorm.{first}")
        assert value.text == fmt(avg[first])
        # one column as wide as the stage: the value ends inside its right margin, past the middle
        assert value.box.x > w / 2 and value.box.right <= w - PAD + 1e-6
        row = [box for k, box in b.items() if k.endswith(f"norm.{first}")]
        assert value.box.x == pytest.approx(max(box.right for box in row) + PAD * 0.5)
        assert [t.text for t in more] == [f"… {len(names) - 1} more"]
        lh = PX * 1.3
        assert value.box.y == pytest.approx(head.box.y + lh)
        assert more[0].box.y == pytest.approx(head.box.y + 2 * lh)  # right under the tensor
        assert more[0].box.x == head.box.x == PAD
        assert more[0].color == PROJECTOR.muted
    assert_inside_and_apart(frame)
