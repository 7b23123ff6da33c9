"""The "rank 0 alone" phase in the cases the 4-rank recording does not meet by itself, each on
a copy of it with one thing moved: a run with hang = false says it skipped the wrapper, a peer
told "connection closed by peer" gets the note on closed connections (and a run whose errors
never say a connection closed gets none), a wrapper attempt that ended cleanly is no gloo error,
a rank with no heartbeat yet is "…" while others wait in their function (short names on a
narrow stage), and a rank that timed out before any heartbeat waited in what it was doing.
Expected from the raw events (pure: recordings, no Qt, no torch)."""

from __future__ import annotations

import dataclasses

import pytest

from ddp_viz.model.frame import StageFrame, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.kinds.test_conformance import lesson_of

THEME = load_theme("light")
FOUR = "evaluation-4-ranks.jsonl"
SKIPS = "This run skips rank 0 alone through DDP (hang = false)."
MODULE_HEAD = "rank 0: model.module(x) · others: dist.barrier()"
CLOSED = "(a closed connection: a peer's own timeout fired first and closed it)"


def frame(events, w: int = 1200, h: int = 700) -> StageFrame:
    lesson = lesson_of("evaluation")
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    return stage_frame(record(events), Cursor(0, 2), 1.0, ctx, lesson.scene)


def only(f: StageFrame, text: str):
    found = [t for t in f.texts if t.text == text]
    assert len(found) == 1, (text, f.all_text())
    return found[0]


def caption_bottom(f: StageFrame) -> float:
    """The bottom of the title and the caption: every text above the phase's body."""
    tops = [t for t in f.texts if t.text in {SKIPS, MODULE_HEAD}]
    return max(t.box.bottom for t in f.texts if t.box.y < min(x.box.y for x in tops))


def test_a_run_with_hang_false_says_it_skipped_the_wrapper_then_the_module_attempt() -> None:
    events = []
    for e in load_recording(FOUR):
        if e.kind == "run_started":
            table = {**e.scenario["evaluation"], "hang": False}
            e = dataclasses.replace(e, scenario={**e.scenario, "evaluation": table})
        if getattr(e, "attempt", "") == "wrapper":  # no attempt through the wrapper was made
            continue
        events.append(e)
    f = frame(events)
    skip = only(f, SKIPS)
    assert skip.color == THEME.muted and not skip.font.bold
    top = caption_bottom(f)
    assert top <= skip.box.y <= top + skip.font.px
    head = only(f, MODULE_HEAD)
    assert head.font.bold and head.color == THEME.text
    assert skip.box.bottom <= head.box.y <= skip.box.bottom + 2 * skip.font.px
    assert not [t for t in f.texts if t.key.startswith(("wait.", "error.", "stack."))]
    module = next(
        e for e in events if e.kind == "eval_outcome" and (e.attempt, e.rank) == ("module", 0)
    )
    accuracy = f.text_with_key("module.accuracy")
    assert accuracy.box.y >= head.box.bottom
    assert accuracy.text.startswith(f"completed: rank 0 took {module.seconds:.3f} s")


def with_error(events, rank: int, error: str):
    return [
        dataclasses.replace(e, error=error)
        if e.kind == "eval_outcome" and (e.attempt, e.rank) == ("wrapper", rank)
        else e
        for e in events
    ]


@pytest.mark.parametrize(
    ("error", "noted"),
    [
        ("Connection closed by peer [127.0.0.1]:29511", True),
        ("Application timeout caused pair closure", True),
        ("Timed out waiting 3000ms for send operation to complete", False),
    ],
)
def test_the_closed_connection_note_follows_what_the_peer_was_told(error, noted) -> None:
    events = with_error(load_recording(FOUR), 0, error)
    errors = {
        e.rank: e.error for e in events if e.kind == "eval_outcome" and e.attempt == "wrapper"
    }
    assert errors[0] == error
    closed = any(
        w in x.lower() for x in errors.values() for w in ("closed by peer", "pair closure")
    )
    assert closed is noted
    f = frame(events)
    assert [t.text for t in f.texts if t.text == CLOSED] == ([CLOSED] if noted else [])
    line = f.text_with_key("error.0")
    assert line.text.startswith("gloo, ranks 0") and error in f.all_text().replace("\n", " ")


def test_a_wrapper_attempt_that_ended_cleanly_is_no_gloo_error() -> None:
    events = with_error(load_recording(FOUR), 0, "")
    done = next(
        e for e in events if e.kind == "eval_outcome" and (e.attempt, e.rank) == ("wrapper", 0)
    )
    f = frame(events)
    assert f.text_with_key("wait.0").text == f"{done.what}: done in {done.seconds:.3f} s"
    assert f.text_with_key("error.0") is None
    assert not [t for t in f.texts if t.text.startswith("gloo, ranks 0")]
    assert f.text_with_key("error.1").text.startswith("gloo, ranks 1, 2: ")


def test_a_rank_that_timed_out_before_any_heartbeat_waited_in_what_it_was_doing() -> None:
    events = [e for e in load_recording(FOUR) if not (e.kind == "eval_wait" and e.rank == 3)]
    done = next(
        e for e in events if e.kind == "eval_outcome" and (e.attempt, e.rank) == ("wrapper", 3)
    )
    f = frame(events)
    expected = f"{done.what}: waited {done.seconds:.2f} s in {done.what}"
    assert f.text_with_key("wait.3").text == expected


def mid_wait():
    """Before any attempt ended, and before rank 3's first heartbeat."""
    events = load_recording(FOUR)
    end = next(i for i, e in enumerate(events) if e.kind == "eval_outcome")
    return [e for e in events[:end] if not (e.kind == "eval_wait" and e.rank == 3)]


def last_beats(events) -> dict:
    return {e.rank: e for e in events if e.kind == "eval_wait" and e.attempt == "wrapper"}


def test_mid_wait_each_rank_says_where_it_waits_and_for_how_long_and_a_silent_one_dots() -> None:
    events = mid_wait()
    beats = last_beats(events)
    assert sorted(beats) == [0, 1, 2]
    f = frame(events)
    for r, beat in beats.items():
        name = beat.where[0].split(" (")[0]
        text = f"waiting in {name} for {beat.now - beat.since:.2f} s"
        assert f.text_with_key(f"wait.{r}").text == text
    assert f.text_with_key("wait.3").text == "…"
    assert f.text_with_key("wait.3").value is None


def test_mid_wait_on_a_narrow_stage_the_functions_lose_their_class_then_their_end() -> None:
    events = mid_wait()
    beats = last_beats(events)
    f = frame(events, w=260)
    for r, beat in beats.items():
        name = beat.where[0].split(" (")[0]
        short = name.split(".")[-1]
        assert (short == name) is (r != 0)  # rank 0 waits in a method, the others in barrier
        text = f.text_with_key(f"wait.{r}").text
        assert text.endswith("…") and len(text) > 4
        full = f"waiting in {short} for {beat.now - beat.since:.2f} s"
        assert full.startswith(text[:-1]), (r, text)
        assert text.startswith(f"waiting in {short[:6]}")
    assert f.text_with_key("wait.3").text == "…"
