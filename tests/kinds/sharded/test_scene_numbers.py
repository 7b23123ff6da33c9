"""What the sharded stage says and draws, against the raw ``sharded_step`` and
``sharded_collective`` events (pure): the bytes rank 1 held per way with the formula's ✓, and
its ✗ when one count is off on that rank (not on another); FSDP2's gathered bytes; the rows
each rank owns as filled parts of each parameter's box; the table's calls revealed in issue
order; each rank's bars where its calls' start and end put them on the time axis."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import pytest

from ddp_viz.kinds.sharded.scene import build
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording
from tests.kinds.sharded.words import LABELS, LONG, PHASES, SHORT, WAYS

NAME = "sharded-4-ranks.jsonl"
WHAT = ("params", "grads", "state")
LIGHT = load_theme("light")


def _raw(name: str = NAME) -> list[dict]:
    return [json.loads(x) for x in (DATA / name).read_text().splitlines() if x]


def _steps(name: str = NAME) -> dict[tuple[str, int, int], dict]:
    return {(d["way"], d["step"], d["rank"]): d for d in _raw(name) if d["event"] == "sharded_step"}


def _calls(way: str, step: int, rank: int, phase: str, name: str = NAME) -> list[dict]:
    return sorted(
        (
            d
            for d in _raw(name)
            if d["event"] == "sharded_collective"
            and (d["way"], d["step"], d["rank"], d["phase"]) == (way, step, rank, phase)
        ),
        key=lambda d: d["seq"],
    )


def _size(n: int) -> str:
    return f"{n:,} B" if n < 10_000 else f"{n / 1000:.1f} kB"


def _frame(events=None, step=1, phase=0, progress=1.0, w=1280, h=800, theme="light"):
    lesson = load_lesson("sharded")
    ctx = SceneContext(w, h, load_theme(theme), lesson.phase_text, estimate_width)
    rec = record(events if events is not None else load_recording(NAME))
    return build(rec, Cursor(step, phase), progress, ctx)


def _changed(way: str, step: int, rank: int, **fields):
    out = []
    for e in load_recording(NAME):
        if e.kind == "sharded_step" and (e.way, e.step, e.rank) == (way, step, rank):
            e = dataclasses.replace(e, **fields)
        out.append(e)
    return out


@pytest.mark.parametrize("step", [0, 2])
def test_the_holds_table_is_rank_1s_bytes_each_with_its_formulas_tick(step) -> None:
    raw = _steps()
    f = _frame(step=step)
    assert f.text_with_key("held.rank").text == "rank 1"
    assert any(t.text == f"Step {step + 1} of 4 · what each rank holds" for t in f.texts)
    assert any(t.text == "4 ranks · numbers of rank 1" for t in f.texts)
    for way in WAYS:
        for what in WHAT:
            got = raw[(way, step, 1)][what]
            said = f.text_with_key(f"held.{way}.{what}")
            assert (said.text, said.value) == (_size(got), got), (way, what)
        mark = f.text_with_key(f"formula.{way}")
        assert mark.text.startswith("✓ ") and mark.color == LIGHT.ok, way
    gathered = raw[("fsdp", step, 1)]
    line = f.text_with_key("held.fsdp.gathered").text
    assert line == (
        f"FSDP2 also held up to {_size(gathered['gathered'])} of whole layers "
        f"({gathered['gathered_at']})"
    )


@pytest.mark.parametrize(
    ("way", "what"), [("ddp", "grads"), ("zero", "state"), ("fsdp", "params"), ("zero", "params")]
)
def test_one_count_off_on_rank_1_turns_its_ways_tick_to_a_cross(way, what) -> None:
    got = _steps()[(way, 1, 1)][what]
    f = _frame(_changed(way, 1, 1, **{what: got + 4}))
    assert f.text_with_key(f"held.{way}.{what}").text == _size(got + 4)
    for other in WAYS:
        mark = f.text_with_key(f"formula.{other}")
        if other == way:
            assert mark.text.startswith("✗ ") and mark.color == LIGHT.bad, (way, what)
        else:
            assert mark.text.startswith("✓ ") and mark.color == LIGHT.ok, (other, what)


def test_a_count_off_on_another_rank_leaves_rank_1s_table_as_it_was() -> None:
    f = _frame(_changed("zero", 1, 3, state=1))
    assert f.text_with_key("formula.zero").text.startswith("✓ ")
    assert f.text_with_key("held.zero.state").value == _steps()[("zero", 1, 1)]["state"]


def test_no_gathered_line_when_fsdp_held_no_whole_layer() -> None:
    f = _frame(_changed("fsdp", 1, 1, gathered=0))
    assert f.text_with_key("held.fsdp.gathered") is None
    assert f.text_with_key("held.fsdp.params") is not None


def test_no_numbers_while_a_rank_has_not_reported_the_step() -> None:
    events = [
        e
        for e in load_recording(NAME)
        if not (e.kind == "sharded_step" and (e.way, e.step, e.rank) == ("fsdp", 1, 2))
    ]
    for phase in range(4):
        f = _frame(events, step=1, phase=phase)
        assert not [t for t in f.texts if t.key.startswith(("held.", "call.", "slices.", "bar."))]
        assert not [s for s in f.shapes if s.key.startswith(("lane.", "own."))]
        assert any(t.text.startswith("Step 2 of 4 · ") for t in f.texts)
    assert _frame(events, step=0).text_with_key("held.fsdp.state") is not None


@pytest.mark.parametrize("step", [0, 3])
def test_each_ranks_rows_are_filled_where_it_reported_owning_them(step) -> None:
    """ZeRO-1's whole parameters and FSDP2's slices: each filled part lies in its parameter's
    box at its rows' place, in its rank's colour, for the rows the rank's event says."""
    raw = _steps()
    f = _frame(step=step)
    shapes = f.shapes[
        next(i for i, s in enumerate(f.shapes) if s.stroke == LIGHT.grid and s.kind == "rect") :
    ]
    names = ["inp.weight", "inp.bias", "hidden.weight", "hidden.bias", "out.weight", "out.bias"]
    rows = {"out.weight": 8, "out.bias": 8}
    seen = 0
    boxes = [s for s in shapes if s.kind == "rect" and s.stroke == LIGHT.grid]
    assert len(boxes) == 2 * 4 * len(names)
    for k, way in enumerate(("zero", "fsdp")):
        for rank in range(4):
            owned = raw[(way, step, rank)]["owned"]
            for j, name in enumerate(names):
                box = boxes[(k * 4 + rank) * len(names) + j]
                i = shapes.index(box)
                part = shapes[i + 1] if i + 1 < len(shapes) and shapes[i + 1].key else None
                first, n = owned[name]
                if not n:
                    assert part is None or part.key != f"own.{name}" or part.box.y != box.box.y
                    continue
                seen += 1
                d0 = rows.get(name, 64)
                assert part.key == f"own.{name}" and part.fill == LIGHT.rank_color(rank)
                assert part.box.x == pytest.approx(box.box.x + box.box.w * first / d0)
                assert part.box.w == pytest.approx(box.box.w * n / d0)
                assert (part.box.y, part.box.h) == (box.box.y, box.box.h)
    assert seen == sum(
        1
        for n in names
        for r in range(4)
        for w in ("zero", "fsdp")
        if raw[(w, step, r)]["owned"][n][1]
    )
    # every rank's boxes on its own row, the ranks top to bottom
    ys = [boxes[r * len(names)].box.y for r in range(4)]
    assert ys == sorted(ys) and len(set(ys)) == 4
    widths = [boxes[j].box.w for j in range(len(names))]
    assert widths[0] == pytest.approx(widths[2]) and widths[0] == pytest.approx(widths[4] * 8)


@pytest.mark.parametrize(
    ("phase", "progress"), [(1, 1.0), (2, 0.1), (2, 0.5), (2, 0.75), (2, 1.0), (3, 0.4)]
)
def test_the_tables_calls_are_rank_1s_revealed_in_issue_order(phase, progress) -> None:
    f = _frame(step=1, phase=phase, progress=progress)
    said = {t.key: t.text for t in f.texts if t.key.startswith("call.")}
    for way in WAYS:
        calls = _calls(way, 1, 1, PHASES[phase])
        shown = math.ceil(progress * len(calls))
        texts = " · ".join(v for k, v in said.items() if k.startswith(f"call.{way}."))
        for k, c in enumerate(calls):
            row = c["layer"] or "bucket"
            size = _size(max(c["bytes_in"], c["bytes_out"]))
            words = [f"#{c['seq'] + 1} {w[c['op']]} {size}" for w in (LONG, SHORT)]
            where = [v for key, v in said.items() if key.startswith(f"call.{way}.{row}.")]
            assert any(x in v for x in words for v in where) == (k < shown), (way, k, texts)
        if not calls:
            assert not texts, way
    heads = [t.text for t in f.texts if t.key == "calls.head"]
    busy = [LABELS[w] for w in WAYS if _calls(w, 1, 1, PHASES[phase])]
    assert heads == busy
    idle = f.text_with_key("calls.idle")
    rest = [LABELS[w] for w in WAYS if LABELS[w] not in busy]
    assert (idle.text if idle else "") == (f"no collective: {', '.join(rest)}" if rest else "")


def _axis(f):
    """The time axis as the stage draws it: pixels per second and the pixel of time 0, from
    two of its labels (ms)."""
    ticks = [t for t in f.texts if t.key == "axis"]
    a, b = ticks[0], ticks[-1]
    ta, tb = float(a.text) / 1e3, float(b.text) / 1e3
    scale = (b.box.cx - a.box.cx) / (tb - ta)
    return ticks, scale, a.box.cx - ta * scale


@pytest.mark.parametrize(("step", "phase"), [(1, 1), (1, 2), (2, 2), (3, 3)])
def test_each_bar_lies_where_its_calls_start_and_end_put_it(step, phase) -> None:
    f = _frame(step=step, phase=phase)
    busiest = max(
        WAYS[::-1], key=lambda w: sum(len(_calls(w, step, r, PHASES[phase])) for r in range(4))
    )
    ticks, scale, zero = _axis(f)
    calls = {r: _calls(busiest, step, r, PHASES[phase]) for r in range(4)}
    t0 = min(c["start"] for v in calls.values() for c in v)
    t1 = max(c["end"] for v in calls.values() for c in v)
    values = [float(t.text) for t in ticks]
    gaps = {round(b - a, 9) for a, b in itertools.pairwise(values)}
    assert len(gaps) == 1 and t0 * 1e3 <= values[0] and values[-1] <= t1 * 1e3 + 1e-6, values
    assert f.text_with_key("lanes.title").text.startswith(LABELS[busiest]), busiest
    bars = {s.key: s.box for s in f.shapes if s.key.startswith("lane.")}
    assert set(bars) == {f"lane.{r}.{c['seq']}" for r, v in calls.items() for c in v}
    for rank, mine in calls.items():
        for c in mine:
            box = bars[f"lane.{rank}.{c['seq']}"]
            assert box.x == pytest.approx(zero + c["start"] * scale, abs=1e-6), (rank, c["seq"])
            end = max(zero + c["end"] * scale, box.x + 2.0)
            assert box.right == pytest.approx(end, abs=1e-6), (rank, c["seq"])
            label = f.text_with_key(f"bar.{rank}.{c['seq']}.0")
            if label is not None:
                n, op = f"#{c['seq'] + 1}", SHORT[c["op"]]
                what = c["tensors"][0] if c["op"] == "broadcast" else c["layer"] or "bucket"
                short = (
                    what.replace(".weight", ".w").replace(".bias", ".b")
                    if c["op"] == "broadcast"
                    else what[:3]
                )
                assert label.text in (f"{n} {op} {what}", f"{n} {op} {short}", f"{n} {op}", n)
                assert box.x < label.box.x < box.right
            second = f.text_with_key(f"bar.{rank}.{c['seq']}.1")
            if second is not None:
                size = _size(max(c["bytes_in"], c["bytes_out"]))
                ms = (c["end"] - c["start"]) * 1e3
                assert second.text in (f"{size} · {ms:.1f} ms", size), second.text
    # the lanes' lines run from time t0 to time t1
    lanes = [
        s for s in f.shapes if s.kind == "line" and s.stroke == LIGHT.grid and s.points[0][0] > 0
    ]
    ends = {(round(s.points[0][0], 6), round(s.points[1][0], 6)) for s in lanes[-4:]}
    assert ends == {(round(zero + t0 * scale, 6), round(zero + t1 * scale, 6))}


@pytest.mark.parametrize("progress", [0.0, 0.3, 0.5, 1.0])
def test_each_ranks_bars_appear_in_issue_order_as_the_phase_plays(progress) -> None:
    f = _frame(step=1, phase=2, progress=progress)
    for rank in range(4):
        calls = _calls("fsdp", 1, rank, "backward")
        shown = {s.key for s in f.shapes if s.key.startswith(f"lane.{rank}.")}
        want = {f"lane.{rank}.{c['seq']}" for c in calls[: math.ceil(progress * len(calls))]}
        assert shown == want, (rank, progress)


def test_a_wide_stage_spells_out_each_formula_in_full() -> None:
    f = _frame(w=1920, h=1080)
    heads = [t.text for t in f.texts if t.box.y == f.text_with_key("held.rank").box.y]
    assert heads == ["rank 1", "params", "grads", "Adam state", "bytes match the formula"]
    assert [f.text_with_key(f"formula.{w}").text for w in WAYS] == [
        "✓ all of it on every rank: params, grads, 2 Adam tensors",
        "✓ Adam state split by whole parameters, largest first",
        "✓ params, grads and Adam state split by rows (dim 0)",
    ]
    for way in WAYS:  # each number under its column's heading
        for what, head in zip(WHAT, heads[1:], strict=False):
            x = next(t.box.x for t in f.texts if t.text == head)
            assert f.text_with_key(f"held.{way}.{what}").box.x == pytest.approx(x)


@pytest.mark.parametrize(("w", "h"), [(600, 600), (520, 440), (400, 600), (889, 495)])
def test_a_narrow_projector_stage_keeps_each_ways_tick_or_cross(w, h) -> None:
    """The table's type shrank to fit its numbers and left no room for the ✓ beside them
    (600 px in projector type): the verdict, the point of the table, went missing."""
    projector = load_theme("projector")
    f = _frame(w=w, h=h, theme="projector")
    for way in WAYS:
        mark = f.text_with_key(f"formula.{way}")
        assert mark is not None and mark.text.startswith("✓"), (w, way)
        assert mark.color == projector.ok and mark.box.right <= w
    got = _steps()[("zero", 1, 1)]["state"]
    f = _frame(_changed("zero", 1, 1, state=got + 4), w=w, h=h, theme="projector")
    mark = f.text_with_key("formula.zero")
    assert mark is not None and mark.text.startswith("✗") and mark.color == projector.bad


def test_the_calls_table_has_a_row_a_layer_and_the_bucket_each_ruled_off() -> None:
    f = _frame(step=1, phase=2)
    rows = [t for t in f.texts if not t.key and t.text in ("inp", "hidden", "out", "bucket")]
    assert [t.text for t in rows] == ["inp", "hidden", "out", "bucket"]
    left = rows[0].box.x
    rules = [s for s in f.shapes if s.kind == "line" and s.stroke == LIGHT.grid]
    rules = [s for s in rules if s.points[0][0] == pytest.approx(left)]
    assert len(rules) == len(rows)
    right = rules[0].points[1][0]
    for row, below, rule in zip(rows, [*rows[1:], None], rules, strict=True):
        (_, y0), (x1, y1) = rule.points
        assert y0 == y1 and x1 == pytest.approx(right) and right > 1000  # across the table
        assert row.box.bottom <= y0 + 0.5 and (below is None or y0 <= below.box.y + 0.5)
    # the forward phase has no bucket: FSDP2's gathers alone, one row a layer
    f = _frame(step=1, phase=1)
    rows = [t.text for t in f.texts if not t.key and t.text in ("inp", "hidden", "out", "bucket")]
    assert rows == ["inp", "hidden", "out"]


def test_before_a_run_the_stage_says_press_run() -> None:
    from ddp_viz.model.scenes.base import FrameBuilder

    lesson = load_lesson("sharded")
    ctx = SceneContext(1280, 800, LIGHT, lesson.phase_text, estimate_width)
    f = build(record(load_recording("default-run.jsonl")), Cursor(0, 0), 1.0, ctx)
    pad, base = FrameBuilder(ctx).pad, FrameBuilder(ctx).base
    [said] = f.texts
    assert said.text == "This lesson trains DDP, ZeRO-1 and FSDP2 side by side: press Run."
    assert (said.box.x, said.box.y, said.font.px, said.color) == (pad, pad, base, LIGHT.muted)
    assert not f.shapes


@pytest.mark.parametrize(("theme", "grow"), [("light", 1.1), ("projector", 1.0)])
def test_the_holds_table_is_a_size_up_on_a_laptop_but_not_on_a_projector(theme, grow) -> None:
    f = _frame(w=1920, h=1080, theme=theme)
    base = next(t for t in f.texts if t.text == "4 ranks · numbers of rank 1").font.px
    for key in ("held.rank", "held.zero.state", "formula.fsdp", "slices.zero"):
        assert f.text_with_key(key).font.px == pytest.approx(base * grow), key


def test_a_step_not_yet_reported_says_so_in_its_caption() -> None:
    events = [
        e
        for e in load_recording(NAME)
        if not (e.kind == "sharded_step" and (e.way, e.step, e.rank) == ("fsdp", 2, 0))
    ]
    for phase in range(4):
        f = _frame(events, step=2, phase=phase)
        assert any(t.text == "Waiting for the ranks to report this step…" for t in f.texts)
    f = _frame(events, step=1, phase=2)
    assert not any(t.text.startswith("Waiting") for t in f.texts)


@pytest.mark.parametrize("phase", [0, 1, 2, 3])
def test_the_caption_keeps_two_lines_cut_short_with_an_ellipsis(phase) -> None:
    lesson = load_lesson("sharded")
    sentence = lesson.phase_text[("shards", "local", "allreduce", "step")[phase]]
    f = _frame(w=520, h=900, phase=phase)
    first = next(i for i, t in enumerate(f.texts) if sentence.startswith(t.text))
    lines = [f.texts[first].text]
    for t in f.texts[first + 1 :]:
        if t.font != f.texts[first].font or t.key:
            break
        lines.append(t.text)
    assert len(lines) == 2, lines
    said = " ".join(lines)
    assert said == sentence or (said.endswith(" …") and sentence.startswith(said[:-2]))
