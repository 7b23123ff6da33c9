"""The sharded lanes' rules, each on its own (pure): how a byte count is written, which way's
calls the lanes show (the first with the most), which sub-row a call takes when calls overlap,
how tall a lane's sub-row may be, the axis's tick step, a bar's words; and at 8 ranks, where
ZeRO-1's broadcasts share one row a lane, the lane's words counted from the raw events."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from ddp_viz.kinds.sharded.events import ShardedCollective
from ddp_viz.kinds.sharded.model import ShardedRecord, Way
from ddp_viz.kinds.sharded.scene_lanes import (
    bar_texts,
    busiest_way,
    fit_unit,
    human,
    nice_step,
    sub_rows,
)
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording
from tests.kinds.sharded.words import SHORT


@pytest.mark.parametrize(
    ("n", "said"),
    [(0, "0 B"), (32, "32 B"), (9_999, "9,999 B"), (10_000, "10.0 kB"), (23_072, "23.1 kB")],
)
def test_a_byte_count_is_bytes_below_10_kb_and_kilobytes_from_it(n, said) -> None:
    assert human(n) == said


def _call(way: str, rank: int, seq: int, start=0.0, end=1.0, op="all_gather", **kw):
    fields = {"layer": "inp", "tensors": [], "bytes_in": 4, "bytes_out": 4} | kw
    return ShardedCollective(
        run=1, rank=rank, way=way, step=0, seq=seq, op=op, phase="backward", start=start,
        end=end, **fields,
    )  # fmt: skip


def _builder(calls, world=3, phase="backward"):
    part = ShardedRecord()
    for c in calls:
        part.apply(c)
    return SimpleNamespace(part=part, world=world, phase_word=phase)


def test_the_lanes_show_the_first_way_with_the_most_calls_of_the_phase() -> None:
    # DDP and ZeRO-1 both issue 3 (over the ranks), FSDP2 2: DDP, the first of the most
    calls = [_call("ddp", 0, 0), _call("ddp", 2, 0), _call("ddp", 2, 1)]
    calls += [_call("zero", 1, 0), _call("zero", 1, 1), _call("zero", 2, 0)]
    calls += [_call("fsdp", 0, 0), _call("fsdp", 1, 0)]
    way, mine = busiest_way(_builder(calls), 0)  # type: ignore[arg-type]
    assert way is Way.DDP
    assert {r: [c.seq for c in v] for r, v in mine.items()} == {0: [0], 1: [], 2: [0, 1]}
    # one more FSDP2 call on the last rank makes it the busiest
    way, mine = busiest_way(_builder([*calls, _call("fsdp", 2, 0), _call("fsdp", 2, 1)]), 0)  # type: ignore[arg-type]
    assert way is Way.FSDP and [c.seq for c in mine[2]] == [0, 1]
    # calls of another phase do not count
    way, mine = busiest_way(_builder(calls, phase="forward"), 0)  # type: ignore[arg-type]
    assert way is Way.FSDP and mine == {}


def test_a_call_takes_the_first_sub_row_free_when_it_starts() -> None:
    calls = [
        _call("zero", 0, 0, 0.0, 2.0),
        _call("zero", 0, 1, 1.0, 3.0),  # row 0 is busy until 2
        _call("zero", 0, 2, 2.0, 4.0),  # row 0 ended just as it starts
        _call("zero", 0, 3, 2.5, 5.0),  # rows 0 and 1 busy: a third
        _call("zero", 0, 4, 3.0, 6.0),  # row 1 free again at 3
    ]
    assert sub_rows(calls) == [0, 1, 0, 2, 1]
    assert sub_rows([]) == []


def test_a_lanes_sub_row_is_as_tall_as_the_room_allows() -> None:
    # three lanes of 1, 1 and 2 sub-rows above a floor of 10: 4 units fill 100
    assert fit_unit(100, [1, 1, 2], 10, 50) == pytest.approx(25, abs=1e-6)
    assert fit_unit(100, [1, 1, 2], 10, 20) == pytest.approx(20, abs=1e-6)  # at most `most`
    # 30 is just the floors: a lane of 2 sub-rows fits them at 5 each
    assert fit_unit(30, [1, 1, 2], 10, 50) == pytest.approx(5, abs=1e-6)
    assert fit_unit(29.9, [1, 1, 2], 10, 50) == 0.0  # not even the floors
    assert fit_unit(60, [3], 10, 50) == pytest.approx(20, abs=1e-6)
    # thinner than a pixel: 30 sub-rows in 15 px, above a floor of half a pixel
    assert fit_unit(15, [30], 0.5, 50) == pytest.approx(0.5, abs=1e-6)


@pytest.mark.parametrize(
    ("span", "width", "label", "step"),
    [
        (100, 500, 40, 10),  # at least 8 ms apart
        (100, 1000, 40, 5),
        (100, 1000, 20, 2),
        (100, 1000, 10, 1),  # exactly 10 px a millisecond: 1 ms
        (100, 1000, 10.01, 2),
        (1, 100, 45, 0.5),
        (0.01, 1000, 40, 0.001),  # no finer than a microsecond
        (3000, 600, 50, 500),
    ],
)
def test_the_axis_ticks_every_1_2_or_5_times_a_power_of_10_ms(span, width, label, step) -> None:
    assert nice_step(span, width, label) == pytest.approx(step)


def test_a_bars_words_longest_first() -> None:
    bcast = _call("zero", 0, 2, op="broadcast", tensors=["inp.weight"], layer="inp")
    assert bar_texts(bcast) == ["#3 bcast inp.weight", "#3 bcast inp.w", "#3 bcast", "#3"]
    bias = _call("zero", 0, 5, op="broadcast", tensors=["hidden.bias"], layer="hidden")
    assert bar_texts(bias)[:2] == ["#6 bcast hidden.bias", "#6 bcast hidden.b"]
    gather = _call("fsdp", 0, 4, layer="hidden")
    assert bar_texts(gather) == ["#5 AG hidden", "#5 AG hid", "#5 AG", "#5"]
    bucket = _call("ddp", 0, 0, op="all_reduce", layer="", tensors=["out.bias", "out.weight"])
    assert bar_texts(bucket) == ["#1 AR bucket", "#1 AR buc", "#1 AR", "#1"]
    bare = _call("zero", 0, 1, op="broadcast", tensors=[], layer="out")
    assert bar_texts(bare) == ["#2 bcast out", "#2 bcast out", "#2 bcast", "#2"]
    scatter = _call("fsdp", 0, 8, op="reduce_scatter", layer="inp")
    assert bar_texts(scatter)[0] == "#9 RS inp"


def _broadcasts(step: int) -> dict[int, list[dict]]:
    lines = (DATA / "sharded-8-ranks.jsonl").read_text().splitlines()
    out: dict[int, list[dict]] = {}
    for d in map(json.loads, lines):
        if d["event"] == "sharded_collective" and (d["step"], d["phase"]) == (step, "step"):
            out.setdefault(d["rank"], []).append(d)
    return {r: sorted(v, key=lambda d: d["seq"]) for r, v in out.items()}


@pytest.mark.parametrize("progress", [0.1, 0.5, 1.0])
def test_at_8_ranks_a_merged_lane_says_how_many_broadcasts_and_their_numbers(progress) -> None:
    info = load_lesson("sharded")
    ctx = SceneContext(889, 495, load_theme("projector"), info.phase_text, estimate_width)
    rec = record(load_recording("sharded-8-ranks.jsonl"))
    calls = _broadcasts(1)
    frame = stage_frame(rec, Cursor(1, 3), progress, ctx, info.scene)
    labels = {t.key: t for t in frame.texts if t.key.startswith("lane.label.")}
    assert labels, "ZeRO-1's overlapping broadcasts share a row on some lane"
    for key, t in labels.items():
        rank = int(key.rsplit(".", 1)[1])
        shown = calls[rank][: round(progress * len(calls[rank]) + 0.499)]
        n = f"#{shown[0]['seq'] + 1}" + (f"–{shown[-1]['seq'] + 1}" if len(shown) > 1 else "")
        assert t.text in (f"{len(shown)} × bcast ({n})", f"{len(shown)} × bcast"), t.text
        bars = [s for s in frame.shapes if re.fullmatch(rf"lane\.{rank}\.\d+", s.key)]
        assert len(bars) == len(shown)
        assert all(s.fill_alpha == 70 for s in bars)  # see-through: overlaps show darker
        lane = (min(s.box.y for s in bars), max(s.box.bottom for s in bars))
        assert lane[0] - 1 <= t.box.cy <= lane[1] + 1  # on its lane
        right = max(s.box.right for s in bars)
        left = min(s.box.x for s in bars)
        assert t.box.x >= right or t.box.right <= left  # after its last bar or before its first


def _size(n: int) -> str:
    return f"{n:,} B" if n < 10_000 else f"{n / 1000:.1f} kB"


def _phase_calls(name: str, step: int, phase: str) -> dict[str, dict[int, list[dict]]]:
    out: dict[str, dict[int, list[dict]]] = {}
    for d in map(json.loads, (DATA / name).read_text().splitlines()):
        if d["event"] == "sharded_collective" and (d["step"], d["phase"]) == (step, phase):
            out.setdefault(d["way"], {}).setdefault(d["rank"], []).append(d)
    return out


@pytest.mark.parametrize(
    ("name", "stage", "phase"),
    [
        ("sharded-8-ranks.jsonl", ("projector", 889, 495), 2),
        ("sharded-8-ranks.jsonl", ("projector", 1280, 472), 3),
        ("sharded-8-ranks.jsonl", ("projector", 600, 600), 2),
        ("sharded-4-ranks.jsonl", ("projector", 889, 460), 2),
        ("sharded-4-ranks.jsonl", ("projector", 889, 460), 1),
        ("sharded-8-ranks.jsonl", ("projector", 450, 600), 2),
    ],
)
def test_the_line_for_the_ways_the_lanes_leave_out_names_rank_1s_calls(name, stage, phase) -> None:
    """When the table gives way, one line names the other ways' calls of rank 1 (with their
    bytes when they fit) and the ways with none; the lanes show the way with the most calls."""
    theme, w, h = stage
    info = load_lesson("sharded")
    ctx = SceneContext(w, h, load_theme(theme), info.phase_text, estimate_width)
    rec = record(load_recording(name))
    words = ("holds", "forward", "backward", "step")
    calls = _phase_calls(name, 1, words[phase])
    labels = {"ddp": "DDP", "zero": "DDP + ZeRO-1", "fsdp": "FSDP2"}
    counts = {w: sum(len(v) for v in calls.get(w, {}).values()) for w in labels}
    lanes = max(labels, key=lambda w: counts[w])
    frame = stage_frame(rec, Cursor(1, phase), 1.0, ctx, info.scene)
    said = frame.text_with_key("calls.others")
    if said is None:  # the table itself (FSDP2's three gathers fit), or not even the line
        head = frame.text_with_key("calls.head")
        assert (head is not None) == ((name, phase) == ("sharded-4-ranks.jsonl", 1)), w
        assert head is not None or w == 450
        return
    assert not [t for t in frame.texts if t.key.startswith("call.") and t.key[5:9] != "zero"]
    assert frame.text_with_key("lanes.title").text.startswith(labels[lanes])
    texts = []
    for sizes in (True, False):
        parts = []
        for way in (w for w in labels if w != lanes):
            mine = sorted(calls.get(way, {}).get(1, []), key=lambda d: d["seq"])
            if mine:
                each = [
                    f"#{d['seq'] + 1} {SHORT[d['op']]}"
                    + (f" {_size(max(d['bytes_in'], d['bytes_out']))}" if sizes else "")
                    for d in mine
                ]
                parts.append(f"{labels[way]}: {', '.join(each)}")
        idle = [labels[w] for w in labels if w != lanes and not calls.get(w, {}).get(1)]
        if idle:
            parts.append(f"no collective: {', '.join(idle)}")
        texts.append("; ".join(parts))
    assert said.text in texts, (said.text, texts)
    assert said.color == load_theme(theme).muted
    if w >= 889:
        assert said.text == texts[0]  # with the bytes, where they fit
