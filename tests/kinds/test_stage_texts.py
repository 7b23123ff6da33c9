"""What every kind's stage says, word for word, against a reviewed copy.

Each kind's first two recordings, on a laptop's stage (1280×800, the light theme): every
phase of the first step and of the last, each at its end, and the last phase half-way. For
every text on the stage, its words, its colour's role in the theme (``ok`` for a ✓, ``bad``
for a ✗, a rank's own colour…), its size and weight and the key that names what a number is.
The numbers themselves are checked against the raw events beside each kind; this copy holds
the rest: a ✓ drawn in the wrong colour, a rank's row given another rank's name, a line that
stops being drawn. After a deliberate change write the new copies with
``DDP_VIZ_WRITE_STAGES=1`` and read ``git diff tests/data/stages`` before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ddp_viz.model.frame import StageFrame, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import Theme, load_theme
from ddp_viz.model.timeline import Cursor, record, walk
from tests.conftest import DATA, load_recording
from tests.kinds.test_conformance import kind_ids, lesson_of, recordings

KEPT = DATA / "stages"


def roles(theme: Theme) -> dict[str, str]:
    """A colour's name in the theme: the copy says ``ok``, not ``#1a7f37``."""
    out = {}
    for name in ("text", "muted", "grid", "accent", "ok", "bad", "highlight", "panel"):
        out.setdefault(getattr(theme, name).lower(), name)
    for r, c in enumerate(theme.ranks):
        out.setdefault(c.lower(), f"rank{r}")
    return out


def lines(frame: StageFrame, names: dict[str, str]) -> list[str]:
    out = []
    for t in frame.texts:
        font = f"{t.font.px:g}px{' bold' if t.font.bold else ''}{' mono' if t.font.mono else ''}"
        role = names.get(t.color.lower(), t.color)
        out.append(f"  {role:<9} {font:<14} {t.key or '-':<28} {t.text}")
    return out


def cursors(steps: int) -> list[tuple[Cursor, float]]:
    every = list(walk(max(1, steps)))
    first = [c for c in every if c.step == 0]
    last = [c for c in every if c.step == every[-1].step]
    chosen = [(c, 1.0) for c in first + (last if last != first else [])]
    return [*chosen, (every[-1], 0.5)]


def said(kind_id: str, name: str) -> str:
    theme = load_theme("light")
    lesson = lesson_of(kind_id)
    ctx = SceneContext(889, 495, theme, lesson.phase_text, estimate_width)
    rec = record(load_recording(name))
    out = []
    for cursor, progress in cursors(rec.complete_prefix()):
        frame = stage_frame(rec, cursor, progress, ctx, lesson.scene)
        out.append(f"--- step {cursor.step} phase {cursor.phase} at {progress:g}")
        out += lines(frame, roles(theme))
    return "\n".join(out) + "\n"


CASES = [(k, n) for k in kind_ids() for n in recordings()[k][:2]]


@pytest.mark.parametrize(("kind_id", "name"), CASES)
def test_a_kinds_stage_says_what_was_reviewed(kind_id: str, name: str) -> None:
    text, kept = said(kind_id, name), KEPT / f"{kind_id}--{Path(name).stem}.txt"
    if os.environ.get("DDP_VIZ_WRITE_STAGES"):
        kept.write_text(text, "utf-8")
    assert kept.exists(), f"no reviewed copy for {name}: write it with DDP_VIZ_WRITE_STAGES=1"
    assert text == kept.read_text("utf-8")


def test_every_kept_copy_has_its_recording() -> None:
    names = {f"{k}--{Path(n).stem}" for k, n in CASES}
    assert sorted(p.stem for p in KEPT.glob("*.txt") if p.stem not in names) == []
