"""What the sharded stage keeps of the phase's calls as the stage shrinks, at sizes either side
of where each part gives way (pure frames of the 2-, 4- and 8-rank recordings): the table
above the lanes (each cell's calls on one line, or one a line), ZeRO-1's broadcasts beside the
lanes, the line naming the ways the lanes leave out (with their sizes while they fit), the
checks, and the caption, which gives way before a lane loses its rank label. Every call's
number, words and size are read from the raw ``sharded_collective`` events."""

from __future__ import annotations

import itertools
import json

import pytest

from ddp_viz.kinds.sharded.scene import build
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext
from ddp_viz.model.scenes.base import FrameBuilder
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording
from tests.kinds.sharded.words import LABELS, LONG, PHASES, SHORT, WAYS

KEYS = ("shards", "local", "allreduce", "step")
LESSON = load_lesson("sharded")
_RECS: dict[int, object] = {}


def _rec(n: int):
    if n not in _RECS:
        _RECS[n] = record(load_recording(f"sharded-{n}-ranks.jsonl"))
    return _RECS[n]


def _calls(n: int, way: str, phase: int, rank: int = 1, step: int = 1) -> list[dict]:
    lines = (DATA / f"sharded-{n}-ranks.jsonl").read_text().splitlines()
    return sorted(
        (
            d
            for d in map(json.loads, filter(None, lines))
            if d["event"] == "sharded_collective"
            and (d["way"], d["step"], d["rank"], d["phase"]) == (way, step, rank, PHASES[phase])
        ),
        key=lambda d: d["seq"],
    )


def _size(b: int) -> str:
    return f"{b:,} B" if b < 10_000 else f"{b / 1000:.1f} kB"


def _word(c: dict, words: dict[str, str], size: bool = True) -> str:
    said = f"#{c['seq'] + 1} {words[c['op']]}"
    return f"{said} {_size(max(c['bytes_in'], c['bytes_out']))}" if size else said


def _lanes_way(n: int, phase: int) -> str:
    """The way whose lanes are drawn: the most calls over every rank (the last on a tie)."""
    return max(WAYS[::-1], key=lambda w: sum(len(_calls(n, w, phase, r)) for r in range(n)))


def _others(n: int, phase: int, sizes: bool) -> str:
    ways = [w for w in WAYS if w != _lanes_way(n, phase)]
    parts = [
        f"{LABELS[w]}: {', '.join(_word(c, SHORT, sizes) for c in _calls(n, w, phase))}"
        for w in ways
        if _calls(n, w, phase)
    ]
    idle = [LABELS[w] for w in ways if not _calls(n, w, phase)]
    return "; ".join(parts + ([f"no collective: {', '.join(idle)}"] if idle else []))


def _worst(n: int, way: str, step: int = 1) -> float:
    lines = (DATA / f"sharded-{n}-ranks.jsonl").read_text().splitlines()
    return max(
        max(d["param_diff"], d["grad_diff"])
        for d in map(json.loads, filter(None, lines))
        if d["event"] == "sharded_step" and (d["way"], d["step"]) == (way, step)
    )


def _frame(n: int, theme: str, w: float, h: float, phase: int, progress: float = 1.0):
    ctx = SceneContext(w, h, load_theme(theme), LESSON.phase_text, estimate_width)
    return build(_rec(n), Cursor(1, phase), progress, ctx), ctx


def _captioned(f, phase: int) -> bool:
    sentence = LESSON.phase_text[KEYS[phase]]
    return any(not t.key and len(t.text) > 12 and sentence.startswith(t.text) for t in f.texts)


def _table(n: int, phase: int, words: dict[str, str], joined: bool) -> dict[str, str]:
    """Each cell's key and text: a row's calls in issue order, on one line or one a line."""
    out: dict[str, str] = {}
    for way in WAYS:
        rows: dict[str, list[str]] = {}
        for c in _calls(n, way, phase):
            rows.setdefault(c["layer"] or "bucket", []).append(_word(c, words))
        for row, said in rows.items():
            if joined:
                out[f"call.{way}.{row}.0"] = " · ".join(said)
            else:
                out |= {f"call.{way}.{row}.{j}": x for j, x in enumerate(said)}
    return out


def _said(f) -> dict[str, str]:
    return {t.key: t.text for t in f.texts if t.key.startswith(("calls.others", "call."))}


# (ranks, theme, width, height, phase): the caption kept, the others' line (with sizes or
# without, or none), the table ("joined"/"lines"/"side" and its words, or none), the checks
CASES = [
    ((4, "projector", 700, 440, 3), False, None, ("joined", SHORT), ["check.both"]),
    ((2, "projector", 700, 495, 3), True, None, ("joined", SHORT), ["check.zero", "check.fsdp"]),
    ((8, "projector", 889, 600, 3), True, True, ("side", SHORT), ["check.both"]),
    ((8, "projector", 520, 440, 3), False, None, None, []),
    ((2, "projector", 520, 440, 3), True, True, None, []),
    ((2, "projector", 600, 440, 2), True, False, None, []),
    ((2, "projector", 800, 440, 2), True, True, None, []),
    ((4, "projector", 1100, 696, 2), True, None, ("lines", SHORT), []),
    ((8, "projector", 1920, 550, 1), True, None, ("joined", LONG), []),
    ((4, "light", 889, 495, 2), True, None, ("joined", SHORT), []),
    # the smallest stage: the forward keeps its caption (no check line to make room for)
    ((2, "projector", 420, 300, 1), True, None, None, []),
    # the backward's caption gives way a pixel short of the lanes' need (4 ranks)
    ((4, "projector", 420, 323, 2), False, None, None, []),
    ((4, "projector", 420, 324, 2), True, None, None, []),
]


@pytest.mark.parametrize(("where", "caption", "sizes", "table", "checks"), CASES)
def test_what_the_stage_keeps_of_the_phases_calls(where, caption, sizes, table, checks) -> None:
    n, theme, w, h, phase = where
    f, ctx = _frame(n, theme, w, h, phase)
    assert _captioned(f, phase) == caption, where
    want: dict[str, str] = {}
    if sizes is not None:
        want["calls.others"] = _others(n, phase, sizes)
    if table is not None:
        form, words = table
        want |= _table(n, phase, words, joined=form == "joined")
    assert _said(f) == want, where
    if sizes is not None:
        assert f.text_with_key("calls.others").color == load_theme(theme).muted
    heads = [t for t in f.texts if t.key == "calls.head"]
    busy = [LABELS[x] for x in WAYS if _calls(n, x, phase)]
    assert [t.text for t in heads] == (busy if table else []), where
    assert sorted(t.key for t in f.texts if t.key.startswith("check.")) == sorted(checks), where
    both = f.text_with_key("check.both")
    if both is not None:  # the worst difference of either way on any rank, at this step
        most = max(_worst(n, w) for w in ("zero", "fsdp"))
        said = f"within {most:.0e}" if most else "exactly equal"
        assert both.text in (
            f"✓ ZeRO-1 and FSDP2 train DDP's weights ({said})",
            f"✓ ZeRO-1, FSDP2 = DDP ({said})",
        ), (where, both.text)
    ranks = {t.text for t in f.texts if t.text in {f"r{r}" for r in range(n)}}
    assert ranks == {f"r{r}" for r in range(n)}, where  # every lane keeps its label
    title = f.text_with_key("lanes.title")
    assert title.text.startswith(LABELS[_lanes_way(n, phase)]), where
    if table and table[0] == "side":  # the table stands right of the lanes, a gap between
        pad = FrameBuilder(ctx).pad
        left = min(t.box.x for t in f.texts if not t.key and t.text in ("inp", "hidden", "out"))
        assert left > w / 2 and heads[0].box.x > left
        px = next(t.font.px for t in f.texts if not t.key and t.text == "inp")
        right = max(t.box.right for t in f.texts if t.key.startswith("call."))
        assert right == pytest.approx(w - pad - px * 0.5, abs=0.5), where  # flush right
        lanes = [s for s in f.shapes if s.key.startswith("lane.")]
        assert lanes and max(s.box.right for s in lanes) <= left - 1.5 * pad + 0.01
        # the lanes' lines end half a "8888" short of the lanes' right, 1.5 pads left of it
        rules = [s for s in f.shapes if s.kind == "line" and s.points[0][1] == s.points[1][1]]
        ends = [s.points[1][0] for s in rules if s.points[1][0] < left]
        room = estimate_width("8888", heads[0].font) / 2
        assert max(ends) == pytest.approx(left - 1.5 * pad - room, abs=0.01), where


def test_the_caption_and_the_idle_ways_come_back_once_there_is_room() -> None:
    """The same phase a size up from a stage that keeps nothing but the lanes."""
    f, _ = _frame(8, "projector", 520, 440, 3)
    assert not _captioned(f, 3) and f.text_with_key("calls.others") is None
    f, _ = _frame(8, "projector", 889, 600, 3)
    assert _captioned(f, 3) and f.text_with_key("calls.others").text == "no collective: DDP, FSDP2"


def test_a_shrunk_tables_heads_and_cells_fill_their_columns_and_stay_apart() -> None:
    """2 ranks on a 520 px projector stage: the backward's three columns take smaller type
    than the stage's, as large as lets the widest head and the widest cell stay in their
    column with half the stage's type to spare."""
    f, _ = _frame(2, "projector", 520, 495, 2)
    heads = [t for t in f.texts if t.key == "calls.head"]
    assert [t.text for t in heads] == ["DDP", "DDP + ZeRO-1", "FSDP2"]
    px = next(t.font.px for t in f.texts if not t.key and t.text == "inp")  # the stage's type
    pitch = heads[1].box.x - heads[0].box.x
    assert heads[2].box.x - heads[1].box.x == pytest.approx(pitch)
    assert heads[0].font.px < px
    widest = max(heads, key=lambda t: t.box.w)
    assert widest.text == "DDP + ZeRO-1"
    assert widest.box.w == pytest.approx(pitch - px * 0.5, rel=0.01)
    cells = [t for t in f.texts if t.key.startswith("call.")]
    assert cells and all(t.font.px == cells[0].font.px for t in cells)
    assert cells[0].font.px < px
    wide = max(t.box.w for t in cells)
    # the cells' type: 98% of what makes the widest cell a column less half a type wide
    assert wide == pytest.approx(0.98 * (pitch - px + px * 0.5), rel=0.01)
    for t in cells:
        assert t.box.right <= t.box.x + pitch - px * 0.5 + 0.01


@pytest.mark.parametrize(("w", "shrunk"), [(600, True), (700, True), (889, False)])
def test_a_head_keeps_the_stage_type_only_with_half_a_type_to_spare(w, shrunk) -> None:
    f, _ = _frame(2, "projector", w, 495, 2)
    heads = [t for t in f.texts if t.key == "calls.head"]
    px = next(t.font.px for t in f.texts if not t.key and t.text == "inp")
    assert len(heads) == 3
    for a, b in itertools.pairwise(heads):
        assert b.box.x - a.box.right >= px * 0.5 - 0.01, (w, a.text)
    assert (heads[1].font.px < px) == shrunk, w


@pytest.mark.parametrize("theme", ["light", "projector"])
@pytest.mark.parametrize("w", [600, 700, 800, 889, 1100, 1341, 1920])
def test_the_idle_ways_note_keeps_a_type_clear_of_the_heads_or_goes(theme, w) -> None:
    """The forward phase: FSDP2's column alone, DDP and ZeRO-1 named in a note on the
    table's right only where it stays a type's width clear of the heads."""
    f, _ = _frame(2, theme, w, 900, 1)
    heads = [t for t in f.texts if t.key == "calls.head"]
    assert [t.text for t in heads] == ["FSDP2"]
    note = f.text_with_key("calls.idle")
    px = next(t.font.px for t in f.texts if not t.key and t.text == "inp")
    # on a projector the note would come within a type of the head below 800 px
    assert (note is None) == (theme == "projector" and w < 800), (theme, w)
    if note is None:
        return
    assert note.text == "no collective: DDP, DDP + ZeRO-1"
    assert note.box.x >= heads[-1].box.right + px - 0.01, (theme, w)
