"""Finding a hang (``[uneven] debug``): DETAIL's check reports the mismatched collectives
within a fraction of a second, ``monitored_barrier`` names the rank that did not arrive, and the
stage, the report and the prediction show the run's own figures.

The pure tests read recordings of real runs (tests/data/README.md) and compute what they
expect from the raw events; the gloo tests run the ranks."""

from __future__ import annotations

import re

import pytest

from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width, fmt
from ddp_viz.model.quiz import prediction_is_right
from ddp_viz.model.report import run_report
from ddp_viz.model.scenario import Scenario, ScenarioError
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.frames import STAGE_SIZES, assert_fits

DETAIL, MONITORED, STALL = (
    "uneven-detail.jsonl",
    "uneven-monitored-barrier.jsonl",
    "uneven-stall.jsonl",
)


def stalls(events) -> list:
    return [e for e in events if e.kind == "stalled"]


def frame(events, w=1280, h=720, theme="light"):
    rec = record(events)
    ctx = SceneContext(
        w, h, load_theme(theme), load_lesson("uneven-inputs").phase_text, estimate_width
    )
    return rec, stage_frame(rec, Cursor(rec.steps_total() - 1, 3), 1.0, ctx, "uneven")


def test_debug_is_checked_before_anything_runs() -> None:
    base = {"x": [1.0, 2.0, 3.0, 4.0], "y": [3.0, 5.0, 7.0, 9.0], "world_size": 2}
    for table, field in [
        ({"debug": "loud"}, "uneven.debug"),
        ({"debug": "monitored_barrier", "timeout_s": 2.0}, "uneven.timeout_s"),
    ]:
        with pytest.raises(ScenarioError) as err:
            Scenario.from_mapping({**base, "uneven": table})
        assert err.value.field == field
    assert Scenario.from_mapping({**base, "uneven": {}}).table("uneven").debug == "none"


def test_detail_found_the_mismatch_in_the_time_the_ranks_measured() -> None:
    events = load_recording(DETAIL)
    raw = stalls(events)
    # the raw events: both ranks ended by the mismatch check, well before the 4 s timeout
    assert len(raw) == 2 and all("Detected mismatch between collectives" in s.error for s in raw)
    first = min(raw, key=lambda s: s.waited_s)
    assert first.waited_s < 0.5
    checks = [e for e in events if e.kind == "hang_check"]
    assert {(c.level, c.backend) for c in checks} == {("DETAIL", "_ProcessGroupWrapper")}
    rec, f = frame(events)
    found = f.text_with_key("found")
    assert found is not None and found.value == first.waited_s
    text = " ".join(f.all_text().split())
    assert f"DETAIL reported the mismatch after {fmt(first.waited_s, 3)} s" in text
    assert "the timeout would have waited 4 s" in text
    assert "_ProcessGroupWrapper" in text and "TORCH_DISTRIBUTED_DEBUG=DETAIL" in text
    report = run_report(rec)
    assert report.rstrip().endswith(
        f"TORCH_DISTRIBUTED_DEBUG=DETAIL reported the mismatch after {first.waited_s:.3f} s "
        "(the process group's timeout: 4 s)"
    )
    assert "then DETAIL's check raised: Detected mismatch" in report


def test_monitored_barrier_named_the_rank_that_did_not_arrive() -> None:
    events = load_recording(MONITORED)
    raw = {s.rank: s for s in stalls(events)}
    named = re.findall(r"Rank (\d+) failed to pass monitoredBarrier", raw[0].error)
    assert raw[0].what == "monitored_barrier" and named == ["1"]
    rec, f = frame(events)
    found = f.text_with_key("found")
    assert found is not None and found.value == raw[0].waited_s
    text = " ".join(f.all_text().split())
    assert f"monitored_barrier named rank 1 after {fmt(raw[0].waited_s, 3)} s" in text
    assert (
        run_report(rec)
        .rstrip()
        .endswith(
            f"monitored_barrier named rank 1 after {raw[0].waited_s:.3f} s "
            "(the process group's timeout: 4 s)"
        )
    )
    # the lesson's prediction reads the same rank from the run
    q = next(q for q in load_lesson("uneven-inputs").questions if q.id == "predict-missing-rank")
    assert q.quantity is not None and q.quantity.read(rec) == float(named[0])
    assert prediction_is_right(q, 1.0, q.quantity.read(rec))
    assert not prediction_is_right(q, 0.0, q.quantity.read(rec))


def test_without_a_tool_nothing_claims_to_have_found_the_hang() -> None:
    rec, f = frame(load_recording(STALL))
    assert f.text_with_key("found") is None
    assert "the process group's timeout ended the wait" in run_report(rec)


@pytest.mark.parametrize("name", [DETAIL, MONITORED])
def test_the_found_lines_fit_every_stage_size(name) -> None:
    for w, h, theme in STAGE_SIZES:
        _, f = frame(load_recording(name), w, h, theme)
        assert_fits(f, theme)
        if w >= 1280:  # the line that says what found the hang is not cut off
            assert f.text_with_key("found") is not None


def scenario(debug: str, world: int = 2) -> Scenario:
    s = load_lesson("uneven-inputs").scenario().to_dict()
    s["uneven"] = {**s["uneven"], "debug": debug}
    return Scenario.from_mapping({**s, "world_size": world})


@pytest.mark.gloo
def test_detail_takes_effect_for_its_run_only_and_reports_at_once(engine) -> None:
    rec = record(engine.run(scenario("detail"), timeout=60))
    un = rec.parts["uneven"]
    assert {(c.level, c.backend) for c in un.hang_checks.values()} == {
        ("DETAIL", "_ProcessGroupWrapper")
    }
    assert set(un.stalled) == {0, 1}
    assert all("Detected mismatch between collectives" in s.error for s in un.stalled.values())
    assert max(s.waited_s for s in un.stalled.values()) < 1.0  # the timeout is 4 s
    # the same warm ranks, straight after: a plain group again
    again = record(engine.run(scenario("none"), timeout=60))
    plain = again.parts["uneven"].hang_checks.values()
    assert {(c.level, c.backend) for c in plain} == {("OFF", "ProcessGroupGloo")}


@pytest.mark.gloo
def test_monitored_barrier_names_the_last_rank(engine) -> None:
    rec = record(engine.run(scenario("monitored_barrier", world=3), timeout=60))
    stall = rec.parts["uneven"].stalled[0]
    assert stall.what == "monitored_barrier"
    assert "Rank 2 failed to pass monitoredBarrier in 2000 ms" in stall.error
    assert 2.0 <= stall.waited_s < 4.0
