"""The restart stage's torchrun phases for attempts that went otherwise than the recording's:
a last attempt whose rendezvous failed (no lane filled, "rendezvous failed", "stopped at
start"), a failed attempt whose ranks left no words, a first attempt where no rank failed in a
collective; and the torchrun phases drawn once torchrun's outcome is in, whatever part one
still waits for (pure: the 4-rank recording with one thing moved, no Qt)."""

from __future__ import annotations

import dataclasses

from ddp_viz.model.frame import StageFrame, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.kinds.resuming.widened import widened
from tests.kinds.test_conformance import lesson_of

THEME = load_theme("light")
FOUR = "resuming-4-ranks.jsonl"


def frame(events, phase: int, w: int = 1800, h: int = 1000) -> StageFrame:
    lesson = lesson_of("resuming")
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    return stage_frame(record(events), Cursor(0, phase), 1.0, ctx, lesson.scene)


def key(f: StageFrame, k: str):
    t = f.text_with_key(k)
    assert t is not None, (k, f.all_text())
    return t


def test_a_last_attempt_that_never_met_fills_no_lane() -> None:
    events = []
    for e in load_recording(FOUR):
        if e.kind == "restart_attempt" and e.attempt == 1:
            end = "failed" if e.rank == 0 else "stopped"
            error = "Gloo connectFullMesh failed with [/x/pair.cc:152] Connection refused"
            e = dataclasses.replace(
                e,
                start_step=-1,
                last_step=-1,
                saved=[],
                end=end,
                error=error if e.rank == 0 else "",
            )
        events.append(e)
    f = frame(events, 3)
    first = key(f, "end.1.0")
    assert (first.text, first.color) == ("rendezvous failed", THEME.bad)
    for r in (1, 2, 3):
        t = key(f, f"end.1.{r}")
        assert (t.text, t.color) == ("stopped at start", THEME.muted), r
    bars = [s for s in f.shapes if s.kind == "rect" and s.fill and s.fill_alpha == 150]
    assert bars == []
    assert not [s for s in f.shapes if s.kind == "line"]  # no checkpoint saved in it


def test_a_failed_attempt_whose_ranks_said_nothing_ended_early() -> None:
    events = [
        dataclasses.replace(e, error="") if e.kind == "restart_attempt" and e.attempt == 1 else e
        for e in widened(3, failed_attempt=True)
    ]
    f = frame(events, 3)
    line = key(f, "attempt.1")
    assert (line.text, line.color) == ("attempt 1: ended early", THEME.bad)
    # the last attempt is 2: its lanes, its heading
    assert all(f.text_with_key(f"end.2.{r}") is not None for r in range(3))
    assert f.text_with_key("end.1.0") is None


def test_a_failed_attempts_words_from_gloo_without_its_source_file() -> None:
    error = "[../gloo/transport/tcp/pair.cc:152] Connection refused. Retry later."
    events = [
        dataclasses.replace(e, error=error)
        if e.kind == "restart_attempt" and e.attempt == 1 and e.rank == 0
        else e
        for e in widened(3, failed_attempt=True)
    ]
    assert key(frame(events, 3), "attempt.1").text == "attempt 1: Connection refused"


def test_a_first_attempt_where_every_other_rank_was_stopped() -> None:
    events = [
        dataclasses.replace(e, end="stopped", error="")
        if e.kind == "restart_attempt" and e.attempt == 0 and e.end == "failed"
        else e
        for e in load_recording(FOUR)
    ]
    o = next(e for e in events if e.kind == "restart_outcome")
    f = frame(events, 2)
    assert key(f, "others").text == f"torchrun sent SIGTERM {o.sigterms}×; 3 stopped before a word"
    for r in range(3):
        t = key(f, f"end.0.{r}")
        assert (t.text, t.color) == ("stopped after 5", THEME.muted)
    # and one where none was: every survivor failed in a collective
    failed = [
        dataclasses.replace(e, end="failed", error="Connection reset by peer. More words.")
        if e.kind == "restart_attempt" and e.attempt == 0 and e.end == "stopped"
        else e
        for e in load_recording(FOUR)
    ]
    said = key(frame(failed, 2), "others").text
    assert said.endswith(
        "3 failed in a collective (Read error [127.0.0.1]:38785: Connection reset by peer)"
    )
    assert "stopped" not in said


def test_the_torchrun_phases_need_only_torchruns_outcome() -> None:
    events = [e for e in load_recording(FOUR) if not (e.kind == "reshard_compared" and e.rank == 3)]
    assert "Waiting for the ranks…" in frame(events, 1).all_text()
    for phase, attempt in ((2, 0), (3, 1)):
        f = frame(events, phase)
        assert "Waiting for the ranks…" not in f.all_text()
        assert all(f.text_with_key(f"end.{attempt}.{r}") is not None for r in range(4))


def test_gloos_connect_failure_in_a_few_words() -> None:
    from ddp_viz.kinds.resuming.scene_lanes import gist, short_error

    error = (
        "[../c10d/ProcessGroupGloo.cpp:42] Gloo connectFullMesh failed with "
        "[../gloo/transport/tcp/pair.cc:152] Connection refused: 127.0.0.1:29500"
    )
    assert gist(error) == "connectFullMesh … Connection refused"
    assert gist("Gloo connectFullMesh failed") == "connectFullMesh …"
    assert gist("[../gloo/pair.cc:1] Read error. More words") == "Read error"
    assert short_error("[../gloo/pair.cc:1] Read error. More. Words") == "Read error"
    assert short_error("no source here. then more") == "no source here"


def test_an_outcome_without_its_attempts_names_attempt_0() -> None:
    events = [e for e in load_recording(FOUR) if e.kind != "restart_attempt"]
    f = frame(events, 3)
    assert "attempt 0 (TORCHELASTIC_RESTART_COUNT=0): every rank resumed from step 3" in (
        f.all_text()
    )
