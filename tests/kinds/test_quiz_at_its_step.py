"""The kinds' quiz quantities read at their own step (pure: recorded events, no Qt, no torch).

Each is asserted at every step and rank against the raw events, on a recording where the value
changes from one step to the next (so a value read a step early or late differs), and the
stage's own figure at that step is the same number. The comm-hooks run changes by itself (its
PowerSGD hooks start after warm-up); the sharded run holds the same bytes every step, so each
step's figures are moved apart first, and in both the ranks' figures are made to differ.
"""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.model.frame import estimate_width
from ddp_viz.model.quiz import Quantity
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.kinds.test_conformance import lesson_of

WHAT = ("params", "grads", "state", "gathered")


def frame_at(kind_id: str, rec, step: int, phase: int):
    lesson = lesson_of(kind_id)
    ctx = SceneContext(1280, 720, load_theme("light"), lesson.phase_text, estimate_width)
    return stage_frame(rec, Cursor(step, phase), 1.0, ctx, lesson.scene)


def changes_between_steps(values: dict[tuple[int, int], float]) -> bool:
    """Some rank's value at some step differs from its value at the step before."""
    return any(v != values.get((s - 1, r), v) for (s, r), v in values.items())


# --- comm hooks: the bytes a rank handed to all-reduce in one step of one hook -------------------
@pytest.mark.parametrize("variant", ["powersgd-r1", "powersgd-r4-noef", "allreduce"])
def test_hook_bytes_are_each_steps_own(variant: str) -> None:
    # both ranks send the same bytes: the last rank's are moved so a rank read for another
    # shows
    events = [
        dataclasses.replace(e, sent=[e.sent[0] + 4, *e.sent[1:]])
        if e.kind == "hook_step" and e.rank == 1
        else e
        for e in load_recording("comm-hooks-14-steps.jsonl")
    ]
    rec = record(events)
    raw = {
        (e.step, e.rank): float(sum(e.sent))
        for e in events
        if e.kind == "hook_step" and e.variant == variant
    }
    assert len(raw) == 14 * 2
    if variant != "allreduce":  # warm-up's full bytes, then PowerSGD's factors
        assert changes_between_steps(raw)
    for (step, rank), want in raw.items():
        q = Quantity(what="hook_bytes", param=variant, step=step + 1, rank=rank)
        assert q.read(rec) == want, (step, rank)
        assert q.reveal_step(rec) == step
        if rank == 0:  # the stage's bar is rank 0's, at the step the cursor is on
            shown = frame_at("hook_compression", rec, step, 0).text_with_key(f"bytes.{variant}")
            assert shown is not None and shown.value == want, (step, shown)


# --- sharded: the bytes a rank held after a step of one way --------------------------------------
def apart(events):
    """The recording with every figure moved by a different amount at every step and rank
    (the run holds the same bytes at every step: a read of the wrong step would pass)."""
    out = []
    for e in events:
        if e.kind == "sharded_step":
            bump = 4 * (e.step * 10 + e.rank + 1)
            e = dataclasses.replace(e, **{w: getattr(e, w) + bump for w in WHAT})
        out.append(e)
    return out


@pytest.mark.parametrize("way", ["ddp", "zero", "fsdp"])
def test_held_bytes_are_each_steps_own(way: str) -> None:
    events = apart(load_recording("sharded-4-ranks.jsonl"))
    rec = record(events)
    steps = [e for e in events if e.kind == "sharded_step" and e.way == way]
    assert len(steps) == 4 * 4
    for what in WHAT:
        raw = {(e.step, e.rank): float(getattr(e, what)) for e in steps}
        assert changes_between_steps(raw)
        for (step, rank), want in raw.items():
            q = Quantity(what="held_bytes", param=f"{way}.{what}", step=step + 1, rank=rank)
            assert q.read(rec) == want, (what, step, rank)
            assert q.reveal_step(rec) == step
    for step in range(4):  # the stage's table is rank 1's, after the cursor's step
        f = frame_at("sharded", rec, step, 0)
        e = next(e for e in steps if e.step == step and e.rank == 1)
        for what in ("params", "grads", "state"):
            assert f.numbers()[f"held.{way}.{what}"] == getattr(e, what), (step, what)


# --- evaluation: the places the sampler added -----------------------------------------------------
@pytest.mark.parametrize("name", ["evaluation-2-ranks.jsonl", "evaluation-4-ranks.jsonl"])
def test_extra_rows_are_the_places_that_repeat_a_row(name: str) -> None:
    events = load_recording(name)
    rec = record(events)
    shares = [e.indices for e in events if e.kind == "eval_share"]
    want = sum(map(len, shares)) - len({i for s in shares for i in s})
    assert Quantity(what="extra_rows", step=1).read(rec) == want
    shown = frame_at("evaluation", rec, 0, 0).text_with_key("extra_rows")
    assert shown is not None and shown.value == want
    # "25 rows → 28 places": the rows held out, and the places the shares hold
    rows = next(e for e in events if e.kind == "eval_reference").x
    assert f"{len(rows)} rows → {sum(map(len, shares))} places" in shown.text, shown.text
