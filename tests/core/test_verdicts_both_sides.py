"""Every verdict on both sides (pure: recorded events, no Qt, no torch): a recording where it
must say ✓ next to a copy with one value changed where it must say ✗, the change chosen between
the real tolerance and a loose one, so a loosened comparison, an ``any`` for an ``all`` or a
value compared with itself shows. Expected figures come from the raw events."""

from __future__ import annotations

import dataclasses
import re
from statistics import median

import pytest

from ddp_viz.kinds.collective.report import collective_report
from ddp_viz.kinds.not_averaged.report import buffer_line, checkpoint_lines, cost_line
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.session import status_text
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording


def changed(events, pick, **values):
    """A copy of ``events`` with the first event ``pick`` accepts changed to ``values``."""
    out, done = [], False
    for e in events:
        if not done and pick(e):
            e, done = dataclasses.replace(e, **values), True
        out.append(e)
    assert done, "no event to change"
    return out


def ctx(lesson: str) -> SceneContext:
    return SceneContext(
        1280, 720, load_theme("light"), load_lesson(lesson).phase_text, estimate_width
    )


# the all-reduce lesson: naive and ring equal dist.all_reduce on *every* rank


@pytest.mark.parametrize("name", ["ring-2-ranks.jsonl", "ring-4-ranks.jsonl"])
@pytest.mark.parametrize(("algo", "rank"), [("naive", 1), ("ring", 0)])
def test_one_rank_whose_hand_made_sum_differs_turns_every_verdict_to_a_cross(
    name, algo, rank
) -> None:
    events = load_recording(name)
    honest = record(events)
    assert all(r.equal for r in honest.parts["collective"].results.values())  # the ✓ side
    wrong = record(
        changed(
            events,
            lambda e: e.kind == "collective_result" and e.algo == algo and e.rank == rank,
            equal=False,
        )
    )
    for rec, ok in ((honest, True), (wrong, False)):
        mark = "✓" if ok else "✗"
        report = collective_report(rec).splitlines()
        assert report[-1].split(": ", 1)[1].startswith(mark), report[-1]
        assert f". {mark} " in status_text(rec)
        row = next(x for x in report if re.match(rf"\s*{rank}\s+{algo}\s", x))
        assert row.endswith(mark), row
        last = rec.complete_prefix() - 1
        for phase in (2,):
            f = stage_frame(rec, Cursor(last, phase), 1.0, ctx("all-reduce"), "ring")
            verdict = f.text_with_key("verdict")
            assert verdict is not None and verdict.text.startswith(mark), (phase, verdict)


# Join: the ranks' parameters equal one float64 process within 1e-6


@pytest.mark.parametrize(("offset", "ok"), [(0.0, True), (2e-5, False), (-3e-3, False)])
def test_join_equals_one_process_only_within_its_tolerance(offset, ok) -> None:
    events = load_recording("uneven-join.jsonl")
    solo = next(e for e in events if e.kind == "final_params" and e.one_process).one_process
    moved = {n: [v + offset for v in vals] for n, vals in solo.items()}
    rec = record(
        changed(events, lambda e: e.kind == "final_params" and e.one_process, one_process=moved)
    )
    final = next(e for e in events if e.kind == "final_params" and e.rank == 0).params
    want = max(abs(a - b) for n in final for a, b in zip(final[n], moved[n], strict=True))
    last = rec.complete_prefix() - 1
    f = stage_frame(rec, Cursor(last, 3), 1.0, ctx("uneven-inputs"), "uneven")
    line = f.text_with_key("one_process")
    assert line is not None and line.value == pytest.approx(want, abs=1e-12)
    text = " ".join(f.all_text().split())
    assert ("✓ equal" in text) is ok and ("✗ differs" in text) is not ok, text


# what DDP does not average: buffers bit for bit, the checkpoint file, the flag's cost


@pytest.mark.parametrize("delta", [1e-9, 4e-4])
def test_buffers_agree_bit_for_bit_not_within_a_tolerance(delta) -> None:
    events = load_recording("not-averaged.jsonl")
    rec = record(events)
    assert buffer_line(rec, 1, "before").endswith("✓ buffers identical on every rank")
    pick = next(e for e in events if e.kind == "buffers" and e.step == 1 and e.rank == 1)
    name = next(iter(pick.before))
    before = {**pick.before, name: [pick.before[name][0] + delta, *pick.before[name][1:]]}
    wrong = record(changed(events, lambda e: e is pick, before=before))
    line = buffer_line(wrong, 1, "before")
    assert "✗" in line and name in line, line
    assert wrong.parts["not_averaged"].agreement(1, 2, "before").max_diff == pytest.approx(
        delta, rel=1e-3
    )


def test_the_checkpoint_line_compares_each_loaded_file_with_the_saved_one() -> None:
    events = load_recording("not-averaged.jsonl")
    lines = checkpoint_lines(record(events))
    assert [("✓ the same file" in x) for x in lines[1:]] == [True, True]
    other = "0" * 64
    wrong = changed(
        events,
        lambda e: e.kind == "checkpoint" and e.rank == 1 and e.action == "loaded",
        sha256=other,
    )
    lines = checkpoint_lines(record(wrong))
    assert "✓ the same file" in lines[1] and "✗ a different file" in lines[2], lines
    params = changed(
        events, lambda e: e.kind == "checkpoint" and e.action == "loaded", same_params=False
    )
    lines = checkpoint_lines(record(params))
    assert "✗ parameters differ" in lines[1] and "parameters equal its own" in lines[2], lines


@pytest.mark.parametrize(("with_ms", "without_ms"), [(3.0, 2.0), (2.0, 3.0), (5.0, 4.0)])
def test_the_find_unused_cost_is_with_the_flag_over_without(with_ms, without_ms) -> None:
    events = load_recording("not-averaged-find-unused.jsonl")
    costs = [e for e in events if e.kind == "unused_cost"]
    # the recorded figures, from the raw samples
    w = median(t for c in costs for t in c.with_flag) * 1e3
    wo = median(t for c in costs for t in c.without_flag) * 1e3
    line = cost_line(record(events))
    assert f"{w:.2f} ms per step, False: {wo:.2f} ms ({(w / wo - 1) * 100:+.0f}%)" in line
    # and figures whose change is known by heart: +50%, -33%, +25%
    out = [
        dataclasses.replace(e, with_flag=[with_ms / 1e3], without_flag=[without_ms / 1e3])
        if e.kind == "unused_cost"
        else e
        for e in events
    ]
    want = {(3.0, 2.0): "+50%", (2.0, 3.0): "-33%", (5.0, 4.0): "+25%"}[(with_ms, without_ms)]
    assert f"({want})" in cost_line(record(out))
