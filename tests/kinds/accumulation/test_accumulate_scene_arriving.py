"""The accumulation stage before a step's ranks have reported, and for a run without
micro-batches: it waits (the step's reference alone is no reason to say the run does not
accumulate), and its sentences stay on a narrow stage, in at most the lines they are given."""

from __future__ import annotations

import json
from itertools import pairwise

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import Align, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording
from tests.frames import assert_inside_and_apart

DEFAULT = "accumulate-3-micro.jsonl"
WAITING = "Waiting for the ranks to report this step…"
NO_MICRO = "One micro-batch a step: set Micro-batches above 1 to accumulate."


def frame(events, step, phase, w=1280, h=720, theme="light"):  # type: ignore[no-untyped-def]
    lesson = load_lesson("accumulate-with-no-sync")
    ctx = SceneContext(w, h, load_theme(theme), lesson.phase_text, estimate_width)
    return stage_frame(record(events), Cursor(step, phase), 1.0, ctx, "accumulation")


def first(kind: str) -> int:
    """The index of the recording's first line of this kind, read from the raw file."""
    lines = [json.loads(ln) for ln in (DATA / DEFAULT).read_text().splitlines() if ln.strip()]
    return next(i for i, d in enumerate(lines) if d["event"] == kind)


@pytest.mark.parametrize("upto", ["reference", "micro_step", "local_grad"])
@pytest.mark.parametrize("phase", range(4))
def test_before_a_rank_reports_the_step_the_stage_waits(upto, phase) -> None:
    """Before the first reference (no step yet), after it, and while rank 0's micro-batches
    come in (a step no rank has finished): the title and the waiting line, nothing else."""
    events = load_recording(DEFAULT)[: first(upto)]
    f = frame(events, 0, phase)
    muted = load_theme("light").muted
    texts = [t for t in f.texts if t.text]
    assert texts[0].text.startswith("Step 1 of 3 · ")
    lines = [t for t in texts if t.text == WAITING]
    assert len(lines) == 1 and lines[0].color == muted
    assert "set Micro-batches" not in f.all_text() and not f.numbers()


def test_the_waiting_line_keeps_two_lines_at_most() -> None:
    """On a narrow projector stage the sentence would take three lines: two are kept, the
    second ending in "…"."""
    events = load_recording(DEFAULT)[: first("reference")]
    f = frame(events, 0, 2, w=340, h=480, theme="projector")
    assert_inside_and_apart(f)
    words = WAITING.split()
    kept = [t.text for t in f.texts if t.text.split()[0] in words and not t.text.startswith("St")]
    assert len(kept) == 2 and kept[-1].endswith(" …"), kept
    assert " ".join(kept).removesuffix(" …") in WAITING


@pytest.mark.parametrize("theme", ["projector", "light"])
def test_a_run_without_micro_batches_says_so_within_the_stage(theme) -> None:
    for w in range(300, 1300, 10):
        f = frame(load_recording("default-run.jsonl"), 0, 2, w=w, h=480, theme=theme)
        assert_inside_and_apart(f)
        muted = load_theme(theme).muted
        # below the title, left-aligned (the title's muted companion sits on the right)
        said = [t for t in f.texts if t.color == muted and t.align == Align.LEFT]
        assert " ".join(t.text for t in said) == NO_MICRO
        pad = said[0].box.x
        assert all(t.box.right <= w - pad + 1e-6 for t in said)  # the right margin kept too
        # each line as full as the stage allows: the next line's first word did not fit
        for line, after in pairwise(said):
            trial = f"{line.text} {after.text.split()[0]}"
            assert estimate_width(trial, line.font) > w - 2 * pad, (w, trial)
    assert len(said) == 1  # on one line where it fits (1290 px wide)
