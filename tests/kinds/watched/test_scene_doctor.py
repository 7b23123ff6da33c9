"""The doctor's lines at the top of the watched page: each finding's lines in order, a ✗ line
bold in the bad colour, at most six lines with the count of the rest ("… 2 more line(s) in the
report"), the hint under the diagnosis counted as a line, each finding a link to its step, and
the straggler verdict shown only when it is a ✗. The findings are given here (the doctor's own
rules are tested beside it); the page is a real 3-rank recording's."""

from __future__ import annotations

import pytest

from ddp_viz.kinds.watched import scene as watched_scene
from ddp_viz.kinds.watched.jumps import Jump
from ddp_viz.model.assets import asset
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.lesson import load_lesson_folder
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording

UNEVEN = "watched-uneven-3-ranks.jsonl"
THEME = load_theme("light")
MORE = "line(s) in the report (ddp-viz watch --no-window)"


def frame(monkeypatch, found, leads=None, verdict=None, w=1280, h=800):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(watched_scene, "findings", lambda rec, stacks: [*found])
    monkeypatch.setattr(watched_scene, "jumps", lambda rec: leads or {})
    monkeypatch.setattr(watched_scene, "straggler_text", lambda rec: verdict)
    rec = record(load_recording(UNEVEN))
    lesson = load_lesson_folder(asset("watched"))
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    return stage_frame(rec, Cursor(3, 3), 1.0, ctx, lesson.scene)


def top_lines(f) -> list:  # type: ignore[no-untyped-def]
    """The texts above the ranks' table, below the title."""
    table = next(t for t in f.texts if t.text == "rank" and t.color == THEME.muted)
    below = f.texts[0].box.bottom - 0.5  # the title's line: its words on the left and right
    return [t for t in f.texts if below <= t.box.y < table.box.y]


def test_each_findings_lines_in_order_a_cross_bold_and_bad(monkeypatch) -> None:
    found = [("crash", ["✗ crash: rank 2 raised", "  then rank 0 failed"]),
             ("lost", ["✗ rank 1 lost", "rank 1 was in step 4"])]  # fmt: skip
    f = frame(monkeypatch, found)
    lines = [t for t in top_lines(f) if t.color != THEME.muted or t.key]
    assert [t.text for t in lines] == [
        "✗ crash: rank 2 raised", "then rank 0 failed", "✗ rank 1 lost", "rank 1 was in step 4"
    ]  # fmt: skip
    assert [(t.color, t.font.bold) for t in lines] == [
        (THEME.bad, True), (THEME.text, False), (THEME.bad, True), (THEME.text, False)
    ]  # fmt: skip
    assert [t.key for t in lines] == ["doctor.crash", "", "doctor.lost", ""]
    assert MORE not in f.all_text()


def test_six_lines_at_most_and_the_rest_counted(monkeypatch) -> None:
    found = [("crash", ["✗ a", "b", "c"]), ("lost", ["✗ d", "e", "f", "g"])]  # 7 lines
    f = frame(monkeypatch, found)
    said = [t.text for t in top_lines(f)]
    assert said[:5] == ["✗ a", "b", "c", "✗ d", "e"]
    more = f.text_with_key("doctor.more")
    assert more.text == f"… 2 more {MORE}" and more.color == THEME.muted
    assert "f" not in said and "g" not in said
    # six lines fit whole: no count
    f = frame(monkeypatch, [("crash", ["✗ a", "b", "c"]), ("lost", ["✗ d", "e", "f"])])
    assert [t.text for t in top_lines(f)] == ["✗ a", "b", "c", "✗ d", "e", "f"]
    assert f.text_with_key("doctor.more") is None


def test_the_hint_under_the_diagnosis_counts_as_a_line(monkeypatch) -> None:
    found = [("crash", ["✗ a", "b", "c"]), ("lost", ["✗ d", "e", "f"])]  # 6 lines and the hint
    lead = Jump("crash", ["✗ a"], step=4, rank=2, stack=["t.py:1 in main: boom()"])
    f = frame(monkeypatch, found, {"crash": lead})
    hint = f.text_with_key("doctor.hint")
    assert hint.text == "↑ click it (or Tab, then Enter): step 5 and rank 2's stack"
    said = [t.text for t in top_lines(f)]
    assert said.index(hint.text) == 3  # right under the diagnosis's lines
    assert f.text_with_key("doctor.more").text == f"… 2 more {MORE}"
    # the diagnosis is a link to its step, over its lines
    (link,) = [lk for lk in f.links if lk.key == "doctor.crash"]
    first, last = f.text_with_key("doctor.crash").box, next(t for t in f.texts if t.text == "c")
    assert link.box.y == first.y and last.box.bottom <= link.box.bottom == pytest.approx(hint.box.y)
    assert link.label == "Go to step 5 and rank 2's stack"
    # a finding that is not first gets its link but no hint
    f = frame(monkeypatch, found, {"lost": Jump("lost", ["✗ d"], step=1, rank=1)})
    assert f.text_with_key("doctor.hint") is None
    assert [lk.label for lk in f.links if lk.key == "doctor.lost"] == ["Go to step 2, rank 1"]
    assert f.text_with_key("doctor.more") is None


def test_the_straggler_verdict_is_shown_only_when_it_is_a_cross(monkeypatch) -> None:
    f = frame(monkeypatch, [], verdict="✗ straggler: rank 2 was last in 5 of 6 steps")
    line = f.text_with_key("doctor.straggler_verdict")
    assert line.text == "✗ straggler: rank 2 was last in 5 of 6 steps" and line.color == THEME.bad
    f = frame(monkeypatch, [], verdict="✓ no straggler: the last rank changes")
    assert f.text_with_key("doctor.straggler_verdict") is None
    assert "no straggler" not in f.all_text()
