"""The not-averaged stage's buffer table as a reader scans it (a real 2-rank recording): a
heading that says when the values were taken (and, with the broadcast, that they are rank 0's),
each rank's name once in its colour, each buffer on its own line, each value right-aligned in
its column, the recorded values in order, "…" after four values of a wider layer."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from ddp_viz.kinds.not_averaged.events import BufferValues
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import Align, estimate_width, fmt
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording

SYNC, NO_SYNC = "not-averaged.jsonl", "not-averaged-no-sync.jsonl"
THEME = load_theme("light")


def frame(name: str, step: int, phase: int, events=None):  # type: ignore[no-untyped-def]
    rec = record(events if events is not None else load_recording(name))
    lesson = load_lesson("not-averaged")
    ctx = SceneContext(1280, 720, THEME, lesson.phase_text, estimate_width)
    return stage_frame(rec, Cursor(step, phase), 1.0, ctx, "not_averaged")


@pytest.mark.parametrize(
    ("name", "phase", "heading"),
    [
        (
            SYNC,
            0,
            "BatchNorm buffers as the forward began (just after DDP's broadcast from rank 0)",
        ),
        (NO_SYNC, 0, "BatchNorm buffers as the forward began"),
        (SYNC, 1, "BatchNorm buffers after the forward (each rank's own batch)"),
    ],
)
def test_the_heading_says_when_the_values_were_taken(name, phase, heading) -> None:
    f = frame(name, 1, phase)
    text = " ".join(f.all_text().split())
    assert heading in text
    if name == NO_SYNC:
        assert "broadcast from rank 0" not in text


@pytest.mark.parametrize("phase", [0, 1])
def test_each_rank_each_buffer_a_line_each_value_in_its_column(phase) -> None:
    moment = "before" if phase == 0 else "after"
    lines = [json.loads(ln) for ln in (DATA / SYNC).read_text().splitlines() if ln.strip()]
    got = {d["rank"]: d[moment] for d in lines if d["event"] == "buffers" and d["step"] == 2}
    f = frame(SYNC, 2, phase)
    names = sorted(got[0])
    rights: list[float] | None = None
    ys = []
    for r in (0, 1):
        label = next(t for t in f.texts if t.text == f"rank {r}")
        assert label.color == THEME.rank_color(r)
        for i, n in enumerate(names):
            cells = [f.text_with_key(f"rank{r}.{moment}.{n}.{j}") for j in range(3)]
            assert [t.value for t in cells] == got[r][n]
            assert [t.text for t in cells] == [fmt(v) for v in got[r][n]]
            assert all(t.align == Align.RIGHT for t in cells) and len({t.box.y for t in cells}) == 1
            name = next(t for t in f.texts if t.text == n and t.box.y == cells[0].box.y)
            assert name.color == THEME.muted and name.box.right < cells[0].box.x
            if i == 0:
                assert label.box.y == cells[0].box.y
            col = [t.box.right for t in cells]
            assert col == sorted(col)
            rights = rights or col
            assert col == pytest.approx(rights)
            ys.append(cells[0].box.y)
    assert ys == sorted(ys) and len(set(ys)) == 4  # rank 0's two buffers, then rank 1's
    assert "…" not in [t.text for t in f.texts]


def test_a_wider_layer_shows_four_values_and_an_ellipsis() -> None:
    events = []
    for e in load_recording(SYNC):
        if isinstance(e, BufferValues) and e.step == 0:
            wide = {n: [*v, 7.5, 8.5] for n, v in e.before.items()}  # five values
            e = replace(e, before=wide)
        events.append(e)
    f = frame(SYNC, 0, 0, events)
    keys = {t.key for t in f.texts if t.key.startswith("rank0.before.1.running_mean.")}
    assert keys == {f"rank0.before.1.running_mean.{j}" for j in range(4)}
    assert [t.text for t in f.texts].count("…") == 4  # two buffers on two ranks
