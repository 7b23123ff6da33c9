"""The DDP step stage's lanes at the edges of their layout rules, against reviewed copies.

``tests/kinds/test_stage_layouts.py`` holds three stage sizes; the lanes' rules (the data
table down the left or folded or laid across the top, a header row over four columns or six
columns, the labels shrinking before the numbers, one row a lane when the tensors take turns)
flip between sizes it does not reach. Here each of several recordings (two to eight ranks, one
to many tensors) is drawn on narrow and wide, short and tall stages either side of those
thresholds, in the light and the projector theme, and every shape's and text's box is held
(to a tenth of a pixel) against ``tests/data/layouts/ddp_step_edges/``. A column that loses
its pad, a chip measured on the wrong words, a table folded one size too early: each moves a
line. After a change meant to move things, write the copies again and look at what moved::

    DDP_VIZ_WRITE_LAYOUTS=1 .venv/bin/python -m pytest \
        tests/kinds/ddp_step/test_scene_layout_edges.py
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from ddp_viz.model.frame import Font, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording
from tests.kinds.test_conformance import lesson_of
from tests.kinds.test_stage_layouts import assert_as_reviewed, layout_lines

KEPT = DATA / "layouts" / "ddp_step_edges"
RECORDINGS = [
    "four-ranks-3-steps.jsonl",
    "uneven-3-ranks.jsonl",
    "mlp-2-ranks-3-steps.jsonl",
    "every-parameter-8-ranks.jsonl",
]
# narrow and wide, short and tall: the table folds, runs across the top or down the left;
# a header row wins on a narrow tall stage, six columns on a wide short one
SIZES = [
    ("light", 420, 700),
    ("light", 640, 900),
    ("light", 760, 360),
    ("light", 1000, 520),
    ("light", 1500, 640),
    ("light", 2200, 420),
    ("light", 1800, 300),
    ("light", 2400, 240),
    ("light", 1300, 260),
    ("light", 3000, 330),
    ("light", 600, 260),
    ("light", 900, 230),
    ("projector", 889, 700),
    ("projector", 1280, 800),
    ("projector", 1280, 720),
    ("projector", 1100, 560),
    ("projector", 1920, 1080),
    ("projector", 2560, 900),
]


def shaped_width(text: str, font: Font) -> float:
    """A measure nearer the window's fonts than ``estimate_width``: capitals wider than small
    letters, mono digits alike, bold wider; words measured in the wrong case or font then
    move the columns, as they would in the window."""
    if font.mono:
        per = [0.6] * len(text)
    else:
        per = [0.72 if c.isupper() else 0.3 if c in " ,.:()" else 0.55 for c in text]
    return sum(per) * font.px * (1.08 if font.bold else 1.0)


def render(name: str) -> str:
    rec = record(load_recording(name))
    lesson = lesson_of("ddp_step")
    parts = []
    for (theme, w, h), measure in [(s, estimate_width) for s in SIZES] + [
        (s, shaped_width) for s in SIZES[::2]
    ]:
        ctx = SceneContext(w, h, load_theme(theme), lesson.phase_text, measure)
        for page in (0, 1) if theme == "projector" else (0,):
            for phase in (2, 3):
                paged = replace(ctx, page=page)
                frame = stage_frame(rec, Cursor(1, phase), 0.5, paged, lesson.scene)
                where = f"{theme} {w}x{h} {measure.__name__}"
                head = f"# {name}, {where}, step 1 phase {phase}, page {page}"
                # the texts' boxes (where each word and number sits) say where the columns are
                lines = [t for t in layout_lines(frame) if not t.startswith("S ")]
                parts.append(head + "\n" + "\n".join(lines) + "\n")
    return "\n".join(parts)


@pytest.mark.parametrize("name", RECORDINGS)
def test_the_lanes_are_drawn_where_they_were_reviewed_at_each_edge(name: str) -> None:
    assert_as_reviewed(KEPT / f"{name.removesuffix('.jsonl')}.txt", render(name), name)


def _strip_lines(name: str) -> str:
    """Where the data rows and rank 0's label sit as the stage narrows: the rows run across
    the top in one line, then two, then fold away, at widths a step apart."""
    rec = record(load_recording(name))
    lesson = lesson_of("ddp_step")
    out = []
    for measure in (estimate_width, shaped_width):
        for w in range(200, 820, 12):
            for h in (420, 900):
                ctx = SceneContext(w, h, load_theme("light"), lesson.phase_text, measure)
                frame = stage_frame(rec, Cursor(1, 2), 0.5, ctx, lesson.scene)
                boxes = [
                    f"{t.text.split(':')[0]}@{t.box.x:.1f},{t.box.y:.1f}"
                    for t in frame.texts
                    if t.text == "data (x, y)"
                    or t.text.split(":")[0].isdigit()
                    or t.text == "rank 0"
                ]
                out.append(f"{measure.__name__} {w}x{h}: " + " ".join(boxes))
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("name", ["four-ranks-3-steps.jsonl", "mlp-2-ranks-3-steps.jsonl"])
def test_the_data_rows_fold_into_lines_at_the_widths_reviewed(name: str) -> None:
    path = KEPT / f"strip-{name.removesuffix('.jsonl')}.txt"
    got = _strip_lines(name)
    if os.environ.get("DDP_VIZ_WRITE_LAYOUTS"):
        path.write_text(got, encoding="utf-8")
    want = path.read_text(encoding="utf-8").splitlines()
    for a, b in zip(want, got.splitlines(), strict=True):
        assert a == b
