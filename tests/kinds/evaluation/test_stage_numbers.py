"""What the evaluation stage and report say, against values computed here from the raw events
(pure: recordings, no Qt, no torch): which places are outlined as the sampler's padding, and
the frame the report and the stage name as where each rank waited."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.model.frame import StageFrame, estimate_width
from ddp_viz.model.report import run_report
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.kinds.test_conformance import lesson_of


def frame(rec, phase: int) -> StageFrame:
    lesson = lesson_of("evaluation")
    ctx = SceneContext(1280, 720, load_theme("light"), lesson.phase_text, estimate_width)
    return stage_frame(rec, Cursor(0, phase), 1.0, ctx, lesson.scene)


def padded_places(events) -> dict[int, list[int]]:
    """DistributedSampler's rule: it lays the rows out, pads the list to a multiple of the
    ranks with rows from its start, and deals place k to rank k % world. Rank r's place i is
    padding when r + i × world is past the last row."""
    shares = {e.rank: e.indices for e in events if e.kind == "eval_share"}
    world, rows = len(shares), next(e for e in events if e.kind == "eval_reference").rows
    return {r: [i for i in range(len(shares[r])) if r + i * world >= rows] for r in sorted(shares)}


@pytest.mark.parametrize("name", ["evaluation-2-ranks.jsonl", "evaluation-4-ranks.jsonl"])
def test_the_outlined_places_are_the_samplers_padding(name: str) -> None:
    events = load_recording(name)
    want = padded_places(events)
    assert sum(map(len, want.values())) > 0
    f = frame(record(events), 0)
    cells = [s for s in f.shapes if s.kind == "rect" and s.fill and not s.stroke]
    outlined = [s for s in f.shapes if s.kind == "rect" and s.stroke and s.width == 2.5]
    lanes = sorted({round(c.box.y, 3) for c in cells})  # one lane a rank, top to bottom
    assert len(lanes) == len(want)
    for rank, y in enumerate(lanes):
        row = sorted((c for c in cells if round(c.box.y, 3) == y), key=lambda c: c.box.x)
        mine = {round(s.box.x, 3) for s in outlined if round(s.box.y, 3) == y}
        assert mine == {round(row[i].box.x, 3) for i in want[rank]}, rank


def test_the_report_and_the_stage_name_the_frame_of_each_ranks_last_heartbeat() -> None:
    """A rank's first heartbeats are moved to another frame: where it waited is where its
    last heartbeat before the timeout found it, not its first."""
    events = load_recording("evaluation-4-ranks.jsonl")
    beats = [e for e in events if e.kind == "eval_wait" and e.attempt == "wrapper"]
    last = {e.rank: e for e in beats}
    early = {id(e) for e in beats if e is not last[e.rank]}
    assert len(early) >= 4
    moved = [
        dataclasses.replace(e, where=["early_frame (x.py:1)", *e.where[1:]])
        if id(e) in early
        else e
        for e in events
    ]
    rec = record(moved)
    report = run_report(rec).splitlines()
    f = frame(rec, 2)
    for rank, beat in sorted(last.items()):
        line = next(x for x in report if x.startswith(f"rank {rank} waited "))
        assert f" in {beat.where[0]}; gloo said" in line, line
        shown = f.text_with_key(f"wait.{rank}")
        function = beat.where[0].split(" (")[0].split(".")[-1]
        assert shown is not None and function in shown.text, (rank, shown)
        assert "early_frame" not in shown.text


def test_while_a_rank_waits_the_stage_counts_its_latest_heartbeat_then_its_end() -> None:
    """Mid-stream, after every heartbeat of the last rank: it waits in its latest beat's frame
    for as long as that beat says; once its outcome is in, the outcome's time."""
    events = load_recording("evaluation-4-ranks.jsonl")
    rank = 3
    ends = [i for i, e in enumerate(events) if e.kind == "eval_outcome" and e.rank == rank]
    beats = [
        i
        for i, e in enumerate(events[: ends[0]])
        if e.kind == "eval_wait" and e.rank == rank and e.attempt == "wrapper"
    ]
    assert len(beats) >= 3
    for i in beats:
        beat = events[i]
        shown = frame(record(events[: i + 1]), 2).text_with_key(f"wait.{rank}")
        assert shown is not None, i
        assert shown.value == pytest.approx(beat.now - beat.since, abs=1e-9), i
        assert f"for {beat.now - beat.since:.2f} s" in shown.text, shown.text
    done = events[ends[0]]
    shown = frame(record(events[: ends[0] + 1]), 2).text_with_key(f"wait.{rank}")
    assert shown is not None and shown.value == done.seconds
    assert f"waited {done.seconds:.2f} s" in shown.text, shown.text
