"""Opening a recorded run in the window: a file of ours (``ddp-viz run --events``, File ▸
Export ▸ events) or a watched run (``ddp-viz watch --record``). The run is shown on the stage
of the lesson it belongs to; a watched run gets its own page (``assets/watched``)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from ddp_viz._qt.lesson_switch import show_lesson
from ddp_viz.model import protocol
from ddp_viz.model.assets import asset
from ddp_viz.model.course import lesson_for
from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.fieldcheck import ProtocolError
from ddp_viz.model.lesson import Lesson, load_lesson_folder
from ddp_viz.model.scenario import Scenario


class RecordingError(ValueError):
    """A file that is not a recorded run."""


def read_recording(path: str | Path) -> tuple[list[protocol.Event], int]:
    """The events of a recording and how many lines were not valid events (skipped)."""
    events, bad = [], 0
    try:
        with open(path, "rb") as f:
            for line in f:
                if not line.strip():
                    continue
                try:
                    events.append(protocol.decode(line))
                except ProtocolError:
                    bad += 1
    except OSError as exc:
        raise RecordingError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not any(isinstance(e, protocol.RunStarted) for e in events):
        raise RecordingError(f"{Path(path).name} holds no run (no run_started event)")
    return events, bad


def lesson_of(window: Any, events: list[protocol.Event]) -> Lesson:
    start = next(e for e in events if isinstance(e, protocol.RunStarted))
    if start.scenario.get("watched"):
        return load_lesson_folder(asset("watched"))
    return window.course.get(lesson_for(start.scenario))


def open_recording(window: Any, path: str | Path) -> str:
    """Show the run recorded in ``path``; the status line it leaves (RecordingError if the
    file is not a recording, before anything on screen changes)."""
    events, bad = read_recording(path)
    lesson = lesson_of(window, events)
    if window.session.busy:
        raise RecordingError("finish or cancel the run before opening another")
    show_lesson(window, lesson)
    window.session.replay(events)
    rec = window.session.record
    # Try it yourself holds the recorded run's settings, so Run runs it again; a watched
    # run's (or another version's) are not a scenario of ours: the lesson's own stay
    with contextlib.suppress(ScenarioError):
        window.form.set_scenario(Scenario.from_mapping(rec.scenario))
    done = len(rec.complete_steps())
    skipped = f"; {bad} line(s) that are not events were skipped" if bad else ""
    text = f"Opened {Path(path).name}: {rec.world_size} rank(s), {done} complete step(s){skipped}."
    window.status.setText(text)
    return text
