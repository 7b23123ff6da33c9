"""The sharded lanes' small rules at their edges, by hand: a size of exactly 10,000 bytes is
said in kB, lanes that exactly fill their room keep their height and a sub-row under a pixel
is kept, ticks exactly a label apart (and a phase under a millisecond), a call that starts as
the last one ended shares its sub-row, and a merged lane's words: how many calls of which ops
with their first and last numbers, after the last bar when they fit exactly, else before the
first (a lone call's too), read from the raw events."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from ddp_viz.kinds.sharded.model import KIND
from ddp_viz.kinds.sharded.scene import ShardedBuilder
from ddp_viz.kinds.sharded.scene_lanes import Span, fit_unit, human, lane_label, nice_step, sub_rows
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import Align, Rect, estimate_width
from ddp_viz.model.scenes import SceneContext
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording
from tests.kinds.sharded.words import SHORT

NAME = "sharded-4-ranks.jsonl"


def test_ten_thousand_bytes_are_said_in_kilobytes() -> None:
    assert human(9_999) == "9,999 B"
    assert human(10_000) == "10.0 kB"
    assert human(10_001) == "10.0 kB"


def test_lanes_that_exactly_fill_their_room_keep_their_height() -> None:
    # three lanes of at least 20 px in exactly 60 px: each row as tall as allowed (10 px)
    assert fit_unit(60.0, [1, 1, 1], 20.0, 10.0) == pytest.approx(10.0, abs=1e-6)
    assert fit_unit(59.0, [1, 1, 1], 20.0, 10.0) == 0.0  # a pixel short: no lanes
    # three lanes of 10 sub-rows in 15 px: half a pixel a sub-row, not one
    assert fit_unit(15.0, [10, 10, 10], 0.1, 10.0) == pytest.approx(0.5, abs=1e-6)
    assert fit_unit(10.0, [], 5.0, 3.0) == pytest.approx(3.0, abs=1e-6)  # no lanes at all


def test_ticks_exactly_a_label_apart_and_under_a_millisecond() -> None:
    # 10 ms over 100 px: 2 ms ticks are 20 px apart, exactly a 20 px label
    assert nice_step(10.0, 100.0, 20.0) == pytest.approx(2.0)
    # half a millisecond over 100 px with 30 px labels: 0.2 ms ticks (60 px apart)
    assert nice_step(0.5, 100.0, 30.0) == pytest.approx(0.2)


def test_a_call_that_starts_as_the_last_ended_shares_its_sub_row() -> None:
    c = SimpleNamespace
    assert sub_rows([c(start=0.0, end=1.0), c(start=1.0, end=2.0)]) == [0, 0]
    assert sub_rows([c(start=0.0, end=1.0), c(start=0.5, end=2.0)]) == [0, 1]
    assert sub_rows([c(start=0.0, end=1.0), c(start=0.5, end=2.0), c(start=1.0, end=3.0)]) == [
        0,
        1,
        0,
    ]


def _raw(rank: int, way: str, phase: str) -> list[dict]:
    lines = (DATA / NAME).read_text().splitlines()
    return sorted(
        (
            d
            for d in map(json.loads, filter(None, lines))
            if d["event"] == "sharded_collective"
            and (d["way"], d["step"], d["rank"], d["phase"]) == (way, 1, rank, phase)
        ),
        key=lambda d: d["seq"],
    )


def _builder():
    lesson = load_lesson("sharded")
    ctx = SceneContext(1280, 800, load_theme("light"), lesson.phase_text, estimate_width)
    rec = record(load_recording(NAME))
    b = ShardedBuilder(rec, Cursor(1, 2), 1.0, ctx)
    calls = [c for c in rec.parts[KIND].calls("fsdp", 1, 3) if c.phase == "backward"]
    return b, calls


def _words(raw: list[dict], numbers: bool = True) -> str:
    ops = "/".join(sorted({SHORT[d["op"]] for d in raw}))
    first, last = raw[0]["seq"] + 1, raw[-1]["seq"] + 1
    n = f"#{first}–{last}" if len(raw) > 1 else f"#{first}"
    return f"{len(raw)} × {ops} ({n})" if numbers else f"{len(raw)} × {ops}"


def _span(calls) -> Span:
    return Span(100.0, 600.0, min(c.start for c in calls), max(c.end for c in calls))


def test_a_merged_lanes_words_name_its_ops_and_first_and_last_numbers() -> None:
    b, calls = _builder()
    raw = _raw(3, "fsdp", "backward")
    assert {d["op"] for d in raw} == {"all_gather", "reduce_scatter"} and len(raw) > 2
    span, lane = _span(calls), Rect(100.0, 300.0, 600.0, 30.0)
    lane_label(b, span, lane, calls, 10_000.0)
    said = b.frame.text_with_key("lane.label.3")
    assert (
        said.text
        == _words(raw)
        == f"{len(raw)} × AG/RS (#{raw[0]['seq'] + 1}–{raw[-1]['seq'] + 1})"
    )
    end = 100.0 + 600.0 * (max(d["end"] for d in raw) - span.t0) / (span.t1 - span.t0)
    assert said.box.x == pytest.approx(end + b.small.px * 0.3)
    b, calls = _builder()  # the first two calls: both numbers
    lane_label(b, _span(calls), lane, calls[:2], 10_000.0)
    assert b.frame.text_with_key("lane.label.3").text == _words(raw[:2])


def test_the_words_go_after_the_last_bar_when_they_fit_exactly() -> None:
    b, calls = _builder()
    raw = _raw(3, "fsdp", "backward")
    span, lane = _span(calls), Rect(100.0, 300.0, 600.0, 30.0)
    px = b.small.px
    text = _words(raw)
    w = estimate_width(text, b.small)
    end = span.at(span.t1) + px * 0.3
    lane_label(b, span, lane, calls, end + w)  # exactly the room after the last bar
    said = b.frame.text_with_key("lane.label.3")
    assert (said.text, said.box.x) == (text, pytest.approx(end))
    b, _ = _builder()  # a pixel less: the words without the numbers
    lane_label(b, span, lane, calls, end + w - 1.0)
    said = b.frame.text_with_key("lane.label.3")
    assert (said.text, said.box.x) == (_words(raw, numbers=False), pytest.approx(end))


def test_a_lone_calls_words_before_its_bar_name_its_rank() -> None:
    b, calls = _builder()
    raw = _raw(3, "fsdp", "backward")
    span, lane = _span(calls), Rect(100.0, 300.0, 600.0, 30.0)
    lane_label(b, span, lane, calls[-1:], 0.0)  # the last call: room only before it
    said = b.frame.text_with_key("lane.label.3")
    assert said.text == f"1 × {SHORT[raw[-1]['op']]} (#{raw[-1]['seq'] + 1})"
    assert said.align == Align.RIGHT and said.box.right <= span.at(calls[-1].start)
