"""The not-averaged stage's verdicts on both sides, on a real 2-rank recording and a copy with
one value moved on the last rank: the comm hook's bucket count and "✓ every rank holds the
same average" or "✗ the averages differ", the parameters after the step, each in the colour
of its verdict, and the buffers' verdict naming what differs and by how much. Expected values
come from the raw lines, read here with ``json``."""

from __future__ import annotations

import json
from dataclasses import replace

from ddp_viz.model import protocol
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width, fmt
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording

SYNC = "not-averaged.jsonl"  # 2 ranks, 4 steps, DDP's broadcast on
THEME = load_theme("light")
SHARDS, LOCAL, ALLREDUCE, STEP = range(4)
LINES = [json.loads(ln) for ln in (DATA / SYNC).read_text().splitlines() if ln.strip()]


def frame(step: int, phase: int, events=None):  # type: ignore[no-untyped-def]
    rec = record(events if events is not None else load_recording(SYNC))
    lesson = load_lesson("not-averaged")
    ctx = SceneContext(1280, 720, THEME, lesson.phase_text, estimate_width)
    return stage_frame(rec, Cursor(step, phase), 1.0, ctx, "not_averaged")


def nudged(kind: type, step: int, field: str) -> list:
    """The recording with the last rank's first value of ``field`` moved at ``step``."""
    out = []
    for e in load_recording(SYNC):
        if isinstance(e, kind) and e.step == step and e.rank == 1:
            values = dict(getattr(e, field))
            name = next(iter(values))
            values[name] = [values[name][0] + 0.5, *values[name][1:]]
            e = replace(e, **{field: values})
        out.append(e)
    return out


def test_the_comm_hooks_bucket_count_and_the_same_average() -> None:
    for step in range(4):
        buckets = max(
            len(d["buckets"]) for d in LINES if d["event"] == "local_grad" and d["step"] == step
        )
        line = frame(step, ALLREDUCE).text_with_key("grads.averaged")
        assert line.text == (
            f"the comm hook all-reduced {buckets} bucket(s): ✓ every rank holds the same average"
        )
        assert line.color == THEME.ok


def test_an_average_moved_on_the_last_rank_is_a_cross() -> None:
    f = frame(2, ALLREDUCE, nudged(protocol.AveragedGrad, 2, "grads"))
    line = f.text_with_key("grads.averaged")
    assert line.text.endswith("✗ the averages differ") and line.color == THEME.bad
    assert (
        frame(1, ALLREDUCE, nudged(protocol.AveragedGrad, 2, "grads"))
        .text_with_key("grads.averaged")
        .text.endswith("✓ every rank holds the same average")
    )  # only at the step it moved


def test_the_parameters_after_the_step_on_both_sides() -> None:
    line = frame(3, STEP).text_with_key("params.agree")
    assert line.text == "after optimizer.step(): ✓ parameters identical on every rank"
    assert line.color == THEME.ok and line.font.bold
    line = frame(3, STEP, nudged(protocol.Params, 3, "params")).text_with_key("params.agree")
    assert line.text == "after optimizer.step(): ✗ the ranks' parameters now differ"
    assert line.color == THEME.bad
    assert frame(3, ALLREDUCE).text_with_key("params.agree") is None  # not before the step


def test_the_buffers_verdict_names_what_differs_and_by_how_much() -> None:
    got = {(d["step"], d["rank"]): d for d in LINES if d["event"] == "buffers"}
    for step in range(4):
        a, b = got[(step, 0)]["after"], got[(step, 1)]["after"]
        differ = sorted(n for n in a if a[n] != b[n])
        most = max(abs(x - y) for n in a for x, y in zip(a[n], b[n], strict=True))
        line = frame(step, LOCAL).text_with_key("buffers.after")
        assert line.text == f"✗ {', '.join(differ)} differ between ranks by up to {fmt(most)}"
        assert line.color == THEME.bad
        line = frame(step, SHARDS).text_with_key("buffers.before")
        assert line.text == "✓ identical on every rank (rank 0's, broadcast by DDP)"
        assert line.color == THEME.ok
