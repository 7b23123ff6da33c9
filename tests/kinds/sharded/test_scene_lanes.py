"""The sharded lanes as a reader reads them (pure, from real recordings): each bar in its op's
colour (the legend's), solid in a lane of its own and see-through where a rank's overlapping
calls share a row; inside its lane with the same margin above and below; its words on it;
a lane per rank, ruled off, evenly spaced; the axis under them; and on a stage too short for a
label a lane, every rank's bars still in their own lane, unlabelled."""

from __future__ import annotations

import itertools
import json
import re

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import Align, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording
from tests.kinds.sharded.words import PHASES, SHORT

INK = {"all_gather": "accent", "reduce_scatter": "bad", "all_reduce": "ok", "broadcast": "text"}


def _frame(name, theme, w, h, phase, step=1, progress=1.0):
    info = load_lesson("sharded")
    ctx = SceneContext(w, h, load_theme(theme), info.phase_text, estimate_width)
    return stage_frame(record(load_recording(name)), Cursor(step, phase), progress, ctx, info.scene)


def _calls(name: str, step: int, phase: str, way: str) -> dict[tuple[int, int], dict]:
    """The raw calls of one way in one phase of a step, by (rank, place in the step)."""
    lines = (DATA / name).read_text().splitlines()
    return {
        (d["rank"], d["seq"]): d
        for d in map(json.loads, lines)
        if d["event"] == "sharded_collective"
        and (d["step"], d["phase"], d["way"]) == (step, phase, way)
    }


def _separators(f, theme) -> list:
    """The lanes' rules: the grid lines that start where the lanes' time axis starts."""
    axis = next(s for s in f.shapes if s.kind == "line" and s.stroke == theme.muted)
    x0 = axis.points[0][0]
    return [
        s
        for s in f.shapes
        if s.kind == "line" and s.stroke == theme.grid and s.points[0][0] == pytest.approx(x0)
    ]


@pytest.mark.parametrize("phase", [1, 2])
def test_each_bar_in_its_ops_colour_solid_and_inside_its_lane(phase) -> None:
    name, theme = "sharded-4-ranks.jsonl", load_theme("light")
    f = _frame(name, "light", 1280, 800, phase)
    calls = _calls(name, 1, PHASES[phase], "fsdp")
    rules = _separators(f, theme)
    assert len(rules) == 4
    ys = [s.points[0][1] for s in rules]
    assert all(s.points[1][1] == y for s, y in zip(rules, ys, strict=True))  # level
    pitch = ys[1] - ys[0]
    assert [b - a for a, b in itertools.pairwise(ys)] == [pytest.approx(pitch)] * 3
    axis = next(s for s in f.shapes if s.kind == "line" and s.stroke == theme.muted)
    assert axis.points[0][1] == axis.points[1][1] > ys[-1]  # under the lanes
    assert axis.points[1][0] == pytest.approx(rules[0].points[1][0])  # as long as they are
    legend = {t.key.removeprefix("legend."): t for t in f.texts if t.key.startswith("legend.")}
    for s in f.shapes:
        m = re.fullmatch(r"lane\.(\d+)\.(\d+)", s.key)
        if not m:
            continue
        rank, seq = int(m[1]), int(m[2])
        c = calls[(rank, seq)]
        ink = getattr(theme, INK[c["op"]])
        assert (s.fill, s.fill_alpha, s.stroke) == (ink, 255, ""), s.key
        assert legend[c["op"]].color == ink
        top, bottom = ys[rank] - pitch, ys[rank]
        inset = max(1.0, pitch * 0.08)
        assert s.box.y == pytest.approx(top + inset) and s.box.bottom == pytest.approx(
            bottom - inset
        )
        words = [t for t in f.texts if t.key.startswith(f"bar.{rank}.{seq}.")]
        for t in words:
            assert t.box.x == pytest.approx(s.box.x + t.font.px * 0.25) and t.color == theme.panel
        if words:  # the words centred on the bar, top to bottom
            mid = (words[0].box.y + words[-1].box.bottom) / 2
            assert mid == pytest.approx((top + bottom) / 2), s.key
    # tall lanes on a laptop: the bars wide enough say their bytes and time on a second line
    assert any(t.key.startswith("bar.") and t.key.endswith(".1") for t in f.texts)


@pytest.mark.parametrize(
    ("name", "theme", "w", "h"),
    [
        ("sharded-8-ranks.jsonl", "projector", 889, 495),
        ("sharded-4-ranks.jsonl", "light", 889, 300),
    ],
)
def test_a_shared_row_shows_its_overlapping_broadcasts_see_through(name, theme, w, h) -> None:
    th = load_theme(theme)
    f = _frame(name, theme, w, h, 3)
    calls = _calls(name, 1, "step", "zero")
    labels = {int(t.key.rsplit(".", 1)[1]): t for t in f.texts if t.key.startswith("lane.label.")}
    assert labels
    rules = _separators(f, th)
    ys = [s.points[0][1] for s in rules]
    pitch = ys[1] - ys[0]
    for rank, label in labels.items():
        bars = [s for s in f.shapes if re.fullmatch(rf"lane\.{rank}\.\d+", s.key)]
        seqs = [int(s.key.rsplit(".", 1)[1]) for s in bars]
        assert sorted(seqs) == sorted(seq for r, seq in calls if r == rank)
        for s in bars:
            assert (s.fill, s.fill_alpha, s.stroke) == (th.text, 70, th.text), s.key
            inset = max(1.0, pitch * 0.15)
            assert s.box.y == pytest.approx(ys[rank] - pitch + inset)
            assert s.box.bottom == pytest.approx(ys[rank] - inset)
        assert not [t for t in f.texts if re.fullmatch(rf"bar\.{rank}\.\d+\.\d", t.key)]
        assert label.color == th.text
        gap = label.font.px * 0.3
        if label.align is Align.LEFT:  # after the last bar
            assert label.box.x == pytest.approx(max(s.box.right for s in bars) + gap)
        else:  # before the first
            assert label.box.right == pytest.approx(min(s.box.x for s in bars) - gap)
        assert label.box.cy == pytest.approx(ys[rank] - pitch / 2)


@pytest.mark.parametrize(
    ("theme", "w", "h", "phase"), [("projector", 889, 350, 2), ("light", 600, 200, 3)]
)
def test_a_stage_too_short_for_a_label_a_lane_keeps_each_ranks_bars_in_its_lane(
    theme, w, h, phase
) -> None:
    th = load_theme(theme)
    name = "sharded-8-ranks.jsonl"
    f = _frame(name, theme, w, h, phase)
    assert not [t for t in f.texts if re.fullmatch(r"r\d", t.text)]
    assert not [t for t in f.texts if t.text == "ms"]
    rules = _separators(f, th)
    assert len(rules) == 8
    ys = [s.points[0][1] for s in rules]
    pitch = ys[1] - ys[0]
    assert pitch >= 2 and [b - a for a, b in itertools.pairwise(ys)] == [pytest.approx(pitch)] * 7
    calls = _calls(name, 1, PHASES[phase], ("fsdp", "zero")[phase - 2])
    bars = {s.key: s for s in f.shapes if s.key.startswith("lane.")}
    assert set(bars) == {f"lane.{r}.{q}" for r, q in calls}
    for key, s in bars.items():
        rank = int(key.split(".")[1])
        assert ys[rank] - pitch <= s.box.y and s.box.bottom <= ys[rank] + 1e-6, key
    assert rules[0].points[0][0] < 30  # no room given to labels: the lanes start at the edge


# what the step phase says besides its lanes as the stage shrinks: the table of the phase's
# calls (above the lanes, or ZeRO-1's beside them), else a line for the ways the lanes leave
# out, else nothing; the checks in full, then without the ring's line, then in one line
PLANS = [
    ("sharded-4-ranks.jsonl", "light", 889, 495, "above", ["zero", "fsdp", "ring"]),
    ("sharded-2-ranks.jsonl", "light", 600, 250, "above", ["zero", "fsdp"]),
    ("sharded-4-ranks.jsonl", "light", 1280, 250, "above", ["both"]),
    ("sharded-8-ranks.jsonl", "projector", 1280, 495, "beside", ["both"]),
    ("sharded-8-ranks.jsonl", "projector", 600, 495, "line", ["both"]),
    ("sharded-8-ranks.jsonl", "projector", 1280, 440, "", ["both"]),
]


@pytest.mark.parametrize(("name", "theme", "w", "h", "table", "checks"), PLANS)
def test_the_step_phase_gives_way_table_first_and_keeps_its_verdict(
    name, theme, w, h, table, checks
) -> None:
    th = load_theme(theme)
    f = _frame(name, theme, w, h, 3)
    world = int(name.split("-")[1])
    assert {t.text for t in f.texts if re.fullmatch(r"r\d", t.text)} == {
        f"r{r}" for r in range(world)
    }  # every lane keeps its label
    head = f.text_with_key("calls.head")
    line = f.text_with_key("calls.others")
    cells = [t for t in f.texts if t.key.startswith("call.zero.")]
    got = "beside" if head and head.box.x > w / 2 else "above" if head else "line" if line else ""
    assert got == table, (w, h, got)
    assert bool(cells) == bool(head)
    if table in ("line", "beside"):
        assert line.text == "no collective: DDP, FSDP2" and line.color == th.muted
    said = [t for t in f.texts if t.key.startswith("check.")]
    assert [t.key.removeprefix("check.") for t in said] == checks
    for t in said:
        if t.key == "check.both":
            assert t.text.startswith("✓ ZeRO-1") and "FSDP2" in t.text and t.color == th.ok
        elif t.key != "check.ring":
            assert t.text.startswith("✓ ") and t.color == th.ok


@pytest.mark.parametrize("phase", [1, 2])
def test_no_verdict_before_the_step(phase) -> None:
    for name, theme, w, h, *_ in PLANS:
        f = _frame(name, theme, w, h, phase)
        assert not [t for t in f.texts if t.key.startswith("check.")], (name, w, h)


@pytest.mark.parametrize(("theme", "w"), [("light", 600), ("projector", 520)])
def test_a_narrow_table_gives_each_call_its_own_line_in_issue_order(theme, w) -> None:
    """Too narrow for a cell's calls on one line, even in short words: each of rank 1's calls
    on a line of its own in its layer's row, the row as tall as its most calls."""
    name = "sharded-4-ranks.jsonl"
    f = _frame(name, theme, w, 900, 2)
    rows = [t for t in f.texts if not t.key and t.text in ("inp", "hidden", "out", "bucket")]
    assert [t.text for t in rows] == ["inp", "hidden", "out", "bucket"]
    pitch = None
    for row, nxt in itertools.pairwise([*rows, None]):
        n = 1
        for way in ("ddp", "zero", "fsdp"):
            calls = sorted(
                (c for (r, _), c in _calls(name, 1, "backward", way).items() if r == 1),
                key=lambda c: c["seq"],
            )
            mine = [c for c in calls if (c["layer"] or "bucket") == row.text]
            said = [f.text_with_key(f"call.{way}.{row.text}.{j}") for j in range(len(mine) + 1)]
            assert said[-1] is None  # no line more than its calls
            for c, t in zip(mine, said, strict=False):
                size = max(c["bytes_in"], c["bytes_out"])
                size = f"{size:,} B" if size < 10_000 else f"{size / 1000:.1f} kB"
                assert t.text == f"#{c['seq'] + 1} {SHORT[c['op']]} {size}", (way, row.text)
                if theme == "light":  # one call a line fits: the cells keep the rows' type
                    assert t.font.px == row.font.px
                assert t.box.y >= row.box.y - 0.5
            if len(mine) > 1:
                pitch = said[1].box.y - said[0].box.y
            n = max(n, len(mine))
        if nxt is not None and pitch:
            assert nxt.box.y - row.box.y == pytest.approx(n * pitch), row.text
    assert pitch
