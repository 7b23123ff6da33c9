"""The watched page's buckets, from a real recording of 120 tensors in 7 buckets on 2 ranks
(rank 1 sleeps 20 ms before every step): each bucket's row of numbers, every rank's bars at its
recorded launch and finish on one clock, the axis's round ticks, and on a short or narrow stage
the rows that fit, the count of the others and the columns that go first. Expected values come
from the JSON lines, read here with ``json``."""

from __future__ import annotations

import json

import pytest

from ddp_viz.kinds.watched.scene_buckets import nice_step
from ddp_viz.model.assets import asset
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.lesson import load_lesson_folder
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording

MANY = "watched-120-tensors.jsonl"
THEME = load_theme("light")
LINES = [json.loads(ln) for ln in (DATA / MANY).read_text().splitlines() if ln.strip()]
TIMING = {(d["step"], d["rank"]): d for d in LINES if d["event"] == "timing"}


def frame(step: int, w: int = 1280, h: int = 800):  # type: ignore[no-untyped-def]
    rec = record(load_recording(MANY))
    lesson = load_lesson_folder(asset("watched"))
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    return stage_frame(rec, Cursor(step, 3), 1.0, ctx, lesson.scene)


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def buckets(step: int) -> dict[int, dict]:
    """index -> its params, bytes, and each rank's launch and finish."""
    out: dict[int, dict] = {}
    for r in (0, 1):
        for b in TIMING[(step, r)]["buckets"]:
            entry = out.setdefault(b["index"], {"params": b["params"], "bytes": b["bytes"]})
            entry.setdefault("launched", {})[r] = b["launched"]
            entry.setdefault("finished", {})[r] = b["finished"]
    return out


def round_step(span_ms: float, ticks: int = 4) -> float:
    """The smallest of 1, 2, 5 × 10^k at least span / ticks."""
    return min(
        m * 10.0**e for e in range(-5, 6) for m in (1, 2, 5) if m * 10.0**e >= span_ms / ticks
    )


@pytest.mark.parametrize("span", [0.0, 0.3, 3.9, 4.0, 4.4, 8.0, 8.4, 19.0, 20.4, 47.0, 333.0])
def test_the_tick_spacing_is_a_round_number_giving_about_four_ticks(span) -> None:
    assert nice_step(span) == pytest.approx(round_step(max(span, 1e-3)))
    assert nice_step(span, ticks=8) == pytest.approx(round_step(max(span, 1e-3), 8))


@pytest.mark.parametrize("step", range(4))
def test_each_bucket_row_says_its_size_tensors_all_reduce_and_wait(step) -> None:
    f = frame(step)
    got = buckets(step)
    assert len(got) == (1 if step == 0 else 7)  # DDP rebuilds its buckets after step 1
    tops = []
    for i, b in got.items():
        launched, finished = b["launched"], b["finished"]
        last = max(launched, key=lambda r: (launched[r], r))
        size = b["bytes"]
        want = [f"#{i}", f"{size} B" if size < 1024 else f"{size / 1024:.1f} KiB",
                str(len(b["params"])), ms(finished[last] - launched[last]),
                ms(max(launched.values()) - min(launched.values()))]  # fmt: skip
        cells = [f.text_with_key(f"bucket{i}.{c}") for c in range(5)]
        assert [c.text for c in cells] == want, (step, i)
        assert all(c.color == THEME.text for c in cells)
        tops.append(cells[0].box.y)
    assert tops == sorted(tops) and len(set(tops)) == len(got)  # one row a bucket, by index
    heads = [f.text_with_key(f"buckets.head.{c}").text for c in range(5)]
    assert heads == ["bucket", "size", "tensors", "all-reduce", "waited"]


@pytest.mark.parametrize("step", range(4))
def test_every_ranks_bars_sit_at_its_recorded_launch_and_finish(step) -> None:
    f = frame(step)
    got = buckets(step)
    axis = next(s for s in f.shapes if s.key == "buckets.axis")
    x0, chart = axis.box.x, axis.box.w
    t0 = min(t for b in got.values() for t in b["launched"].values())
    t1 = max(t for b in got.values() for t in b["finished"].values())
    at = lambda t: x0 + chart * (t - t0) / (t1 - t0)  # noqa: E731
    shapes = {s.key: s for s in f.shapes}
    for i, b in got.items():
        go = max(b["launched"].values())  # the all-reduce began when the last rank launched
        for r in (0, 1):
            a, end = b["launched"][r], b["finished"][r]
            solid = shapes[f"bucket.{r}.{i}"]
            assert solid.fill == THEME.rank_color(r) and solid.fill_alpha == 230
            assert solid.box.x == pytest.approx(at(max(a, min(go, end))), abs=1e-6)
            assert solid.box.right == pytest.approx(max(at(end), solid.box.x + 1.5), abs=1e-6)
            wait = shapes.get(f"bucket.{r}.{i}.wait")
            if a < go:
                assert wait is not None and wait.fill_alpha == 60
                assert wait.fill == THEME.rank_color(r)
                assert wait.box.x == pytest.approx(at(a), abs=1e-6)
                assert wait.box.right == pytest.approx(max(at(min(go, end)), at(a) + 1.5))
            else:
                assert wait is None
        # each rank's bars on a line of their own inside the bucket's row, rank 0's on top
        top0, top1 = shapes[f"bucket.0.{i}"].box, shapes[f"bucket.1.{i}"].box
        row = f.text_with_key(f"bucket{i}.0").box
        assert row.y < top0.y < top0.bottom <= top1.y < top1.bottom < row.y + row.h * 1.5


@pytest.mark.parametrize("step", range(4))
def test_the_axis_ticks_are_round_milliseconds_after_the_first_launch(step) -> None:
    f = frame(step)
    got = buckets(step)
    t0 = min(t for b in got.values() for t in b["launched"].values())
    t1 = max(t for b in got.values() for t in b["finished"].values())
    span_ms = (t1 - t0) * 1e3
    every = round_step(span_ms)
    n = int(span_ms / every + 1e-9) + 1
    labels = [f"{k * every:g}" for k in range(n)]
    labels[-1] += " ms"
    shown = {t.key: t.text for t in f.texts if t.key.startswith("buckets.tick.")}
    assert shown == {f"buckets.tick.{k}": labels[k] for k in range(n)}
    axis = next(s for s in f.shapes if s.key == "buckets.axis")
    ticks = [s.box.x for s in f.shapes if s.key == "buckets.tick"]
    want = [axis.box.x + axis.box.w * k * every / span_ms for k in range(n)]
    assert ticks == pytest.approx(want)


def test_a_short_stage_shows_the_rows_that_fit_and_counts_the_rest() -> None:
    f = frame(2, h=300)
    rows = {t.key.split(".")[0] for t in f.texts if t.key.startswith("bucket") and "." in t.key}
    rows -= {"buckets"}
    assert rows == {"bucket0", "bucket1"}
    assert "… and 5 more bucket(s): all of them in the Run tab (Ctrl+T)" in f.all_text()
    f = frame(2, w=560, h=360)
    assert "… and 4 more bucket(s): all of them in the Run tab (Ctrl+T)" in f.all_text()
    assert f.text_with_key("bucket2.0") is not None and f.text_with_key("bucket3.0") is None
    # no room for a row: where the buckets are, and no table at all
    f = frame(2, w=560, h=300)
    more = f.text_with_key("buckets.more")
    assert more.text == "7 bucket(s) this step: see the Run tab (Ctrl+T)"
    assert more.color == THEME.muted
    assert f.text_with_key("buckets.head.0") is None
    assert not [s for s in f.shapes if s.key.startswith("bucket")]


def test_a_tall_stage_shows_every_bucket_and_no_more_line() -> None:
    f = frame(2, h=420)
    assert all(f.text_with_key(f"bucket{i}.0") for i in range(7))
    assert "more bucket(s)" not in f.all_text()
    assert "buckets on one clock · faint: waiting for the last rank · solid: all-reduce" in (
        f.all_text()
    )


def test_a_narrow_stage_drops_the_tensor_count_then_the_size_and_then_the_bars() -> None:
    wide = frame(2, w=560)
    assert {t.key for t in wide.texts if t.key.startswith("bucket0.")} == {
        f"bucket0.{c}" for c in range(5)
    }
    assert any(s.key == "bucket.0.0" for s in wide.shapes)
    no_bars = frame(2, w=400)
    assert no_bars.text_with_key("bucket0.4").text == wide.text_with_key("bucket0.4").text
    assert not [s for s in no_bars.shapes if s.key.startswith(("bucket.", "buckets."))]
    narrow = frame(2, w=330)
    assert {t.key for t in narrow.texts if t.key.startswith("bucket0.")} == {
        "bucket0.0", "bucket0.1", "bucket0.3", "bucket0.4"
    }  # fmt: skip
    heads = [t.text for t in narrow.texts if t.key.startswith("buckets.head.")]
    assert heads == ["bucket", "size", "all-reduce", "waited"]
    # the numbers keep their column's key and their recorded text
    for c in (0, 1, 3, 4):
        assert narrow.text_with_key(f"bucket5.{c}").text == wide.text_with_key(f"bucket5.{c}").text


def test_the_table_reads_as_columns_with_the_chart_between() -> None:
    from ddp_viz.model.frame import Align

    f = frame(2)
    axis = next(s for s in f.shapes if s.key == "buckets.axis").box
    cols = {c: [f.text_with_key(f"bucket{i}.{c}") for i in range(7)] for c in range(5)}
    heads = {c: f.text_with_key(f"buckets.head.{c}") for c in range(5)}
    # the bucket's name on the left edge, every number on its column's right edge
    assert len({round(t.box.x, 3) for t in cols[0] + [heads[0]]}) == 1
    assert all(t.align == Align.LEFT for t in cols[0])
    for c in range(1, 5):
        assert len({round(t.box.right, 3) for t in cols[c] + [heads[c]]}) == 1, c
        assert all(t.align == Align.RIGHT for t in cols[c])
    right = lambda c: cols[c][0].box.right  # noqa: E731
    # left to right: bucket, size, tensors, the chart, the all-reduce, the wait
    assert cols[0][0].box.right < right(1) < right(2) < axis.x
    assert axis.right < cols[3][0].box.x and right(3) < cols[4][0].box.x
    assert right(4) <= 1280
    # every bar inside the chart's span
    for s in f.shapes:
        if s.key.startswith("bucket."):
            assert axis.x - 0.01 <= s.box.x and s.box.right <= axis.right + 1.6, s.key
