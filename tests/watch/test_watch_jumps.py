"""Where a click on the watched page's diagnosis leads (pure: recorded runs and fake events, no
Qt, no torch): the step each finding names, the rank it names and that rank's stack, ddp-viz's
frames left out; an uneven end's lesson; and the page's links, none on a clean run."""

from __future__ import annotations

from pathlib import Path

from ddp_viz.kinds.watched.events import WatchDigests, WatchNonFinite
from ddp_viz.kinds.watched.jumps import jump_text, jumps, link_hint, shown_step
from ddp_viz.kinds.watched.scene import build
from ddp_viz.model import protocol
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, RunRecord
from tests.conftest import load_recording

FAULTS = Path(__file__).parent.parent / "data" / "watched" / "faults"
RAISES = "watched-raises-3-ranks.jsonl"  # rank 2 of 3 raises in its step 5 (tests/data/README)
UNEVEN = "watched-uneven-3-ranks.jsonl"  # rank 0 of 3 runs 6 steps, the others 7


def record(name: str, upto: str = "") -> RunRecord:
    """The recorded run, or its events before the first of kind ``upto`` (mid-stream)."""
    rec = RunRecord()
    for e in load_recording(name):
        if e.kind == upto:
            break
        rec.apply(e)
    return rec


def line_no(script: str, starts: str) -> int:
    lines = (FAULTS / script).read_text().splitlines()
    found = [i for i, t in enumerate(lines, 1) if t.strip().startswith(starts)]
    assert len(found) == 1
    return found[0]


def frame(rec: RunRecord, size: tuple[int, int] = (940, 700)):
    ctx = SceneContext(size[0], size[1], load_theme("light"), {}, estimate_width)
    return build(rec, Cursor(max(0, rec.complete_prefix() - 1), 3), 1.0, ctx)


def test_a_crash_leads_to_the_failing_ranks_step_and_its_own_frames() -> None:
    rec = record(RAISES)
    j = jumps(rec)["crash"]
    assert (j.rank, j.step, j.lesson) == (2, 4, "")  # its step 5, loop index 4
    raised = line_no("raises.py", 'raise RuntimeError(f"bad batch')
    called = line_no("raises.py", "check_batch(x, step, rank)")
    assert j.stack[-1].startswith(f"raises.py:{raised} in check_batch: raise RuntimeError")
    assert j.stack[-2].startswith(f"raises.py:{called} in main")
    assert not any("ddp_viz" in f or "capture.py" in f for f in j.stack)
    # step 5 never completed: the stage can show step 4, the last every rank reported
    assert rec.complete_prefix() == 4 and shown_step(j, rec.complete_prefix()) == 3
    said = jump_text(j, rec.complete_prefix())
    assert said[0] == (
        "Step 5, rank 2: the stage shows step 4, the last every rank reported (step 5 never "
        "completed)"
    )
    head = said.index("rank 2's stack, innermost last (ddp-viz's frames left out):")
    assert [line.strip() for line in said[head + 1 : head + 1 + len(j.stack)]] == j.stack
    assert said[said.index("The diagnosis:") + 1].strip().startswith("✗ crash: rank 2 raised")
    assert link_hint(j) == "step 5 and rank 2's stack"


def test_mid_stream_the_first_failure_leads_there_before_the_others_report() -> None:
    # only rank 2's own word has come: no consequence yet, the same place already
    events = load_recording(RAISES)
    first = next(i for i, e in enumerate(events) if e.kind == "watch_failure")
    rec = RunRecord()
    for e in events[: first + 1]:
        rec.apply(e)
    j = jumps(rec)["crash"]
    assert (j.rank, j.step) == (2, 4) and len(j.said) == 1
    assert rec.complete_prefix() == 4
    # before any failure: nothing to go to
    assert jumps(record(RAISES, upto="watch_failure")) == {}


def test_an_uneven_end_leads_to_the_late_rank_and_offers_its_lesson() -> None:
    rec = record(UNEVEN)
    found = jumps(rec)
    j = found["uneven"]
    assert j.lesson == "uneven-inputs" and j.step == 6  # step 7, which rank 0 never began
    assert j.rank in (1, 2) and j.rank != 0
    train = line_no("uneven.py", "F.mse_loss(model(x), y).backward()")
    assert j.stack[-1] == f"uneven.py:{train} in main: F.mse_loss(model(x), y).backward()"
    # the consequences (the others' lost connections) lead, with no lesson of their own
    assert found["crash"].lesson == ""
    assert list(found) == ["uneven", "crash"]  # the diagnosis first


def test_a_hang_leads_to_the_rank_the_others_wait_for_and_its_stack() -> None:
    rec = record("watched-hang.jsonl")
    j = jumps(rec)["hang0"]
    hang = next(e for e in load_recording("watched-hang.jsonl") if e.kind == "watch_hang")
    others = {s["rank"]: s for s in hang.ranks}
    # rank 0 waits in a barrier; rank 1 is in an all_reduce, never in the barrier
    assert others[0]["inside"]["op"] == "barrier" and others[1]["inside"]["op"] == "all_reduce"
    assert j.rank == 1 and j.step == others[1]["step"] - 1
    assert j.stack == others[1]["stack"] and j.stack  # as the hang found it


def _values_run(*extra: protocol.Event) -> RunRecord:
    rec = RunRecord()
    rec.apply(protocol.RunStarted(1, 3, 0, {"watched": True}, params=[]))
    for e in extra:
        rec.apply(e)
    return rec


def test_a_nan_and_a_desync_lead_to_their_first_step_and_rank_with_no_stack() -> None:
    rec = _values_run(
        WatchNonFinite(1, 9, 2, float("nan"), ["0.weight"]),
        WatchNonFinite(1, 7, 2, None, ["0.bias"]),  # the first: step 8, rank 2
        WatchNonFinite(1, 9, 0, float("inf"), []),
    )
    j = jumps(rec)["non_finite"]
    assert (j.step, j.rank, j.stack) == (7, 2, [])
    said = jump_text(j, 20)
    assert said[said.index("rank 2's stack, innermost last (ddp-viz's frames left out):") + 1] == (
        "  none: a value, not an exception"
    )
    digests = [WatchDigests(1, 5, r, {"w": "a", "b": "b" if r < 2 else "c"}) for r in range(3)]
    j = jumps(_values_run(*digests))["desync"]
    assert (j.step, j.rank) == (5, 2)


def test_the_page_makes_each_finding_a_link_and_the_lesson_one_of_its_own() -> None:
    f = frame(record(RAISES))
    keys = [k.key for k in f.links]
    assert keys == ["doctor.crash"]  # the lesson is an uneven end's only
    crash = f.text_with_key("doctor.crash")
    link = f.links[0]
    assert link.box.contains(crash.box) and link.lesson == ""
    assert f.link_at(crash.box.cx, crash.box.cy) is link
    assert "step 5 and rank 2's stack" in f.text_with_key("doctor.hint").text
    # the ranks' table under the findings is no link
    row = f.text_with_key("rank0.step_time")
    assert f.link_at(row.box.cx, row.box.cy) is None
    assert not list(f.overlapping_texts())

    f = frame(record(UNEVEN))
    assert [k.key for k in f.links] == ["doctor.uneven", "lesson", "doctor.crash"]
    lesson = f.links[1]
    assert lesson.lesson == "uneven-inputs" and lesson.box == f.text_with_key("doctor.lesson").box
    assert not lesson.box.overlaps(f.links[0].box) and not lesson.box.overlaps(f.links[2].box)
    assert not list(f.overlapping_texts())
    narrow = frame(record(UNEVEN), (420, 700))  # the lesson's words under the hint
    assert narrow.text_with_key("doctor.lesson").box.right <= 420
    assert not list(narrow.overlapping_texts())


def test_a_clean_run_has_no_link_and_no_hint() -> None:
    f = frame(record("watched-2-ranks.jsonl"))
    assert f.links == [] and f.text_with_key("doctor.hint") is None


def test_a_killed_rank_leads_to_its_step_and_says_it_left_no_stack() -> None:
    from ddp_viz.kinds.watched.events import WatchExit, WatchRankLost, WatchSummary

    # rank 2 (the last) killed by SIGKILL in step 4: the others waited for it in step 4's
    # all-reduce (step 3 from 0)
    bucket = {"seq": 9, "op": "all_reduce", "site": "t.py:40 in main", "bucket": 0, "step": 3}
    rec = _values_run(
        WatchRankLost(1, 2, 102, 3),
        WatchRankLost(1, 0, 100, 4, bucket),  # type: ignore[arg-type]
        WatchRankLost(1, 1, 101, 4, bucket),  # type: ignore[arg-type]
        WatchExit(1, 0, 100, -15, "SIGTERM", 2.0),
        WatchExit(1, 2, 102, -9, "SIGKILL", 1.0),
        WatchExit(1, 1, 101, -15, "SIGTERM", 2.0),
        WatchSummary(1, 1),
    )
    j = jumps(rec)["crash"]
    assert (j.rank, j.step, j.stack) == (2, 3, [])
    assert link_hint(j) == "step 4, rank 2"  # no "stack" promised where there is none
    said = jump_text(j, 3)
    assert said[said.index("rank 2's stack, innermost last (ddp-viz's frames left out):") + 1] == (
        "  none: rank 2 left no word of its own (killed): no stack"
    )
