"""What the uneven-inputs stage says at the end of a run, against the raw events: each rank's
loss in its own lane under its step, who had no batch and who was stuck, how each wait ended
(a tool's answer in thousandths, a timeout's in tenths), the final weights' ✓ and its ✗ on a
copy with one rank's weights moved (pure: recordings, no Qt, no torch)."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import StageFrame, estimate_width, fmt
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording

THEME = load_theme("light")
MONITORED = "uneven-monitored-3-ranks.jsonl"
DETAIL, JOIN, STALL = "uneven-detail.jsonl", "uneven-join.jsonl", "uneven-stall.jsonl"


def frame(events, w: int = 1800, h: int = 1000) -> StageFrame:
    rec = record(events)
    lesson = load_lesson("uneven-inputs")
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    return stage_frame(rec, Cursor(rec.steps_total() - 1, 3), 1.0, ctx, "uneven")


def key(f: StageFrame, k: str):
    t = f.text_with_key(k)
    assert t is not None, (k, f.all_text())
    return t


def with_table(events, **change) -> list:
    out = []
    for e in events:
        if e.kind == "run_started":
            table = {**e.scenario["uneven"], **change}
            e = dataclasses.replace(e, scenario={**e.scenario, "uneven": table})
        out.append(e)
    return out


def test_each_ranks_lane_its_losses_under_their_steps_then_no_batch_or_stuck() -> None:
    events = load_recording(MONITORED)
    losses = {(e.step, e.rank): e.loss for e in events if e.kind == "local_grad"}
    ran_out = {e.rank: e.steps for e in events if e.kind == "out_of_data"}
    assert ran_out == {0: 3, 1: 3}  # rank 2, the last, has the extra batch
    f = frame(events)
    heads = {s: next(t for t in f.texts if t.text == f"step {s + 1}") for s in range(4)}
    for r in range(3):
        label = next(t for t in f.texts if t.text == f"rank {r}")
        assert label.color == THEME.ranks[r]
        for s in range(4):
            box = next(x for x in f.shapes if x.key == f"rank{r}.step{s}")
            assert abs(box.box.cx - heads[s].box.cx) < 1, (r, s)  # under its step
            assert box.box.y <= label.box.cy <= box.box.bottom, (r, s)  # on its rank's lane
            inside = [t for t in f.texts if box.box.contains(t.box, 1) and t.text]
            if (s, r) in losses:
                loss = key(f, f"rank{r}.step{s}.loss")
                assert loss.value == losses[(s, r)] and loss.text == f"loss {fmt(losses[(s, r)])}"
                assert box.fill == THEME.ranks[r] and not box.stroke
                assert [t.text for t in inside] == [loss.text, "trained"]
            elif r in ran_out:
                assert s >= ran_out[r]
                assert (box.stroke, box.width) == (THEME.muted, 1)
                assert [t.text for t in inside] == ["no batch"]
            else:
                assert (box.stroke, box.width) == (THEME.bad, 2)
                assert [(t.text, t.color) for t in inside] == [("stuck", THEME.bad)]


def test_how_each_wait_ended_and_what_found_it() -> None:
    events = load_recording(MONITORED)
    stalls = {e.rank: e for e in events if e.kind == "stalled"}
    f = frame(events)
    text = " ".join(f.all_text().split())
    assert "Step 4 of 4" in f.all_text() and "no Join · monitored_barrier · timeout 4 s" in text
    for r, stall in stalls.items():
        line = key(f, f"stalled.{r}")
        assert line.value == stall.waited_s and line.color == THEME.bad
        assert line.text.startswith(f"rank {r} waited {stall.waited_s:.1f} s in {stall.what}; ")
    assert (
        "rank 0 waited 2.0 s in monitored_barrier; monitored_barrier ended it, naming rank 2"
        in (text)
    )
    assert "rank 2 waited 2.0 s in all-reduce; its peer closed the connection after its own" in text
    found = key(f, "found")
    assert found.color == THEME.accent and found.font.bold
    assert found.text == (
        f"Found: monitored_barrier named rank 2 after {fmt(stalls[0].waited_s, 3)} s, where "
        "the timeout would have waited 4 s"
    )


def test_a_tools_answer_in_thousandths_of_a_second() -> None:
    events = load_recording(DETAIL)
    stalls = {e.rank: e for e in events if e.kind == "stalled"}
    assert all(s.waited_s < 1 for s in stalls.values())
    f = frame(events)
    text = " ".join(f.all_text().split())
    assert "no Join · DETAIL · timeout 4 s" in text
    for r, s in stalls.items():
        said = f"rank {r} waited {s.waited_s:.3f} s in {s.what}; DETAIL's check ended it, and "
        assert key(f, f"stalled.{r}").text.startswith(said + "the check said: Detected mismatch")
    found = key(f, "found")
    assert found.text.startswith("Found: DETAIL reported the mismatch after ")


def test_a_timeout_says_so_and_no_tool_claims_it() -> None:
    events = load_recording(STALL)
    f = frame(events)
    assert "no Join · timeout 4 s" in f.all_text()
    assert f.text_with_key("found") is None and f.text_with_key("hang_check") is None
    for e in (e for e in events if e.kind == "stalled"):
        said = (
            f"rank {e.rank} waited {e.waited_s:.1f} s in {e.what}; the timeout ended it, and gloo"
        )
        assert key(f, f"stalled.{e.rank}").text.startswith(said)


def test_joins_final_weights_the_same_on_every_rank_and_as_one_process() -> None:
    events = load_recording(JOIN)
    finals = {e.rank: e for e in events if e.kind == "final_params"}
    f = frame(events)
    assert "Join on · timeout 4 s" in f.all_text()
    final = key(f, "final")
    w, b = finals[0].params["weight"][0], finals[0].params["bias"][0]
    assert final.color == THEME.ok and final.font.bold
    assert final.text == (
        f"after the loop and the barrier: weight {fmt(w)} bias {fmt(b)} · ✓ the same on every "
        "rank (Join copied rank 1's, the last to finish)"
    )
    solo = finals[0].one_process
    diff = max(abs(w - solo["weight"][0]), abs(b - solo["bias"][0]))
    line = key(f, "one_process")
    assert line.value == pytest.approx(diff, rel=1e-9) and line.color == THEME.ok
    assert line.text.endswith(f"✓ equal (largest difference {fmt(diff, 2)})")


def test_a_rank_with_other_weights_and_a_process_that_differs_are_crosses() -> None:
    events = [
        dataclasses.replace(e, params={"weight": [1.5], "bias": [0.2958616614341736]})
        if e.kind == "final_params" and e.rank == 1
        else e
        for e in load_recording(JOIN)
    ]
    f = frame(events)
    final = key(f, "final")
    assert final.color == THEME.bad and "· ✗ the ranks differ (Join copied rank 1's" in final.text
    events = [
        dataclasses.replace(e, one_process={"weight": [1.76], "bias": [0.2958616614341736]})
        if e.kind == "final_params" and e.rank == 0
        else e
        for e in load_recording(JOIN)
    ]
    line = key(frame(events), "one_process")
    diff = abs(1.76 - 1.7575427293777466)
    assert line.color == THEME.bad and line.text.endswith(f"✗ differs by {fmt(diff, 2)}")
    assert line.value == pytest.approx(diff, rel=1e-6)


def test_join_names_the_rank_that_finished_last() -> None:
    events = [
        dataclasses.replace(e, steps={0: 4, 1: 3}[e.rank]) if e.kind == "out_of_data" else e
        for e in load_recording(JOIN)
    ]
    assert "(Join copied rank 0's, the last to finish)" in key(frame(events), "final").text
    events = with_table(load_recording(JOIN), join=False)
    final = key(frame(events), "final")
    assert final.text.endswith("✓ the same on every rank (the last step)")
    assert "no Join · timeout 4 s" in frame(events).all_text()


def test_a_rank_stalled_before_it_finished_any_step_is_stuck_at_step_1() -> None:
    kept = ("run_started", "rank_started", "stalled", "run_finished")
    events = [e for e in load_recording(STALL) if e.kind in kept]
    f = frame(events)
    for r in range(2):
        boxes = [s for s in f.shapes if s.key.startswith(f"rank{r}.step")]
        assert [(s.key, s.stroke) for s in boxes] == [(f"rank{r}.step0", THEME.bad)], r


def test_detail_says_on_how_many_ranks_its_check_ran() -> None:
    events = load_recording(DETAIL)
    checks = [e for e in events if e.kind == "hang_check"]
    assert len(checks) == 2
    f = frame(events)
    line = key(f, "hang_check")
    assert line.color == THEME.muted
    assert (
        " ".join(f.all_text().split()).count(
            "TORCH_DISTRIBUTED_DEBUG=DETAIL: the hook's all-reduces and the barrier ran on a "
            "_ProcessGroupWrapper on 2 of 2 ranks, each collective checked against the "
            "other ranks' first"
        )
        == 1
    )
    one = [e for e in events if e is not checks[-1]]
    said = " ".join(frame(one).all_text().split())
    assert "_ProcessGroupWrapper on 1 of 2 ranks" in said
