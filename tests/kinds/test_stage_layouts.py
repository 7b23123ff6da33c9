"""Where every kind's stage draws what it draws, against a reviewed copy.

``tests/kinds/test_stage_texts.py`` holds what the stage says (words, colour roles, sizes);
this holds the geometry beside it, as image comparison does for a plotting library: every
shape's kind, box, points, stroke, fill and layer, and every text's and link's box and layer,
one line each, to a tenth of a pixel. A bar drawn from the wrong end, a tick that is lost or
drawn twice, a label moved onto its neighbour's place, a colour swapped between two shapes:
each changes a line. Each kind's first recording: the middle step's four phases half-way
through and the last step's end, on the laptop stage, the 1920×1080 projector's and a small
window's. After a change meant to move things, write the copies again and look at what moved
(a screenshot of the lesson) before committing them::

    DDP_VIZ_WRITE_LAYOUTS=1 .venv/bin/python -m pytest tests/kinds/test_stage_layouts.py
    git diff --stat tests/data/layouts
"""

from __future__ import annotations

import difflib
import os
from dataclasses import replace
from pathlib import Path

import pytest

from ddp_viz.model.frame import Rect, StageFrame, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import walk
from tests.conftest import DATA
from tests.kinds.test_conformance import STAGES, _records, kind_ids, lesson_of

KEPT = DATA / "layouts"
# the conformance suite's laptop and 1920×1080 projector stages, and a small window's stage
# (a 1024×600 netbook with the lesson column shown), where panels drop rows and shorten labels
SIZES = {
    "laptop 1280×800": STAGES["laptop 1280×800"],
    "projector 1920×1080": STAGES["projector 1920×1080"],
    "small window": ("light", 560, 480),
}


def _n(v: float) -> str:
    s = f"{v:.1f}"
    return "0.0" if s == "-0.0" else s


def _box(r: Rect) -> str:
    return ",".join(_n(v) for v in (r.x, r.y, r.w, r.h))


def layout_lines(frame: StageFrame) -> list[str]:
    """One line per thing drawn, in drawing order, numbers to a tenth of a pixel."""
    out = [f"stage {_n(frame.width)}x{_n(frame.height)} bg={frame.background}"]
    for s in frame.shapes:
        pts = " ".join(f"{_n(x)},{_n(y)}" for x, y in s.points)
        out.append(
            f"S {s.key or '-'} {s.kind} [{_box(s.box)}] pts=[{pts}] "
            f"stroke={s.stroke or '-'}/{s.stroke_alpha} w={_n(s.width)} "
            f"fill={s.fill or '-'}/{s.fill_alpha} r={_n(s.radius)} L{s.layer}"
        )
    for t in frame.texts:
        # the words, colour and font are test_stage_texts.py's; the first words say which
        out.append(
            f"T {t.key or '-'} [{_box(t.box)}] {t.align.name} /{t.alpha} L{t.layer} {t.text[:16]!r}"
        )
    for a in frame.links:
        out.append(f"A {a.key} [{_box(a.box)}] {a.lesson or '-'}")
    return out


def frames_of(kind_id: str) -> list[tuple[str, StageFrame]]:
    lesson = lesson_of(kind_id)
    name, rec = _records(kind_id)[0]
    n = max(1, rec.complete_prefix())
    cursors = list(walk(n))
    picked = [(c, 0.5) for c in cursors if c.step == n // 2] + [(cursors[-1], 1.0)]
    out = []
    for size, (theme, width, height) in SIZES.items():
        ctx = SceneContext(width, height, load_theme(theme), lesson.phase_text, estimate_width)
        for cursor, progress in picked:
            head = f"{name}, {size}, step {cursor.step} {cursor.phase_name} at {progress}"
            out.append((head, stage_frame(rec, cursor, progress, ctx, lesson.scene)))
    return out


def render(kind_id: str) -> str:
    parts = []
    for head, frame in frames_of(kind_id):
        parts.append(f"# {head}\n" + "\n".join(layout_lines(frame)) + "\n")
    return "\n".join(parts)


def _frames(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for block in text.split("\n\n"):
        head, _, body = block.partition("\n")
        out[head] = body.splitlines()
    return out


def assert_as_reviewed(path: Path, got: str, what: str) -> None:
    """``got`` frame by frame against the reviewed copy at ``path`` (written afresh with
    ``DDP_VIZ_WRITE_LAYOUTS=1``); a difference fails with the frame and its lines."""
    if os.environ.get("DDP_VIZ_WRITE_LAYOUTS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert path.exists(), f"no reviewed layout for {what}: DDP_VIZ_WRITE_LAYOUTS=1"
    want = _frames(path.read_text(encoding="utf-8"))
    have = _frames(got)
    assert list(have) == list(want), "the frames drawn are not the frames reviewed"
    for head, lines in have.items():
        if lines != want[head]:
            diff = difflib.unified_diff(
                want[head], lines, "reviewed", "drawn now", n=1, lineterm=""
            )
            pytest.fail(f"{what}: {head}\n" + "\n".join(list(diff)[:40]))


@pytest.mark.parametrize("kind_id", kind_ids())
def test_each_kinds_stage_is_drawn_where_it_was_reviewed(kind_id: str) -> None:
    assert_as_reviewed(KEPT / f"{kind_id}.txt", render(kind_id), kind_id)


def test_a_moved_box_or_a_lost_shape_is_a_different_layout() -> None:
    """The comparison can fail: the same frame with one text nudged by a pixel, or one shape
    fewer, gives other lines."""
    _, frame = frames_of("ddp_step")[0]
    lines = layout_lines(frame)
    t = frame.texts[0]
    frame.texts[0] = replace(t, box=Rect(t.box.x + 1, t.box.y, t.box.w, t.box.h))
    assert layout_lines(frame) != lines
    frame.shapes.pop()
    assert len(layout_lines(frame)) == len(lines) - 1


def test_every_kept_layout_has_its_kind() -> None:
    assert sorted(p.stem for p in KEPT.glob("*.txt") if p.stem not in kind_ids()) == []
